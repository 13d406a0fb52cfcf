"""The supervised baselines' MLP (`supervised.fit_mlp`): its settings, a fitted model, and fits of several
training slices at once, every fit's host-side part first, then each fit's steps.

The host's part of a fit is what it must read from or send to the device: the target's mean and standard
deviation (the scaling divides by host numbers), the initial weights (drawn on the host from the seed) and
the minibatch rows (drawn by a host generator). Done for every fit before any fit steps, they are one read
and two copies to the device, not one read and seven copies per fit; on a GPU, where a blocking copy from
the host waits for the device's queue, no fit then waits for the steps of the fit before it, and the host
queues them all. Each fit's numbers are those of fitting it alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# torch is imported inside the functions: `supervised`, which names these settings, is read by code that must
# not load torch (the CLI, the reports).

MLP_HIDDEN = 32  # units in each of the two hidden layers
MLP_STEPS = 300  # Adam steps per fit, whatever the training slice's size (bounds the CPU time)
MLP_BATCH = 1024  # rows per step, drawn with replacement from the fitted rows
MLP_LR = 1e-3  # Adam learning rate
MLP_WEIGHT_DECAY = 1e-4  # decoupled (AdamW) weight decay
MLP_CHECK_EVERY = 25  # steps between checkpoints scored on the held-back tail
MLP_CLIP = 5.0  # standardised features and targets are clipped to ±this, so one outlier cannot steer the fit

# A fit's training rows: features, target, and (rows fitted, first row of the held-back tail), or None
# for a slice too short for a tail (`supervised.split_for_tail`).
MLPJob = tuple["torch.Tensor", "torch.Tensor", "tuple[int, int] | None"]


class MLPFit:
    """A fitted MLP with its training slice's feature and target scales (float32, on the device)."""

    def __init__(self, net: torch.nn.Module, mean, std, y_mean: float, y_std: float):
        self.net, self.mean, self.std, self.y_mean, self.y_std = net, mean, std, y_mean, y_std

    def predict(self, features: torch.Tensor) -> torch.Tensor:
        """Predicted forward log return per row (float64)."""
        import torch

        out = torch.empty(features.shape[0], dtype=torch.float64, device=features.device)
        with torch.no_grad():
            for lo in range(0, features.shape[0], 1 << 18):
                z = _standardise(features[lo : lo + (1 << 18)], self.mean, self.std)
                out[lo : lo + (1 << 18)] = self.net(z).squeeze(1).double() * self.y_std + self.y_mean
        return out


