"""How often the trading decision trades on noise, and how often on an edge: a simulation that keeps the
best epoch as the trainer does, with the evaluation's cost (bench/gate_false_positive.py runs it).

A run is a timeline of minute bars at the default shape (`default_shape`: two years of 252 × 1440 bars a
year, the default folds' tails and validation windows in bars, expanding as shipped), per-bar returns iid
Student-t (df 4, `sigma` a minute: the sample's 4 bp) plus an optional planted drift. Time is cut into
segments of geometric length (mean `holding_bars`); every candidate policy holds one position in
{−1, 0, 1} per segment, from a standard normal latent thresholded so that `flat_share` of segments are flat. A fold
trains E epochs: E candidates whose latents follow an AR(1) across epochs (`epoch_correlation`:
consecutive epochs' policies are alike), share `fold_correlation` of their variance with a run-wide
latent (a learner that keeps finding the same pattern), and, for the power side, correlate `skill` with
the sign of the planted drift. Each candidate is scored on the fold's tail (net Sharpe, entered from
flat, `cost` per unit of position change), the best is kept (ties: the earlier epoch), and the fold
decides by today's gate (`tail_gate`'s formula) and by the pooled decision (`pooled_decision`, with the
earlier folds' shadow out-of-sample windows; and, to measure why they are left out, with earlier tails).

Exact at full minute resolution, not an approximation: positions are constant within a segment, so a
window's sum and sum of squares of the net per-bar P&L come from per-segment sums of r and r² (and the
return of each segment's first bar, where the cost is paid), so a run costs per segment, not per bar.

The stitched record (`stitched_record`), what issue 34's targets read: every fold's validation window in
time order, the kept candidate's positions where the decision trades and flat elsewhere, scored as ONE
series (flat folds' bars count; a window adjacent to the previous one takes over its last position and
pays the actual change, as `evaluate.records` stitches). Its 95% interval is the normal one of the mean
net P&L with the stitched per-bar standard deviation: Sharpe ± z · sqrt(bars a year / stitched bars). The
per-bar P&L is uncorrelated here (positions are fixed before the iid returns), so this stands in for the
evaluation's block bootstrap, which is too slow at minute bars. The oracle record holds sign(drift) in
every validation window (flat when no drift is planted), net of the same cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np

from foxhunt.config import DQNConfig, EvalConfig, FoldConfig
from foxhunt.train.evidence import WindowEvidence, pooled_decision, sharpe_gate

BARS_PER_YEAR = 252 * 1440  # minute bars of a 24-hour, 252-day market
TRAIN_TAIL_MIN_ROWS = 64  # selection.MIN_TAIL_ROWS (train.selection imports torch; the rule is repeated)


@dataclass(frozen=True)
class Shape:
    """A run's layout in bars: per fold (tail start, tail end, validation start, validation end)."""

    bars: int
    bars_per_year: float
    folds: tuple[tuple[int, int, int, int], ...]


def default_shape(years: float = 2.0, bars_per_year: float = BARS_PER_YEAR, mode: str | None = None) -> Shape:
    """The default folds (FoldConfig, DQNConfig.select_tail_share) over `years` of regular bars, in bars:
    calendar days convert at bars_per_year / 365.25 bars a day, as foxhunt's annualisation does. `mode`
    (FoldConfig.mode, the shipped one by default): expanding, a fold's tail is the last share of every bar
    before it, so it grows fold by fold; rolling, the last share of the fold's train_days (about a month)."""
    fc, share = FoldConfig(), DQNConfig().select_tail_share
    mode = fc.mode if mode is None else mode
    if mode not in ("rolling", "expanding"):
        raise ValueError(f"fold mode {mode!r}: expected rolling or expanding")
    per_day = bars_per_year / 365.25
    total = round(years * bars_per_year)
    train, val, step = (round(d * per_day) for d in (fc.train_days, fc.val_days, fc.step_days))
    folds = []
    k = 0
    while k * step + train < total:
        val_start = k * step + train
        train_end = val_start - fc.purge_bars
        first = k * step if mode == "rolling" else 0
        tail = max(TRAIN_TAIL_MIN_ROWS, math.ceil((train_end - first) * share))
        val_end = min(val_start + val, total)
        if val_end - val_start >= fc.min_val_rows:
            folds.append((train_end - tail, train_end, val_start, val_end))
        k += 1
    return Shape(total, bars_per_year, tuple(folds))


