"""The pooled trading decision: whether a fold trades on all the evidence available at its start.

Today's decision (`select_pool` "fold", `tail_gate`) looks at one window: the fold's own training
tail, at the default (expanding) folds a month at the first fold (a zero Sharpe's standard error about
3.5: no real edge clears a 3-error gate there), growing to six months at the 21st (1.4). The pooled
decision (`select_pool` "pooled") adds what earlier folds showed out of sample and asks the question of
the learner at these settings, not of one tail.

The evidence of fold k (each a `WindowEvidence`, its annualised net Sharpe over its bars):
- its own tail: the best of E epochs' tail Sharpes, the window the epoch was picked on, so biased
  upward (selection); it enters because it is the only evidence fold 0 has, and its weight shrinks
  as out-of-sample bars accumulate;
- each earlier fold j's OUT-OF-SAMPLE window: what the policy fold j chose by its own tail earned on
  fold j's validation window, recorded whether or not fold j then went flat (a "shadow" record).
  That policy was chosen before its window was seen, so its Sharpe is unbiased evidence of an edge.

Earlier folds' TAILS are left out (weight 0 by default, `earlier_tail_weight`): each is a best of E
epochs on that tail, biased upward by a few of its standard errors. That bias does not shrink as folds
pool (every tail carries it) while the pooled standard error does, so the false-positive rate of a
decision that pools them grows towards 1 with the fold count; bench/gate_false_positive.py measures
it (the `pooled_with_tails` rows: at the default folds, two thirds of noise's folds trade, against 0.46%
without; bench/results/gate_false_positive-cpu-2026-12-04-8fe2162.json). A fold's tail also re-scores
bars an earlier fold's out-of-sample window already covers.

No look-ahead, the rule: a window is used only when its last bar (`end_ns`) lies strictly before
`before_ns`, the first bar of fold k's validation window, and it belongs to fold k itself (its tail)
or to an earlier fold (j < k); any other window is ignored and `PooledDecision.ignored` counts it.

Pooling is by bars: under no edge and iid per-bar returns, a window's annualised Sharpe has standard
error sqrt(bars a year / bars), so the bar-weighted mean of the windows' Sharpes is the efficient
pooled estimate, with standard error sqrt(bars a year / total bars). The fold trades when
- pooled Sharpe > `select_min_sharpe` + `select_pool_t` · that error, and
- its own best tail Sharpe > `select_pool_guard` (the guard against churn: a fold whose own tail
  loses does not trade on the others' evidence).
Without earlier evidence, and with `select_pool_t` = `select_min_t` and a guard at or under the gate,
this is today's `tail_gate` decision exactly. Torch-free: the simulation and the walk share it.

Several instruments in one fold: their bars are not independent evidence when their returns move
together (two FX majors), and counting them as such would shrink the gate by sqrt(K) on one idea seen
K times. A fold's bars count at `effective_share` of their number: K_eff / K, with the effective number
of instruments K_eff = K / (1 + (K − 1) ρ̄) for ρ̄ the mean absolute pairwise correlation of their 1-bar
returns (1 for one instrument; 1 / K for K copies of one series).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import NamedTuple

from foxhunt.config import DQNConfig

KINDS = ("tail", "out_of_sample")


class WindowName(NamedTuple):
    """A window by fold and kind: how a pooled decision names the windows it used."""

    fold: int
    kind: str


@dataclass(frozen=True)
class WindowEvidence:
    """One window's evidence: a fold's net Sharpe over `bars` bars ending at `end_ns` (its last bar)."""

    fold: int
    kind: str  # "tail" (the fold's best epoch on its training tail) or "out_of_sample" (shadow record)
    bars: int
    sharpe: float  # annualised net Sharpe after the evaluation cost
    end_ns: int  # time of the window's last bar, ns

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"window kind {self.kind!r}: expected one of {', '.join(KINDS)}")
        if self.bars < 1:
            raise ValueError(f"window of fold {self.fold}: {self.bars} bars, need at least 1")

    @property
    def name(self) -> WindowName:
        """The window by fold and kind."""
        return WindowName(self.fold, self.kind)


@dataclass(frozen=True)
class PooledDecision:
    """Whether a fold trades on the pooled evidence, and the figures it was decided on (in report.json's
    order: `decision_dict`)."""

    trade: bool
    pooled_sharpe: float  # bar-weighted mean Sharpe of the windows used
    gate: float  # the pooled Sharpe it had to exceed
    bars: float  # bars pooled (earlier tails count at their weight)
    own_tail_sharpe: float
    guard: float  # the own tail Sharpe it had to exceed
    windows: tuple[WindowName, ...]  # the windows used, own tail first
    ignored: int  # windows offered but not usable (at/after before_ns, a later fold, an earlier tail)
    reason: str


def zero_sharpe_error(bars: float, bars_per_year: float) -> float:
    """Standard error of an annualised zero Sharpe over `bars` iid bars: sqrt(bars a year / bars)."""
    return math.sqrt(bars_per_year / bars) if bars > 0 else math.inf


def effective_share(correlations: Sequence[Sequence[float]]) -> float:
    """K_eff / K for K instruments whose 1-bar returns have this (K, K) correlation matrix: 1 / (1 + (K − 1)
    ρ̄), ρ̄ the mean |ρ| off the diagonal (module docstring); 1 for a single instrument."""
    k = len(correlations)
    if k <= 1:
        return 1.0
    off = [abs(float(correlations[i][j])) for i in range(k) for j in range(k) if i != j]
    mean = min(sum(off) / len(off), 1.0)
    return 1.0 / (1.0 + (k - 1) * mean)


def evidence_bars(bars: int, share: float) -> int:
    """`bars` of a fold's instruments counted as independent evidence: × `share` (`effective_share`), at
    least 1; one instrument's (share 1) exactly."""
    return bars if share == 1.0 else max(1, round(bars * share))


