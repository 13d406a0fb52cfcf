"""An epoch's greedy-policy figures (`MemberPolicies.epoch_figures`' device vector) replayed as a CUDA graph.

At a real-data shape (21 folds of about 120,000 training rows) the figures are some 370 small kernels
whose launches took 4.3 ms an epoch on the H200, longer than the epoch's training (3.8 ms). They read the
fold's rows, the window's norm statistics and the members' weights, which the trainer refills in place,
so one capture serves a fold's every epoch: the first call of a key runs eagerly (its warm-up), the
second captures and replays, the rest replay. A new key (another fold, other members due, other
settings, the diagnostics due or not) starts again; the oldest graphs beyond `KEEP` are freed, and a
call for a new `fold` frees every graph of the fold before (its keys never recur). A fold of several
instruments is one computation too (member_policy lays every instrument's tail in it), so a fold needs
one key per diagnostics setting however many instruments it has. Off the GPU every call runs eagerly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable

import torch

log = logging.getLogger(__name__)

# Keys kept at once (of one fold): with and without the diagnostics, and others (members dropping out).
KEEP = 4


class ReplayedFigures:
    """One computation's output, captured once per key and replayed (CUDA), or computed each call."""

    def __init__(self, device: torch.device, *, enabled: bool = True):
        self.graphed = enabled and device.type == "cuda"
        self.graphs: dict[Hashable, tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}  # oldest first
        self.seen: dict[Hashable, None] = {}  # keys whose eager warm-up has run, oldest first
        self.fold: Hashable = None  # the fold of the kept keys
        self.captures = 0

    def run(
        self, key: Hashable, compute: Callable[[], torch.Tensor], *, fold: Hashable = None
    ) -> torch.Tensor:
        """`compute()`'s output for the state `key` names: replayed where captured for it, else computed
        (and captured at the key's second call). A replay's output is the graph's own tensor: read it
        before the next call. `fold` names the fold `key` belongs to: another than the last call's frees
        the graphs kept so far."""
        if not self.graphed:
            return compute()
        if fold != self.fold:
            self.graphs.clear()
            self.seen.clear()
            self.fold = fold
        if key in self.graphs:
            graph, output = self.graphs[key]
            graph.replay()
            return output
        if key not in self.seen:
            _keep(self.seen, key, None)
            return compute()
        try:
            graph, output = _capture(compute)
        except RuntimeError as error:  # an op that cannot be captured: this trainer computes eagerly from now
            log.warning("epoch figures: CUDA graph capture failed (%s); computing them eagerly", error)
            self.graphed = False
            self.graphs.clear()
            return compute()
        _keep(self.graphs, key, (graph, output))  # the oldest graph and its memory go past KEEP
        self.captures += 1
        return output


def _capture(compute: Callable[[], torch.Tensor]) -> tuple[torch.cuda.CUDAGraph, torch.Tensor]:
    """`compute` warmed up on a side stream (as the trainer's step and the MLP baselines are), captured, and
    replayed once; the capture checks this thread's calls only (telemetry threads keep running)."""
    current = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    side.wait_stream(current)
    with torch.cuda.stream(side):
        compute()
    current.wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, capture_error_mode="thread_local"):
        output = compute()
    graph.replay()
    return graph, output


def _keep(kept: dict, key: Hashable, value) -> None:
    """Add `key` to `kept`, dropping the oldest entries beyond KEEP."""
    kept[key] = value
    while len(kept) > KEEP:
        del kept[next(iter(kept))]
