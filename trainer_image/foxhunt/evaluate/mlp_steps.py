"""The supervised MLP's Adam steps, segment by segment between checkpoints: written out, or replayed CUDA graphs.

A fit is `steps` AdamW steps on minibatches fixed in advance, with a checkpoint every `every` steps.
`eager_segments` is the definition: `torch.optim.AdamW` over autograd's gradients. The fit itself steps
through `FlatSteps`: the weights, gradients and AdamW moments in flat buffers (each layer's tensors are
views of them), the backward pass written out as the products autograd runs for these layers (the same
operations, operands and layouts), and AdamW's operations on the one buffer instead of on six tensors. A
step is then about 20 kernels, not about 100, and on the CPU it gives `eager_segments`' weights bit for
bit (tests/evaluate/test_mlp_steps.py); it also never imports torch._dynamo, which AdamW's first step
does (about 2 s in a fresh CPU process that compiles nothing). On a CUDA device each segment of `every`
steps is one CUDA graph of those steps, captured once per process and shape and replayed for every fit
that follows: a fit is then 12 replays. The per-step bias corrections are host numbers, baked into each
segment's graph as the eager loop passes them, so a graphed fit gives the eager fit's weights; tests_gpu
checks it bit for bit.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

BETAS = (0.9, 0.999)  # torch.optim.AdamW's defaults, which the eager fit uses
EPS = 1e-8
WARMUP_STEPS = 3  # eager steps on a side stream before capture, so lazy initialisation happens outside it


class StepBatches(Protocol):
    """Each step's minibatch (`[step]`) on one device: a (steps, batch, …) tensor, or rows gathered per step."""

    @property
    def device(self) -> torch.device: ...

    def __getitem__(self, step: int) -> torch.Tensor: ...


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


