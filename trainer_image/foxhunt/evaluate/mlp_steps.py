"""The supervised MLP's Adam steps, segment by segment between checkpoints: eager, or replayed CUDA graphs.

A fit is `steps` AdamW steps on minibatches fixed in advance, with a checkpoint every `every` steps.
On the CPU (and wherever a graph cannot serve) the steps run eagerly through the functional AdamW
(`functional_segments`: the same numbers as `torch.optim.AdamW`, whose first step imports torch._dynamo,
about 2 s and 800 modules in a fresh CPU process that compiles nothing). On a CUDA device each segment of `every` steps is one CUDA graph, captured once per process and shape and
replayed for every fit that follows: a fit is then 12 replays, not 300 × ~40 kernel launches from
Python. The graphs run the same kernels as the eager loop (the functional AdamW with host-side step
counters, whose per-step bias corrections are baked into each segment's graph, as the eager loop would
pass them), so a graphed fit gives the eager fit's weights; tests_gpu checks it bit for bit.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import torch
from torch import nn
from torch.optim.adam import adam

BETAS = (0.9, 0.999)  # torch.optim.AdamW's defaults, which the eager fit uses
EPS = 1e-8
WARMUP_STEPS = 3  # eager steps on a side stream before capture, so lazy initialisation happens outside it


@dataclass(frozen=True)
class StepPlan:
    """What fixes a fit's kernels: the network's shape, the batches', the schedule and the optimiser's."""

    device: torch.device
    features: int
    hidden: int
    steps: int
    batch: int
    every: int
    lr: float
    weight_decay: float


def eager_segments(
    net: nn.Module, batches_z: torch.Tensor, batches_y: torch.Tensor, plan: StepPlan
) -> Iterator[None]:
    """Run the fit's steps eagerly; yield after every `plan.every`-th step (the net holds its weights then)."""
    opt = torch.optim.AdamW(net.parameters(), lr=plan.lr, weight_decay=plan.weight_decay, foreach=True)
    for step in range(plan.steps):
        loss = nn.functional.mse_loss(net(batches_z[step]).squeeze(1), batches_y[step])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (step + 1) % plan.every == 0:
            yield


