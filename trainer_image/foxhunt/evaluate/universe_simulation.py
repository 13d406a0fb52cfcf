"""What the pooled decision lets a universe keep: `gate_simulation`'s run with K independent instruments
trading ONE shared policy, scored as the book (bench/universe_power.py runs it).

Each instrument is its own `_Market` (the same scenario, its own returns and segments) over the same
dates. Per fold the learner's E candidates have a latent per instrument (the same AR(1) across epochs, the
same skill to that instrument's drift sign). As the universe fold does (`member_policy.read_figures`,
`choose_pooled`):
- a candidate's tail score is the bar-weighted mean of its per-instrument tail net Sharpes
  (`member_policy.pool_by_bars`), and the best is kept on it (ties: the earlier epoch);
- its out-of-sample (shadow) evidence is the bar-weighted mean of its per-instrument validation Sharpes;
- both windows count every instrument's bars at `evidence.effective_share` of the instruments' 1-bar
  return correlations over the first `train_days` (`universe_walk.first_window_correlations`; independent
  markets: near 1, sampling noise only; one instrument: 1 exactly), and the fold trades or goes flat for
  every instrument at once by `pooled_decision`.

The book (`evaluate.book`): equal weights (the instruments share one volatility, so equal risk), per bar the
mean over instruments of each one's stitched net P&L (`gate_simulation.stitched_record`'s stitching: flat
folds' bars count, adjacent windows take over the last position), its annualised Sharpe and the normal 95%
interval over the book's bars. The book oracle: every instrument holds its drift's sign in every window.
Per bar, not per segment: the book's square has cross terms between instruments whose segments differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from foxhunt.config import DQNConfig, FoldConfig
from foxhunt.evaluate.gate_simulation import (
    KeptFold,
    Scenario,
    Shape,
    Stitched,
    _latents,
    _Market,
    stitched_positions,
    window_sharpe,
)
from foxhunt.train.evidence import WindowEvidence, effective_share, evidence_bars, pooled_decision


@dataclass(frozen=True)
class UniverseFold:
    """One universe fold: the shared policy's pooled tail and shadow evidence, and per instrument its
    `KeptFold` (its own tail and shadow Sharpe, validation pieces, kept and oracle positions)."""

    own: WindowEvidence
    shadow: WindowEvidence
    start: int
    end: int
    members: tuple[KeptFold, ...]


@dataclass(frozen=True)
class UniverseRun:
    """One simulated universe run: its markets (one per instrument), folds and evidence share."""

    markets: tuple[_Market, ...]
    folds: list[UniverseFold]
    share: float  # effective_share: the share of the instruments' bars that counts as evidence


def pool_by_bars(bars: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Bar-weighted mean over the first axis (instruments) of `values`; one instrument's values exactly."""
    if len(bars) == 1:
        return values[0]
    return np.tensordot(bars.astype(np.float64), values, axes=1) / float(bars.sum())


def first_window_share(markets: tuple[_Market, ...], shape: Shape) -> float:
    """`effective_share` of the markets' 1-bar return correlations over the first `train_days`."""
    if len(markets) == 1:
        return 1.0
    bars = round(FoldConfig().train_days * shape.bars_per_year / 365.25)
    correlations = np.atleast_2d(np.corrcoef(np.stack([m.r[:bars] for m in markets])))
    return effective_share(correlations.tolist())


def _member_positions(
    m: _Market, window: tuple[int, int, int, int], s: Scenario, rng: np.random.Generator
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...], np.ndarray, np.ndarray]:
    """One instrument in one fold: its tail and validation pieces and the E candidates' positions there."""
    t0, t1, v0, v1 = window
    edge = NormalDist().inv_cdf((1 + s.flat_share) / 2)
    tail, val = m.pieces(t0, t1), m.pieces(v0, v1)
    segs, where = np.unique(np.concatenate([tail[0], val[0]]), return_inverse=True)
    latent = _latents(m, segs, s, rng)
    positions = np.where(latent > edge, 1, np.where(latent < -edge, -1, 0)).astype(np.int8)
    return tail, val, positions[:, where[: len(tail[0])]], positions[:, where[len(tail[0]) :]]