class FlatSteps:
    """A fit's weights, gradients and AdamW moments as flat buffers on one device; `step` is one AdamW step."""

    def __init__(self, template: nn.Module, device: torch.device) -> None:
        shapes = [p.shape for p in template.parameters()]
        if len(shapes) != 6:
            raise ValueError(
                f"FlatSteps fits k → hidden → hidden → 1 nets (3 Linear layers), not {len(shapes)} tensors"
            )
        self.weights = torch.cat([p.detach().reshape(-1) for p in template.parameters()]).to(device)
        self.grads = torch.zeros_like(self.weights)
        self.exp_avg = torch.zeros_like(self.weights)
        self.exp_avg_sq = torch.zeros_like(self.weights)
        sizes = [s.numel() for s in shapes]
        self.layers = [v.view(s) for v, s in zip(self.weights.split(sizes), shapes, strict=True)]
        self.layer_grads = [v.view(s) for v, s in zip(self.grads.split(sizes), shapes, strict=True)]

    def start(self, net: nn.Module) -> None:
        """Take `net`'s weights and fresh moments."""
        with torch.no_grad():
            for mine, p in zip(self.layers, net.parameters(), strict=True):
                mine.copy_(p)
            self.exp_avg.zero_()
            self.exp_avg_sq.zero_()

    def write_to(self, net: nn.Module) -> None:
        """Copy the weights into `net`."""
        with torch.no_grad():
            for mine, p in zip(self.layers, net.parameters(), strict=True):
                p.copy_(mine)

    def step(self, z: torch.Tensor, y: torch.Tensor, number: int, plan: StepPlan) -> None:
        """AdamW step `number` (from 1) on the mean squared error of the batch (z, y)."""
        w1, b1, w2, b2, w3, b3 = self.layers
        g_w1, g_b1, g_w2, g_b2, g_w3, g_b3 = self.layer_grads
        h1 = torch.relu_(torch.addmm(b1, z, w1.t()))
        h2 = torch.relu_(torch.addmm(b2, h1, w2.t()))
        out = torch.addmm(b3, h2, w3.t()).squeeze(1)
        # autograd's backward of mse_loss, addmm (a weight's gradient as grad.t() @ input) and relu
        grad = ((out - y) * (2.0 / y.numel())).unsqueeze(1)
        torch.mm(grad.t(), h2, out=g_w3)
        torch.sum(grad, 0, out=g_b3)
        grad = torch.ops.aten.threshold_backward(torch.mm(grad, w3), h2, 0)
        torch.mm(grad.t(), h1, out=g_w2)
        torch.sum(grad, 0, out=g_b2)
        grad = torch.ops.aten.threshold_backward(torch.mm(grad, w2), h1, 0)
        torch.mm(grad.t(), z, out=g_w1)
        torch.sum(grad, 0, out=g_b1)
        self._adamw(number, plan)

    def _adamw(self, number: int, plan: StepPlan) -> None:
        """torch's foreach AdamW's operations (decoupled decay, host bias corrections) on the one buffer."""
        beta1, beta2 = BETAS
        self.weights.mul_(1 - plan.lr * plan.weight_decay)
        self.exp_avg.lerp_(self.grads, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(self.grads, self.grads, value=1 - beta2)
        bias_correction1 = 1 - beta1**number
        bias_correction2_sqrt = (1 - beta2**number) ** 0.5
        denom = (self.exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(EPS)
        self.weights.addcdiv_(self.exp_avg, denom, value=-plan.lr / bias_correction1)


def flat_segments(
    net: nn.Module, batches_z: StepBatches, batches_y: torch.Tensor, plan: StepPlan
) -> Iterator[None]:
    """`eager_segments` through `FlatSteps`, without graphs: what each captured segment replays."""
    flat = FlatSteps(net, batches_z.device)
    for step in range(plan.steps):
        flat.step(batches_z[step], batches_y[step], step + 1, plan)
        if (step + 1) % plan.every == 0:
            flat.write_to(net)
            yield
    flat.write_to(net)  # steps past the last checkpoint, as eager_segments leaves them


class SegmentGraphs:
    """Static `FlatSteps` and batches on the device, and one CUDA graph per segment of their steps."""

    def __init__(self, template: nn.Module, plan: StepPlan) -> None:
        self.plan = plan
        self.flat = FlatSteps(template, plan.device)
        dev = plan.device
        self.batches_z = torch.zeros(plan.steps, plan.batch, plan.features, device=dev)
        self.batches_y = torch.zeros(plan.steps, plan.batch, device=dev)
        self.graphs: list[torch.cuda.CUDAGraph] = []
        self._capture()

    def _step(self, step: int) -> None:
        self.flat.step(self.batches_z[step], self.batches_y[step], step + 1, self.plan)

    def _capture(self) -> None:
        side = torch.cuda.Stream(self.plan.device)
        side.wait_stream(torch.cuda.current_stream(self.plan.device))
        with torch.cuda.stream(side):
            for step in range(WARMUP_STEPS):
                self._step(step)
        torch.cuda.current_stream(self.plan.device).wait_stream(side)
        pool = torch.cuda.graph_pool_handle()
        for first in range(0, self.plan.steps, self.plan.every):
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=pool):
                for step in range(first, first + self.plan.every):
                    self._step(step)
            self.graphs.append(graph)

    def segments(self, net: nn.Module, batches_z: torch.Tensor, batches_y: torch.Tensor) -> Iterator[None]:
        """Start from `net`'s weights and fresh moments; after each segment, `net` holds the static weights."""
        self.flat.start(net)
        with torch.no_grad():
            self.batches_z.copy_(batches_z)
            self.batches_y.copy_(batches_y)
        for graph in self.graphs:
            graph.replay()
            self.flat.write_to(net)
            yield


_GRAPHS: dict[StepPlan, SegmentGraphs | None] = {}  # None: capture failed for this plan; eager from then on


def graphed(plan: StepPlan) -> bool:
    """Whether a fit of this plan can run as CUDA graphs: a CUDA device and whole segments."""
    return plan.device.type == "cuda" and plan.steps % plan.every == 0 and _GRAPHS.get(plan, True) is not None


def fit_segments(
    net: nn.Module, batches_z: StepBatches, batches_y: torch.Tensor, plan: StepPlan, use_graphs: bool = True
) -> Iterator[None]:
    """The fit's segments: replayed CUDA graphs where `graphed(plan)` (captured at the first fit; `batches_z`
    must then be one tensor), else eager through `flat_segments` (which gives `eager_segments`' weights)."""
    if not (use_graphs and graphed(plan)):
        return flat_segments(net, batches_z, batches_y, plan)
    assert isinstance(batches_z, torch.Tensor), "a graphed fit copies every step's rows at once"
    if plan not in _GRAPHS:
        try:
            _GRAPHS[plan] = SegmentGraphs(net, plan)
        except Exception as exc:  # noqa: BLE001 (a fit must not fail for want of a graph: eager gives the same)
            warnings.warn(f"MLP baseline fits run eagerly: CUDA graph capture failed ({exc})", stacklevel=2)
            _GRAPHS[plan] = None
            return flat_segments(net, batches_z, batches_y, plan)
    graphs = _GRAPHS[plan]
    assert graphs is not None
    return graphs.segments(net, batches_z, batches_y)
