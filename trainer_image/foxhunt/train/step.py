"""The step machinery: a plain training step, run eagerly, or compiled and captured as one CUDA graph.

The algorithm (dqn.py) defines its step in four plain parts: draw a batch, compute the loss,
clear the gradients, update after backward. This wrapper runs them the way the device wants,
like LeanRL and torchtitan wrap theirs: on CPU it calls them eagerly; on CUDA it compiles the
loss and the update (a small network at batch 8192 is bound by kernel count, not FLOPs:
compiling fuses gather, normalization and loss, and turns clip, Adam and the Polyak step into a
few well-spread kernels), warms up on a side stream, and captures `steps_per_graph` steps as one
CUDA graph, once. Everything the graph reads (weights, optimizer state, replay, norm stats, the
settings) lives in fixed device buffers that the algorithm refills in place, so folds and
trials replay the same graph.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from foxhunt.data.folds import FoldRange
from foxhunt.data.universe import UniverseIndex
from foxhunt.train.device_data import SpanPart

# Dynamo guards a compiled function on the trainer's modules and optimizer by identity, so each new
# trainer compiles its step again; past dynamo's default of 8 compiles per function (a test run, or
# trials over several shapes in one process) it would silently run the step uncompiled.
RECOMPILE_LIMIT = 256
WARM_VAL_ROWS = 4096  # validation rows of the warm-up range: the kernels, not the size, matter there


@dataclass(frozen=True)
class StepParts:
    """A training step split where autograd runs; `plain_step` is the step they define."""

    draw: Callable[[], torch.Tensor]  # fills and returns the batch's random draw
    loss: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]  # draw → (loss, statistics)
    zero_grad: Callable[[], None]
    update: Callable[[torch.Tensor, torch.Tensor], None]  # (detached loss, statistics), after backward


def plain_step(parts: StepParts) -> None:
    """One training step, eagerly: draw, loss, backward, update."""
    loss, stats = parts.loss(parts.draw())
    parts.zero_grad()
    loss.backward()
    parts.update(loss.detach(), stats)


class TrainStep:
    """Runs `steps_per_graph` plain steps per call: eagerly on CPU, as one captured CUDA graph on CUDA."""

    def __init__(
        self,
        parts: StepParts,
        *,
        device: torch.device,
        steps_per_graph: int = 1,
        compile: bool = True,
        capture: bool = True,
    ):
        self.device = device
        self.steps_per_graph = int(steps_per_graph)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.graph_captures = 0
        self.compiles = 0  # times this step's parts were wrapped by torch.compile
        cuda = device.type == "cuda"
        self.parts = parts
        if cuda and compile:
            self.parts = replace(parts, loss=torch.compile(parts.loss), update=torch.compile(parts.update))
            self.compiles += 1
        if cuda and capture:
            self.capture()

    def eager_steps(self) -> None:
        """`steps_per_graph` steps without a graph."""
        for _ in range(self.steps_per_graph):
            plain_step(self.parts)

    def capture(self, warmup_steps: int = 3) -> None:
        """Capture `steps_per_graph` steps as one CUDA graph (the steps run during warm-up change state)."""
        # Warm-up on a side stream creates the optimizer's state, the autograd buffers and the
        # compiled kernels before capture.
        current = torch.cuda.current_stream(self.device)
        side = torch.cuda.Stream(self.device)
        side.wait_stream(current)
        with torch.cuda.stream(side), torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT):
            for _ in range(warmup_steps):
                plain_step(self.parts)
        current.wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.eager_steps()
        self.graph_captures += 1

    def run(self) -> None:
        """`steps_per_graph` training steps: one graph replay, or the eager steps when there is no graph."""
        if self.graph is not None:
            self.graph.replay()
        elif self.compiles:
            with torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT):
                self.eager_steps()
        else:
            self.eager_steps()


def warm_up_range(rows: int, max_train_rows: int) -> FoldRange | None:
    """A fold over the data shaped like the run's largest (training rows first), or None when too small."""
    val_rows = min(WARM_VAL_ROWS, rows // 4)
    train_end = min(max_train_rows, rows - val_rows)
    if val_rows < 2 or train_end < 2:
        return None
    return FoldRange(-1, 0, train_end, train_end, train_end + val_rows, 0.0)


def warm_up_parts(index: UniverseIndex, max_train_rows: int) -> list[SpanPart]:
    """The warm-up's fold: shaped like the run's largest (`warm_up_range`), in instrument 0's rows, or
    (several instruments) the largest fold's transitions spread over the instruments' first rows."""
    if len(index) == 1:
        fold_range = warm_up_range(index.n_rows, max_train_rows)
        return [] if fold_range is None else [SpanPart(0, fold_range, fold_range.train_end)]
    parts, wanted = [], max_train_rows
    for i in range(len(index)):
        rows = index.rows(i)
        fold_range = warm_up_range(rows.stop - rows.start, wanted)
        if fold_range is None or wanted < 2:
            continue
        shifted = replace(
            fold_range,
            train_start=rows.start,
            train_end=rows.start + fold_range.train_end,
            val_start=rows.start + fold_range.val_start,
            val_end=rows.start + fold_range.val_end,
        )
        parts.append(SpanPart(i, shifted, shifted.train_end))
        wanted -= fold_range.train_rows
    return parts