def _standardise(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    # In place after the subtraction: the same operations in the same order, one buffer instead of three.
    return (x.float() - mean).div_(std).clamp_(-MLP_CLIP, MLP_CLIP)


class _StepRows:
    """Each step's rows of `features`, standardised: `[step]` gathers one step's (batch, k) as the step asks
    (an eager fit), `whole()` all of them at once, (steps, batch, k) (a graphed fit's one buffer; 50 MB at
    300 × 1024 × 42, whose first writes were a fifth of a CPU fit's time). Elementwise, so the same numbers
    whichever comes first: the fitted rows standardised once and gathered when they are fewer than the steps
    draw (a two-year fold fits ~100,000), else the drawn rows gathered and standardised."""

    def __init__(self, features, rows: torch.Tensor, fit_rows: int, mean, std) -> None:
        self.features, self.rows, self.mean, self.std = features, rows, mean, std
        self.device = features.device
        self.standardised = _standardise(features[:fit_rows], mean, std) if fit_rows < rows.numel() else None

    def __getitem__(self, step: int) -> torch.Tensor:
        return self._gathered(self.rows[step])

    def whole(self) -> torch.Tensor:
        return self._gathered(self.rows.reshape(-1)).view(*self.rows.shape, self.features.shape[1])

    def _gathered(self, rows: torch.Tensor) -> torch.Tensor:
        if self.standardised is not None:
            return self.standardised[rows]
        return _standardise(self.features[rows], self.mean, self.std)


def _step_rows_standardised(features, rows: torch.Tensor, fit_rows: int, mean, std) -> torch.Tensor:
    """Every step's rows of `features`, standardised, in one (steps, batch, k) tensor (`_StepRows.whole`)."""
    return _StepRows(features, rows, fit_rows, mean, std).whole()


@dataclass
class _Prepared:
    """One fit after its host-side part: its rows' split, standardisation, target scale, net and minibatches."""

    features: torch.Tensor
    target: torch.Tensor
    split: tuple[int, int] | None
    mean: torch.Tensor
    std: torch.Tensor
    y_mean: float
    y_std: float
    net: torch.nn.Sequential
    rows: torch.Tensor  # (steps, batch) row indices of the fitted rows, on the device


def fit_mlps(
    jobs: Sequence[MLPJob], *, seed: int, hidden: int, steps: int, batch: int, lr: float, graphs: bool
) -> list[MLPFit]:
    """`supervised.fit_mlp` of each job, every job's host-side part first (their rows on one device)."""
    import torch

    devices = {features.device for features, _, _ in jobs}
    if len(devices) != 1:
        raise ValueError(f"MLP fits on {sorted(map(str, devices))}: one device at a time")
    if devices.pop().type != "cpu":
        return [_fit(p, hidden, steps, lr, graphs) for p in _prepare(jobs, seed, hidden, steps, batch)]
    threads = torch.get_num_threads()  # so small a network runs fastest on one thread, and shares the CPU
    torch.set_num_threads(1)
    try:
        return [_fit(p, hidden, steps, lr, graphs) for p in _prepare(jobs, seed, hidden, steps, batch)]
    finally:
        torch.set_num_threads(threads)


def _prepare(jobs: Sequence[MLPJob], seed: int, hidden: int, steps: int, batch: int) -> list[_Prepared]:
    """Each job's split and standardisation; every target's scale read at once; every net and the
    minibatch rows drawn on the host and sent to the device at once."""
    import torch

    from foxhunt.train.reductions import fixed_mean, fixed_std

    parts, scales = [], []
    for features, target, split in jobs:
        n = features.shape[0]
        if n < 1:
            raise ValueError("the MLP needs at least 1 training row")
        fit_rows = split[0] if split is not None else n
        x64 = features[:fit_rows].double()
        mean, std = x64.mean(0), x64.std(0, unbiased=False)
        std = torch.where(std > 1e-8, std, torch.ones_like(std))
        y64 = target[:fit_rows].double()
        scales += [fixed_mean(y64), fixed_std(y64)]
        parts.append((features, target, split, fit_rows, mean.float(), std.float()))
    read = torch.stack(scales).tolist()  # one read of the device for every fit
    device = jobs[0][0].device
    nets = _sent_nets([_new_mlp(p[0].shape[1], hidden, seed) for p in parts], device)
    drawn = [
        torch.randint(0, p[3], (steps, min(batch, p[3])), generator=torch.Generator().manual_seed(seed))
        for p in parts
    ]
    rows = torch.cat([r.reshape(-1) for r in drawn]).to(device).split([r.numel() for r in drawn])
    return [
        # y_std: a host float, so the scaling divides by a host number (a device divisor rounds otherwise)
        _Prepared(f, t, split, mean, std, read[2 * i], read[2 * i + 1] or 1.0, net, r.view(d.shape))
        for i, ((f, t, split, _, mean, std), net, r, d) in enumerate(
            zip(parts, nets, rows, drawn, strict=True)
        )
    ]


def _new_mlp(k: int, hidden: int, seed: int) -> torch.nn.Sequential:
    """The k → hidden → hidden → 1 ReLU net on the host, initialised from `seed` alone, its head zeroed.

    The zero head predicts the training mean at step 0; the global RNG is forked so that
    building the net leaves the caller's random stream where it was.
    """
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = torch.nn.Sequential(
            torch.nn.Linear(k, hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, 1),
        )
        head = net[-1]
        assert isinstance(head, torch.nn.Linear)
        torch.nn.init.zeros_(head.weight)
        torch.nn.init.zeros_(head.bias)
    return net


def _sent_nets(nets: list[torch.nn.Sequential], device: torch.device) -> list[torch.nn.Sequential]:
    """The nets on `device`, their weights sent in one copy (`Module.to` sends each tensor on its own)."""
    import torch

    params = [p for net in nets for p in net.parameters()]
    flat = torch.cat([p.detach().reshape(-1) for p in params]).to(device)
    nets = [net.to_empty(device=device) for net in nets]
    with torch.no_grad():
        moved = [p for net in nets for p in net.parameters()]
        for p, values in zip(moved, flat.split([p.numel() for p in moved]), strict=True):
            p.copy_(values.view_as(p))
    return nets


def _fit(p: _Prepared, hidden: int, steps: int, lr: float, graphs: bool) -> MLPFit:
    """The fit's steps from its prepared part, keeping the checkpoint that best predicts the held-back tail."""
    import torch

    from foxhunt.evaluate import mlp_steps
    from foxhunt.train.reductions import fixed_mean

    features, target, net = p.features, p.target, p.net
    n, k = features.shape
    fit_rows, tail_start = p.split if p.split is not None else (n, n)

    def scaled_target(rows) -> torch.Tensor:
        return ((target[rows].double() - p.y_mean) / p.y_std).float().clamp(-MLP_CLIP, MLP_CLIP)

    tail_z = _standardise(features[tail_start:], p.mean, p.std)
    tail_y = scaled_target(slice(tail_start, n))

    def tail_loss() -> torch.Tensor:
        with torch.no_grad():
            # fixed_mean: a long tail's mean would otherwise round by the CPU's thread count
            return fixed_mean((net(tail_z).squeeze(1) - tail_y) ** 2)

    if p.split is None:  # too short for a tail: the step-0 model, which predicts the training mean
        net.eval()
        return MLPFit(net, p.mean, p.std, p.y_mean, p.y_std)
    best_loss, best_state = tail_loss(), {name: v.clone() for name, v in net.state_dict().items()}
    plan = mlp_steps.StepPlan(
        features.device, k, hidden, steps, p.rows.shape[1], MLP_CHECK_EVERY, lr, MLP_WEIGHT_DECAY
    )
    # A graph replays from one buffer of every step's rows; an eager fit gathers each step's as it comes.
    rows_for = _step_rows_standardised if graphs and mlp_steps.graphed(plan) else _StepRows
    batches_z = rows_for(features, p.rows, fit_rows, p.mean, p.std)
    batches_y = scaled_target(p.rows.reshape(-1)).view(p.rows.shape)
    # AdamW steps on flat buffers (mlp_steps.FlatSteps); on a CUDA device replayed graphs of the same kernels.
    for _ in mlp_steps.fit_segments(net, batches_z, batches_y, plan, use_graphs=graphs):
        # The best checkpoint is kept on the device, so the host never waits for a loss: `where` copies the
        # better weights bit for bit, and a NaN loss is never better, as in a comparison on the host.
        current = tail_loss()
        better = current < best_loss
        best_loss = torch.where(better, current, best_loss)
        best_state = {name: torch.where(better, v, best_state[name]) for name, v in net.state_dict().items()}
    net.load_state_dict(best_state)
    net.eval()
    return MLPFit(net, p.mean, p.std, p.y_mean, p.y_std)