def state_steps_of(params: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """AdamW's step counters as its own state keeps them when not capturable: a host float per parameter,
    so the bias corrections are host numbers (baked into each captured step)."""
    return [torch.tensor(0.0, dtype=torch.get_default_dtype()) for _ in params]


def functional_step(
    net: nn.Module,
    moments: tuple[list[torch.Tensor], list[torch.Tensor]],
    state_steps: list[torch.Tensor],
    z: torch.Tensor,
    y: torch.Tensor,
    plan: StepPlan,
) -> None:
    """One step as `eager_segments` takes it, through the functional AdamW `torch.optim.AdamW.step` calls."""
    params: list[torch.Tensor] = list(net.parameters())
    loss = nn.functional.mse_loss(net(z).squeeze(1), y)
    for p in params:
        p.grad = None
    loss.backward()
    grads = [p.grad for p in params]
    assert all(g is not None for g in grads)
    with torch.no_grad():
        adam(
            params, cast(list[torch.Tensor], grads), moments[0], moments[1], [], state_steps,
            foreach=True, capturable=False, decoupled_weight_decay=True, amsgrad=False,
            beta1=BETAS[0], beta2=BETAS[1], lr=plan.lr, weight_decay=plan.weight_decay, eps=EPS, maximize=False,
        )  # fmt: skip


def functional_segments(
    net: nn.Module, batches_z: torch.Tensor, batches_y: torch.Tensor, plan: StepPlan
) -> Iterator[None]:
    """`eager_segments` through `functional_step`, without graphs: what each captured segment replays."""
    params = list(net.parameters())
    moments = ([torch.zeros_like(p) for p in params], [torch.zeros_like(p) for p in params])
    state_steps = state_steps_of(params)
    for step in range(plan.steps):
        functional_step(net, moments, state_steps, batches_z[step], batches_y[step], plan)
        if (step + 1) % plan.every == 0:
            yield


class SegmentGraphs:
    """A static copy of the network, its AdamW moments and the batches, and one CUDA graph per segment."""

    def __init__(self, template: nn.Module, plan: StepPlan) -> None:
        self.plan = plan
        self.net = copy.deepcopy(template).to(plan.device)
        self.params = list(self.net.parameters())
        self.exp_avgs = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        self.exp_avg_sqs = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        dev = plan.device
        self.batches_z = torch.zeros(plan.steps, plan.batch, plan.features, device=dev)
        self.batches_y = torch.zeros(plan.steps, plan.batch, device=dev)
        self.graphs: list[torch.cuda.CUDAGraph] = []
        self._capture()

    def _step(self, step: int, state_steps: list[torch.Tensor]) -> None:
        moments = (self.exp_avgs, self.exp_avg_sqs)
        functional_step(self.net, moments, state_steps, self.batches_z[step], self.batches_y[step], self.plan)

    def _capture(self) -> None:
        side = torch.cuda.Stream(self.plan.device)
        side.wait_stream(torch.cuda.current_stream(self.plan.device))
        with torch.cuda.stream(side):
            warm = state_steps_of(self.params)
            for step in range(WARMUP_STEPS):
                self._step(step, warm)
        torch.cuda.current_stream(self.plan.device).wait_stream(side)
        pool = torch.cuda.graph_pool_handle()
        state_steps = state_steps_of(self.params)  # advance on the host while each segment is captured
        for first in range(0, self.plan.steps, self.plan.every):
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=pool):
                for step in range(first, first + self.plan.every):
                    self._step(step, state_steps)
            self.graphs.append(graph)

    def segments(self, net: nn.Module, batches_z: torch.Tensor, batches_y: torch.Tensor) -> Iterator[None]:
        """Start from `net`'s weights and fresh moments; after each segment, `net` holds the static weights."""
        with torch.no_grad():
            for static, p in zip(self.params, net.parameters(), strict=True):
                static.copy_(p)
            for moment in (*self.exp_avgs, *self.exp_avg_sqs):
                moment.zero_()
            self.batches_z.copy_(batches_z)
            self.batches_y.copy_(batches_y)
        for graph in self.graphs:
            graph.replay()
            with torch.no_grad():
                for static, p in zip(self.params, net.parameters(), strict=True):
                    p.copy_(static)
            yield


_GRAPHS: dict[StepPlan, SegmentGraphs | None] = {}  # None: capture failed for this plan; eager from then on


def graphed(plan: StepPlan) -> bool:
    """Whether a fit of this plan can run as CUDA graphs: a CUDA device and whole segments."""
    return plan.device.type == "cuda" and plan.steps % plan.every == 0 and _GRAPHS.get(plan, True) is not None


def fit_segments(
    net: nn.Module, batches_z: torch.Tensor, batches_y: torch.Tensor, plan: StepPlan, use_graphs: bool = True
) -> Iterator[None]:
    """The fit's segments: replayed CUDA graphs where `graphed(plan)` (captured at the first fit), else eager
    through the functional AdamW (`functional_segments`, which gives `eager_segments`' weights)."""
    if not (use_graphs and graphed(plan)):
        return functional_segments(net, batches_z, batches_y, plan)
    if plan not in _GRAPHS:
        try:
            _GRAPHS[plan] = SegmentGraphs(net, plan)
        except Exception as exc:  # noqa: BLE001 (a fit must not fail for want of a graph: eager gives the same)
            warnings.warn(f"MLP baseline fits run eagerly: CUDA graph capture failed ({exc})", stacklevel=2)
            _GRAPHS[plan] = None
            return functional_segments(net, batches_z, batches_y, plan)
    graphs = _GRAPHS[plan]
    assert graphs is not None
    return graphs.segments(net, batches_z, batches_y)