@dataclass(frozen=True)
class Scenario:
    """What the learner's candidates look like, and the market they trade."""

    epochs: int = 50
    cost: float = EvalConfig().cost_per_change  # per unit of position change (the evaluation's default)
    holding_bars: float = 30.0  # mean bars a segment (one position) lasts
    flat_share: float = 0.5  # share of segments a candidate is flat
    epoch_correlation: float = 0.9  # of consecutive epochs' latents
    fold_correlation: float = 0.0  # share of a latent's variance common to every fold of a run
    sigma: float = 4e-4  # per-bar return volatility (the sample's 4 bp a minute)
    df: float = 4.0  # Student-t degrees of freedom of the per-bar noise
    drift_sharpe: float = 0.0  # annualised Sharpe of holding sign(drift) always (0: no edge)
    skill: float = 0.0  # correlation of a candidate's latent with the drift's sign


@dataclass(frozen=True)
class RunOutcome:
    """One run's per-fold decisions and figures (arrays over its folds)."""

    per_fold: np.ndarray  # bool: today's gate trades
    pooled: np.ndarray  # bool: the pooled decision trades
    pooled_with_tails: np.ndarray  # bool: the pooled decision with earlier tails at full weight trades
    best_tail: np.ndarray  # the kept epoch's tail Sharpe
    shadow: np.ndarray  # the kept epoch's out-of-sample Sharpe (before any flattening)


class _Market:
    """A run's returns and segments, with the cumulative sums a window's figures are read from."""

    def __init__(self, shape: Shape, s: Scenario, rng: np.random.Generator) -> None:
        n = shape.bars
        lengths = rng.geometric(min(1.0, 1.0 / s.holding_bars), size=int(2 * n / s.holding_bars) + 16)
        starts = np.concatenate([[0], np.cumsum(lengths)])
        self.starts = starts[starts < n]
        self.segment = np.zeros(n, dtype=np.int64)
        self.segment[self.starts[1:]] = 1
        self.segment = np.cumsum(self.segment)
        segments = len(self.starts)
        self.direction = rng.choice(np.array([-1.0, 1.0]), size=segments)
        self.common = rng.standard_normal(segments)  # the run-wide latent (fold_correlation)
        noise = rng.standard_t(s.df, size=n) * (s.sigma / math.sqrt(s.df / (s.df - 2.0)))
        drift = s.drift_sharpe * s.sigma / math.sqrt(shape.bars_per_year)
        self.r = noise + drift * self.direction[self.segment]
        self.cum = np.concatenate([[0.0], np.cumsum(self.r)])
        self.cum2 = np.concatenate([[0.0], np.cumsum(self.r * self.r)])

    def pieces(self, a: int, b: int) -> tuple[np.ndarray, ...]:
        """Window [a, b) cut at segment starts: each piece's segment, length, sum r, sum r², first r."""
        inner = self.starts[(self.starts > a) & (self.starts < b)]
        first = np.concatenate([[a], inner])
        last = np.concatenate([inner, [b]])
        sums = self.cum[last] - self.cum[first]
        squares = self.cum2[last] - self.cum2[first]
        return self.segment[first], last - first, sums, squares, self.r[first]


def window_sharpe(
    positions: np.ndarray, piece: tuple[np.ndarray, ...], cost: float, per_year: float
) -> np.ndarray:
    """Annualised net Sharpe (population std, 0 when flat) of each row of `positions` (candidates × pieces)
    held over the window's pieces, entered from flat, paying `cost` per unit of position change."""
    p = positions.astype(np.float64)
    change = np.abs(np.diff(p, axis=1, prepend=0.0))
    return _net_sharpe(p, change, piece, cost, per_year)


def _net_sharpe(
    p: np.ndarray, change: np.ndarray, piece: tuple[np.ndarray, ...], cost: float, per_year: float
) -> np.ndarray:
    """Annualised net Sharpe of positions `p` over the pieces (last axis), `change` the |Δposition| paid at
    each piece's first bar: sums of the net P&L and its square from the pieces' sums (module docstring)."""
    _, length, sums, squares, first = piece
    n = float(length.sum())
    total = p @ sums - cost * change.sum(axis=-1)
    total2 = (
        (p * p) @ squares + cost * cost * (change * change).sum(axis=-1) - 2 * cost * (change * p) @ first
    )
    mean = total / n
    var = np.maximum(total2 / n - mean * mean, 0.0)
    safe = np.where(var > 1e-30, var, 1.0)
    return np.where(var > 1e-30, mean / np.sqrt(safe), 0.0) * math.sqrt(per_year)


def _latents(m: _Market, segs: np.ndarray, s: Scenario, rng: np.random.Generator) -> np.ndarray:
    """Candidates × segments standard normal latents: AR(1) across epochs, the run-wide share, the skill."""
    z = rng.standard_normal((s.epochs, len(segs)))
    rho = s.epoch_correlation
    for e in range(1, s.epochs):
        z[e] = rho * z[e - 1] + math.sqrt(1 - rho * rho) * z[e]
    noise = math.sqrt(s.fold_correlation) * m.common[segs] + math.sqrt(1 - s.fold_correlation) * z
    return s.skill * m.direction[segs] + math.sqrt(1 - s.skill * s.skill) * noise


