"""Evaluation of a policy: Q-values, greedy maps, the log-depth rollout scan, costs, annualisation, metrics.

On CUDA `inference_q` runs the hidden layers as matrix products whose epilogue adds the bias and applies
ReLU (cuBLASLt, "fused activation"), so collection's and the greedy maps' forward passes over millions of
rows do not write and read every hidden activation a second time for the ReLU.

Actions are positions: index 0, 1, 2 = short, flat, long (position = index − 1). With three
positions the greedy policy is, per bar, a map from the incoming position to the next one; the
rollout over a range of bars is the prefix composition of those maps, which a log-depth scan
computes in parallel on the device instead of one Python step per bar.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from foxhunt.config import NS_PER_YEAR
from foxhunt.data.pnl import ExecutionRows, gross_pnl, net_pnl
from foxhunt.train.device_data import chunk_rows
from foxhunt.train.reductions import fixed_mean, fixed_std, fixed_sum

N_ACTIONS = 3
FLAT = 1  # action index of the flat position
STATE_ALIGN = 8  # the fused greedy maps' state columns: a multiple of 8 takes the aligned product kernels
# The CPU's greedy maps take at most this many rows a pass, so that a pass's activations stay in the caches
# (passes of 262,144 rows spilled them): the same maps at any chunk (tests/train/test_greedy_policy.py), and
# the default `foxhunt pipeline` in 18.4 s against 21.5 s (bench/README, "The CPU's greedy maps in passes").
CPU_MAP_ROWS = 1 << 13


@dataclass(frozen=True)
class PolicyFigures:
    """A policy's figures over a window (`policy_metrics`): after the cost unless named gross."""

    sharpe: float  # annualised
    total_return: float  # log
    max_drawdown: float
    turnover: float  # position change, summed
    hit_rate: float  # share of the bars in the market that gained
    gross_sharpe: float
    gross_return: float
    exposure: float  # mean |position|


@dataclass(frozen=True)
class ValidationFigures(PolicyFigures):
    """A greedy policy's figures over a window beside buy-and-hold's and flat's (`score_positions`)."""

    buy_and_hold: PolicyFigures
    flat: PolicyFigures
    periods_per_year: float


METRIC_NAMES = tuple(f.name for f in fields(PolicyFigures))


def policy_state(
    features: torch.Tensor, position: torch.Tensor, mean: torch.Tensor, std: torch.Tensor
) -> torch.Tensor:
    """Network input: feature rows normalized with the fold's stats, then the incoming position."""
    return torch.cat([(features - mean) / std, position.unsqueeze(-1)], dim=-1)


def linears(net: nn.Module) -> list[nn.Linear]:
    """The network's Linear layers, input to output."""
    return [m for m in net.modules() if isinstance(m, nn.Linear)]


def inference_q(net: nn.Module, state: torch.Tensor, fused: bool) -> torch.Tensor:
    """The network's Q-values without autograd; `fused`: bias and ReLU in the products' epilogue, and a
    state wider than the first layer (zero columns appended) met by zero weight columns."""
    if not fused:
        return net(state)
    first, second, last = linears(net)
    weight = first.weight
    if state.shape[1] > weight.shape[1]:
        weight = F.pad(weight, (0, state.shape[1] - weight.shape[1]))
    h = torch._addmm_activation(first.bias, state, weight.t())
    h = torch._addmm_activation(second.bias, h, second.weight.t())
    return torch.addmm(last.bias, h, last.weight.t())