def sharpe_gate(min_sharpe: float, t: float, bars: float, bars_per_year: float) -> float:
    """`min_sharpe` plus `t` standard errors of a zero Sharpe over `bars` (t = 0: `min_sharpe` alone)."""
    return min_sharpe + (t * zero_sharpe_error(bars, bars_per_year) if t > 0 else 0.0)


def usable(window: WindowEvidence, fold: int, before_ns: int) -> bool:
    """The look-ahead rule: `window` ends strictly before `before_ns` (fold `fold`'s first validation bar)
    and belongs to an earlier fold, or is fold `fold`'s own tail."""
    earlier = window.fold < fold or (window.fold == fold and window.kind == "tail")
    return earlier and window.end_ns < before_ns


def pooled_decision(
    own_tail: WindowEvidence,
    earlier: Iterable[WindowEvidence],
    config: DQNConfig,
    bars_per_year: float,
    before_ns: int,
    earlier_tail_weight: float = 0.0,
) -> PooledDecision:
    """Whether fold `own_tail.fold` trades on its own tail and the usable `earlier` windows (module
    docstring: the rule, the weights, the gate and the guard). Earlier folds' tails count at
    `earlier_tail_weight` of their bars (0: left out, the default; the simulation measures 1)."""
    fold = own_tail.fold
    if own_tail.kind != "tail" or not usable(own_tail, fold, before_ns):
        raise ValueError(f"fold {fold}: the own tail must be a tail ending before the validation start")
    offered = list(earlier)
    weighted = [(own_tail, float(own_tail.bars))]
    for w in offered:
        weight = earlier_tail_weight if w.kind == "tail" else 1.0
        if w.fold < fold and usable(w, fold, before_ns) and weight > 0:
            weighted.append((w, weight * w.bars))
    bars = sum(b for _, b in weighted)
    own = own_tail.sharpe
    pooled = sum(b * w.sharpe for w, b in weighted) / bars if math.isfinite(own) else -math.inf
    gate = sharpe_gate(config.select_min_sharpe, config.select_pool_t, bars, bars_per_year)
    guard = config.select_pool_guard
    trade = pooled > gate and own > guard
    return PooledDecision(
        trade=trade,
        pooled_sharpe=pooled,
        gate=gate,
        bars=bars,
        windows=tuple(w.name for w, _ in weighted),
        own_tail_sharpe=own,
        guard=guard,
        reason=_reason(trade, pooled, gate, own, guard, len(weighted)),
        ignored=len(offered) - (len(weighted) - 1),
    )


def _reason(trade: bool, pooled: float, gate: float, own: float, guard: float, windows: int) -> str:
    """The decision in words, for the console and report.json."""
    evidence = f"pooled Sharpe {pooled:.2f} over {windows} window{'s' if windows > 1 else ''}"
    if trade:
        return (
            f"trades: {evidence} clears the gate {gate:.2f}, own tail {own:.2f} above the guard {guard:.2f}"
        )
    if not pooled > gate:
        return f"flat: {evidence} does not clear the gate {gate:.2f}"
    return f"flat: own tail Sharpe {own:.2f} not above the guard {guard:.2f} (pooled {pooled:.2f} cleared {gate:.2f})"


# report.json's names of the fields it spells otherwise (its keys since the pooled decision shipped).
DECISION_KEYS = {"gate": "gate_sharpe", "guard": "guard_sharpe"}


def evidence_dict(window: WindowEvidence) -> dict:
    """A window's evidence for report.json (`selection.out_of_sample`): its fields."""
    return asdict(window)


def evidence_from_dict(record: Mapping | None) -> WindowEvidence | None:
    """The window a report.json recorded (None when it recorded none, or its Sharpe is undefined)."""
    if not record or record.get("sharpe") is None:
        return None
    return WindowEvidence(
        int(record["fold"]),
        str(record["kind"]),
        int(record["bars"]),
        float(record["sharpe"]),
        int(record["end_ns"]),
    )


def decision_dict(decision: PooledDecision) -> dict:
    """A pooled decision for report.json (`selection.pooled`): its fields (gate and guard as `DECISION_KEYS`
    names them), the windows it pooled by fold and kind."""
    record = {DECISION_KEYS.get(f.name, f.name): getattr(decision, f.name) for f in fields(decision)}
    record["windows"] = [list(w) for w in decision.windows]
    return record


def decision_from_dict(record: Mapping | None) -> PooledDecision | None:
    """The pooled decision a report.json recorded (`decision_dict`; None when it recorded none; an
    undefined figure, null in the file, as NaN)."""
    if not record:
        return None
    return PooledDecision(
        trade=bool(record["trade"]),
        pooled_sharpe=number(record["pooled_sharpe"]),
        gate=number(record["gate_sharpe"]),
        bars=number(record["bars"]),
        own_tail_sharpe=number(record["own_tail_sharpe"]),
        guard=number(record["guard_sharpe"]),
        windows=tuple(WindowName(int(fold), str(kind)) for fold, kind in record["windows"]),
        ignored=int(record["ignored"]),
        reason=str(record["reason"]),
    )


def number(value: float | None) -> float:
    """A figure as report.json holds it, read back: null (undefined: foxhunt.strict_json) as NaN."""
    return math.nan if value is None else float(value)