@dataclass(frozen=True)
class KeptFold:
    """One fold of a run: the kept epoch's tail evidence, its shadow out-of-sample window, and what the
    stitched record needs of the fold's validation window [start, end)."""

    own: WindowEvidence  # the kept epoch's tail
    shadow: WindowEvidence  # the kept epoch's validation window (before any flattening)
    start: int
    end: int
    val: tuple[np.ndarray, ...]  # the validation window's pieces (`_Market.pieces`)
    kept: np.ndarray  # int8: the kept candidate's position per piece
    oracle: np.ndarray  # int8: sign of the planted drift per piece (0: none planted)


def kept_folds(shape: Shape, s: Scenario, rng: np.random.Generator) -> list[KeptFold]:
    """One run's folds: every fold's E candidates scored on its tail, the best kept (ties: the earlier
    epoch, as the trainer), and its shadow out-of-sample Sharpe on the validation window."""
    m = _Market(shape, s, rng)
    edge = NormalDist().inv_cdf((1 + s.flat_share) / 2)
    per_year = shape.bars_per_year
    folds = []
    for fold, (t0, t1, v0, v1) in enumerate(shape.folds):
        tail, val = m.pieces(t0, t1), m.pieces(v0, v1)
        segs, where = np.unique(np.concatenate([tail[0], val[0]]), return_inverse=True)
        latent = _latents(m, segs, s, rng)
        positions = np.where(latent > edge, 1, np.where(latent < -edge, -1, 0)).astype(np.int8)
        tail_pos, val_pos = positions[:, where[: len(tail[0])]], positions[:, where[len(tail[0]) :]]
        sharpes = window_sharpe(tail_pos, tail, s.cost, per_year)
        best = int(np.argmax(sharpes))  # the first of equal maxima: the earlier epoch, as the trainer
        shadow = float(window_sharpe(val_pos[best : best + 1], val, s.cost, per_year)[0])
        oracle = (m.direction[val[0]] * np.sign(s.drift_sharpe)).astype(np.int8)
        folds.append(
            KeptFold(
                WindowEvidence(fold, "tail", t1 - t0, float(sharpes[best]), t1 - 1),
                WindowEvidence(fold, "out_of_sample", v1 - v0, shadow, v1 - 1),
                v0,
                v1,
                val,
                val_pos[best],
                oracle,
            )  # fmt: skip
        )
    return folds


def decide(folds: list[KeptFold], config: DQNConfig, per_year: float) -> tuple[np.ndarray, ...]:
    """Per fold whether it trades by today's gate, by the pooled decision and by the pooled decision with
    earlier tails at full weight, each on what is known at the fold's validation start."""
    rows: list[tuple[bool, bool, bool]] = []
    history: list[WindowEvidence] = []
    for f in folds:
        gate = sharpe_gate(config.select_min_sharpe, config.select_min_t, f.own.bars, per_year)
        pooled = pooled_decision(f.own, history, config, per_year, f.start)
        with_tails = pooled_decision(f.own, history, config, per_year, f.start, earlier_tail_weight=1.0)
        rows.append((f.own.sharpe > gate, pooled.trade, with_tails.trade))
        history += [f.own, f.shadow]
    return tuple(np.array(c, dtype=bool) for c in zip(*rows, strict=True))


def simulate_run(shape: Shape, s: Scenario, config: DQNConfig, rng: np.random.Generator) -> RunOutcome:
    """One run (`kept_folds`) and its decisions (`decide`)."""
    folds = kept_folds(shape, s, rng)
    per_fold, pooled, with_tails = decide(folds, config, shape.bars_per_year)
    best_tail = np.array([f.own.sharpe for f in folds])
    shadow = np.array([f.shadow.sharpe for f in folds])
    return RunOutcome(per_fold, pooled, with_tails, best_tail, shadow)


@dataclass(frozen=True)
class Stitched:
    """A stitched record's annualised net Sharpe, its interval (module docstring) and its bars."""

    sharpe: float
    low: float
    high: float
    bars: int

    @property
    def above_flat(self) -> bool:
        """Above flat (Sharpe 0) outside the interval."""
        return self.low > 0.0

    @property
    def below_flat(self) -> bool:
        """Below flat outside the interval."""
        return self.high < 0.0