@torch.no_grad()
def greedy_maps(
    qnet: nn.Module,
    features: torch.Tensor,
    mean: torch.Tensor,
    std: torch.Tensor,
    chunk: int,
    fused: bool | None = None,
) -> torch.Tensor:
    """Per row, the greedy next-position index for each incoming position index: (n, 3) long.

    `fused` (default: on CUDA): the products add the bias and apply ReLU in their epilogue (`inference_q`)
    and the state's columns are padded with zeros to a multiple of `STATE_ALIGN`. Over a tail of a million
    rows an unfused ReLU reads and writes every hidden activation again (35% of an H100's time here), and a
    first layer of 43 inputs runs on slow unaligned kernels (17%; bench/README, the tenth device session).
    The CPU runs the modules, `CPU_MAP_ROWS` rows a pass at most."""
    n, width = features.shape
    fused = features.is_cuda if fused is None else fused
    chunk = chunk if features.is_cuda else min(chunk, CPU_MAP_ROWS)
    columns = -(-(width + 1) // STATE_ALIGN) * STATE_ALIGN if fused else width + 1
    maps = torch.empty((n, N_ACTIONS), dtype=torch.long, device=features.device)
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        # policy_state once per chunk, written in place: the normalised rows, then the position column
        # set per incoming position (the same values as a concatenation, without three copies).
        state = features.new_zeros((hi - lo, columns))
        torch.div(features[lo:hi] - mean, std, out=state[:, :width])
        for p in range(N_ACTIONS):
            state[:, width] = float(p - 1)
            maps[lo:hi, p] = inference_q(qnet, state, fused).argmax(dim=1)
    return maps


def greedy_rollout(
    net: nn.Module, features: torch.Tensor, mean: torch.Tensor, std: torch.Tensor
) -> torch.Tensor:
    """Positions (−1, 0, 1) of `net`'s exact greedy policy over `features`' bars, entered from flat."""
    maps = greedy_maps(net, features, mean, std, chunk_rows(features.device))
    return (rollout_positions(maps, FLAT) - 1).to(torch.float32)


def rollout_positions(maps: torch.Tensor, start_index: int) -> torch.Tensor:
    """Positions taken by the greedy policy: the prefix composition of per-bar maps by a log-depth scan.

    maps[..., t, p] is the position index chosen at bar t when coming in with index p (leading
    dimensions are independent rollouts). The position after bar t is (maps[t] ∘ … ∘ maps[0])(start);
    a Hillis–Steele scan composes all prefixes in ceil(log2 n) gathers instead of n sequential steps.
    """
    n = maps.shape[-2]
    composed = maps
    shift = 1
    while shift < n:
        later = torch.gather(composed[..., shift:, :], -1, composed[..., :-shift, :])
        composed = torch.cat([composed[..., :shift, :], later], dim=-2)
        shift *= 2
    return composed[..., start_index]


def rollout_positions_reference(maps: np.ndarray, start_index: int) -> np.ndarray:
    """The same rollout as a plain sequential loop: the specification the scan must equal."""
    out = np.empty(len(maps), dtype=np.int64)
    p = start_index
    for t in range(len(maps)):
        p = int(maps[t, p])
        out[t] = p
    return out


def position_changes(positions: torch.Tensor) -> torch.Tensor:
    """|position − previous position| per bar, the first entered from flat: what costs are paid on."""
    return torch.diff(positions, dim=-1, prepend=torch.zeros_like(positions[..., :1])).abs()


def previous_positions(positions: torch.Tensor) -> torch.Tensor:
    """The position held before each bar: flat before the first, then the bar before's."""
    return torch.cat([torch.zeros_like(positions[..., :1]), positions[..., :-1]], dim=-1)


def policy_pnl(
    positions: torch.Tensor, returns: torch.Tensor, cost: float, execution: ExecutionRows | None = None
) -> torch.Tensor:
    """Per-bar log return of holding `positions` (entered from flat), after `cost` per unit of change and,
    with `execution` (the execution rows at these bars, on the device), the evaluation's execution model
    in float64: the evaluation's own definition (`foxhunt.data.pnl.net_pnl`)."""
    if execution is not None:  # the evaluation's float64 (the targets stay float32 on the device)
        positions, returns = positions.double(), returns.double()
    return net_pnl(positions, previous_positions(positions), returns, cost, execution)


def held_sharpe(
    data, positions: torch.Tensor, start: int, cost: float, execution: ExecutionRows | None = None
) -> torch.Tensor:
    """Annualised net Sharpe (a 0-d device tensor) of `positions` held from row `start` on, entered from
    flat, under `cost` and the execution rows `execution` over the whole loaded data (None: the flat cost
    alone); annualised by the bars a year of those rows' own timestamps."""
    end = start + positions.shape[-1]
    bars = None if execution is None else execution.take(slice(start, end))
    pnl = policy_pnl(positions, data.targets[start:end, 0], cost, bars)
    return annualised_sharpe(pnl, periods_per_year(data.timestamp[start:end]))


def periods_per_year(timestamp: np.ndarray) -> float:
    """Bars per year implied by the average spacing of the timestamps (gaps included)."""
    if len(timestamp) < 2:
        return 1.0
    span_years = (int(timestamp[-1]) - int(timestamp[0])) / NS_PER_YEAR
    return (len(timestamp) - 1) / span_years if span_years > 0 else 1.0


def annualised_sharpe(pnl: torch.Tensor, periods: float) -> torch.Tensor:
    """Mean over standard deviation of per-bar returns, times sqrt(bars per year); 0 when flat."""
    pnl = pnl.double().reshape(-1)
    if pnl.numel() == 0:  # no bars (an empty tail): no return, and no std of nothing to warn about
        return pnl.new_zeros(())
    mean = fixed_mean(pnl)  # fixed: the same bits at any CPU thread count (reductions.py)
    std = fixed_std(pnl)
    return torch.where(std > 0, mean / std * math.sqrt(periods), torch.zeros_like(mean))


def policy_metric_tensors(
    positions: torch.Tensor, returns: torch.Tensor, cost: float, periods: float
) -> dict[str, torch.Tensor]:
    """`policy_metrics` as 0-d device tensors, for callers that batch their host transfers."""
    changes, previous = position_changes(positions), previous_positions(positions)
    gross = gross_pnl(positions, previous, returns).double()
    pnl = net_pnl(positions, previous, returns, cost, changes=changes).double()  # data.pnl: the one formula
    n = pnl.numel()
    equity = torch.cumsum(pnl, 0)
    peak = torch.cummax(torch.cat([equity.new_zeros(1), equity]), 0).values[1:]
    drawdown = 1.0 - torch.exp(-(peak - equity).max()) if n else equity.new_zeros(())
    active = positions != 0
    hits = ((pnl > 0) & active).sum()
    zero = torch.zeros((), dtype=torch.float64, device=pnl.device)
    return {
        "sharpe": annualised_sharpe(pnl, periods),
        "total_return": fixed_sum(pnl),
        "max_drawdown": drawdown.double(),
        "turnover": fixed_sum(changes).double(),
        "hit_rate": torch.where(active.sum() > 0, hits / active.sum().clamp(min=1), zero).double(),
        "gross_sharpe": annualised_sharpe(gross, periods),
        "gross_return": fixed_sum(gross),
        "exposure": positions.abs().double().mean() if n else zero,
    }


def policy_metrics(
    positions: torch.Tensor, returns: torch.Tensor, cost: float, periods: float
) -> PolicyFigures:
    """Net Sharpe (annualized), total log return, max drawdown, turnover, hit rate; gross Sharpe and
    return (before costs); exposure (mean |position|). Computed on the device, one host transfer."""
    values = torch.stack(list(policy_metric_tensors(positions, returns, cost, periods).values())).tolist()
    return PolicyFigures(*values)


@torch.no_grad()
def score_positions(data, positions: torch.Tensor, start: int, cost_per_unit: float) -> ValidationFigures:
    """Metrics of `positions` held from bar `start` on, beside buy-and-hold and flat, net of `cost_per_unit`."""
    returns = data.targets[start : start + positions.numel(), 0]
    periods = periods_per_year(data.timestamp[start : start + positions.numel()])
    return ValidationFigures(
        **asdict(policy_metrics(positions, returns, cost_per_unit, periods)),
        buy_and_hold=policy_metrics(torch.ones_like(returns), returns, cost_per_unit, periods),
        flat=policy_metrics(torch.zeros_like(returns), returns, cost_per_unit, periods),
        periods_per_year=periods,
    )