def universe_folds(shape: Shape, s: Scenario, instruments: int, rng: np.random.Generator) -> UniverseRun:
    """One universe run: K markets, then per fold every instrument's candidates, the one kept on the pooled
    tail, and the fold's pooled tail and shadow evidence (module docstring). K = 1 draws as
    `gate_simulation.kept_folds` does, so it is that run exactly."""
    markets = tuple(_Market(shape, s, rng) for _ in range(instruments))
    share, per_year = first_window_share(markets, shape), shape.bars_per_year
    folds = []
    for fold, (t0, t1, v0, v1) in enumerate(shape.folds):
        drawn = [_member_positions(m, (t0, t1, v0, v1), s, rng) for m in markets]
        tails = np.stack([window_sharpe(tp, tail, s.cost, per_year) for tail, _, tp, _ in drawn])
        tail_bars = np.full(instruments, t1 - t0)
        best = int(np.argmax(pool_by_bars(tail_bars, tails)))  # first of equal maxima: the earlier epoch
        shadows = np.array(
            [window_sharpe(vp[best : best + 1], val, s.cost, per_year)[0] for _, val, _, vp in drawn]
        )
        members = tuple(
            KeptFold(
                WindowEvidence(fold, "tail", t1 - t0, float(tails[i, best]), t1 - 1),
                WindowEvidence(fold, "out_of_sample", v1 - v0, float(shadows[i]), v1 - 1),
                v0,
                v1,
                val,
                vp[best],
                (m.direction[val[0]] * np.sign(s.drift_sharpe)).astype(np.int8),
            )
            for i, (m, (_, val, _, vp)) in enumerate(zip(markets, drawn, strict=True))
        )
        own_sharpe = float(pool_by_bars(tail_bars, tails[:, best]))
        shadow = float(pool_by_bars(np.full(instruments, v1 - v0), shadows))
        bars = (evidence_bars(instruments * (t1 - t0), share), evidence_bars(instruments * (v1 - v0), share))
        own = WindowEvidence(fold, "tail", bars[0], own_sharpe, t1 - 1)
        folds.append(
            UniverseFold(own, WindowEvidence(fold, "out_of_sample", bars[1], shadow, v1 - 1), v0, v1, members)
        )
    return UniverseRun(markets, folds, share)


def decide_universe(folds: list[UniverseFold], config: DQNConfig, per_year: float) -> np.ndarray:
    """Per fold whether the shared policy trades by the pooled decision, on what is known at its start."""
    trades: list[bool] = []
    history: list[WindowEvidence] = []
    for f in folds:
        trades.append(pooled_decision(f.own, history, config, per_year, f.start).trade)
        history += [f.shadow]
    return np.array(trades, dtype=bool)


def stitched_net(
    m: _Market, folds: list[KeptFold], trades: np.ndarray, cost: float, oracle: bool = False
) -> np.ndarray:
    """One instrument's stitched net P&L per bar over every fold's validation window: its kept (or oracle)
    positions where `trades`, flat elsewhere, the change paid at each piece's first bar."""
    p, previous = stitched_positions(folds, trades, oracle)
    length = np.concatenate([f.val[1] for f in folds])
    returns = [m.r[f.start : f.end] for f in folds]
    net = np.repeat(p, length) * np.concatenate(returns)
    starts = np.concatenate([[0], np.cumsum(length)[:-1]])
    net[starts] -= cost * np.abs(p - previous)
    return net


def book_record(
    run: UniverseRun, trades: np.ndarray, cost: float, per_year: float, oracle: bool = False
) -> Stitched:
    """The book: per bar the equal-weighted mean of the instruments' stitched net P&L (`stitched_net`), its
    annualised Sharpe (population std) and normal 95% interval; flat's own record when it never holds."""
    per_member = [[f.members[i] for f in run.folds] for i in range(len(run.markets))]
    nets = np.stack(
        [stitched_net(m, fs, trades, cost, oracle) for m, fs in zip(run.markets, per_member, strict=True)]
    )
    book = nets.mean(axis=0)
    bars = len(book)
    std = float(book.std())
    if not np.any(book) or std <= 1e-30:
        return Stitched(0.0, 0.0, 0.0, bars)
    sharpe = float(book.mean()) / std * math.sqrt(per_year)
    half = NormalDist().inv_cdf(0.975) * math.sqrt(per_year / bars)
    return Stitched(sharpe, sharpe - half, sharpe + half, bars)