def stitched_positions(
    folds: list[KeptFold], trades: np.ndarray, oracle: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Per piece of every fold's validation window, in order: the position held (the kept candidate's, or
    the oracle's with `oracle`, where `trades`; flat elsewhere) and the position before it (flat after a gap
    between windows; an adjacent window takes over the previous position)."""
    held, fresh = [], []
    for k, (f, trade) in enumerate(zip(folds, trades, strict=True)):
        if k and f.start < folds[k - 1].end:
            raise ValueError(f"fold {k}'s validation window overlaps the previous one's")
        positions = f.oracle if oracle else f.kept
        held.append(positions.astype(np.float64) * (1.0 if trade else 0.0))
        first = np.zeros(len(positions), dtype=bool)
        first[0] = not k or f.start > folds[k - 1].end
        fresh.append(first)
    p = np.concatenate(held)
    previous = np.concatenate([[0.0], p[:-1]])
    previous[np.concatenate(fresh)] = 0.0
    return p, previous


def stitched_record(
    folds: list[KeptFold], trades: np.ndarray, cost: float, per_year: float, oracle: bool = False
) -> Stitched:
    """The stitched record over every fold's validation window: the kept candidate's positions (or the
    oracle's, `oracle`) where `trades`, flat elsewhere; net Sharpe and 95% interval (module docstring)."""
    p, previous = stitched_positions(folds, trades, oracle)
    piece = tuple(np.concatenate(column) for column in zip(*(f.val for f in folds), strict=True))
    bars = int(piece[1].sum())
    if not p.any():
        return Stitched(0.0, 0.0, 0.0, bars)  # no position, no spread: flat's own record
    sharpe = float(_net_sharpe(p, np.abs(p - previous), piece, cost, per_year))
    half = NormalDist().inv_cdf(0.975) * math.sqrt(per_year / bars)
    return Stitched(sharpe, sharpe - half, sharpe + half, bars)


def rate(hits: int, n: int) -> dict:
    """A rate with its Wilson 95% interval (binomial: exact for runs; folds of one run are not independent
    under the pooled decision, so its per-fold interval is too narrow)."""
    if n == 0:
        return {"rate": None, "n": 0, "low": None, "high": None}
    p, z = hits / n, 1.959963984540054
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return {"rate": p, "n": n, "low": max(0.0, centre - half), "high": min(1.0, centre + half)}


def summarise(outcomes: list[RunOutcome]) -> dict:
    """Per decision: the share of folds that trade, of runs in which any fold trades, and per fold index;
    the kept epochs' mean tail and shadow out-of-sample Sharpe."""
    out: dict = {}
    shadow = np.array([o.shadow for o in outcomes])
    for name in ("per_fold", "pooled", "pooled_with_tails"):
        trades = np.array([getattr(o, name) for o in outcomes])
        out[name] = {
            "fold_rate": rate(int(trades.sum()), trades.size),
            "run_rate": rate(int(trades.any(axis=1).sum()), len(outcomes)),
            "rate_by_fold": trades.mean(axis=0).round(5).tolist(),
            # What trading earned out of sample: the traded folds' mean Sharpe (flat folds count 0).
            "mean_traded_sharpe": float(np.mean(np.where(trades, shadow, 0.0))),
        }
    out["mean_best_tail_sharpe"] = float(np.mean([o.best_tail for o in outcomes]))
    out["mean_shadow_sharpe"] = float(np.mean([o.shadow for o in outcomes]))
    return out


def coarsened(
    s: Scenario, minutes: int, years: float = 2.0, mode: str | None = None
) -> tuple[Shape, Scenario]:
    """The default shape and `s` at bars of `minutes` minutes: bars a year, window and holding lengths
    divided by `minutes`, the per-bar volatility times its square root. A zero Sharpe's standard error
    sqrt(bars a year / bars), the cost per year (changes a year are kept) and the annual volatility are
    unchanged, so the rates are the minute bars' up to the noise's shape (a sum of t's is nearer normal,
    which over thousands of bars a window does not matter) and the purge (60 bars, now longer). Faster
    by `minutes`: what the tests run. `mode`: the folds' (`default_shape`: the shipped one by default)."""
    shape = default_shape(years, BARS_PER_YEAR / minutes, mode)
    return shape, replace(s, holding_bars=s.holding_bars / minutes, sigma=s.sigma * math.sqrt(minutes))


def simulate(shape: Shape, s: Scenario, runs: int, seed: int, config: DQNConfig | None = None) -> dict:
    """`runs` seeded runs of scenario `s` at `shape`, summarised (`summarise`)."""
    rng = np.random.default_rng(seed)
    cfg = config or DQNConfig()
    return summarise([simulate_run(shape, s, cfg, rng) for _ in range(runs)])
