"""The book: several instruments' stitched out-of-sample records combined into one account.

Inputs, per instrument: its stitched record as plain arrays (timestamps in int64 ns, positions in
{−1, 0, 1}, net returns per bar after that instrument's own costs), its 1-bar forward log return per bar
(for buy-and-hold) and its cost per unit of position change (buy-and-hold pays it once, on entry).

* **Calendar.** The book lives on the union of the instruments' timestamps. An instrument with no bar at
  a time contributes 0 there: its weight is not handed to the others (the book holds less risk then,
  rather than more of what trades).
* **Weights.** Fixed for the whole record, summing to 1. By default equal risk: wᵢ ∝ 1 / σᵢ, where σᵢ is
  the standard deviation of instrument i's 1-bar returns on the bars *before the book's first
  out-of-sample bar* (`volatility_before`; the first fold's training data), so no bar the book trades
  sets its weights. Or stated (`stated_weights`).
* **Per bar.** Book net = Σᵢ wᵢ · netᵢ; gross = Σᵢ wᵢ · posᵢ · returnᵢ; exposure = Σᵢ wᵢ · |posᵢ|;
  turnover = Σᵢ wᵢ · |Δposᵢ|, each instrument's first bar entered from flat.
* **Baselines** are combined the same way with the same weights: each instrument's buy-and-hold (long on
  every bar, the entry paid once at its first bar), flat, and each supervised model (`supervised.
  SUPERVISED_NAMES`) that every instrument's series carries (its positions and net returns as the
  instrument's run scored them), so ridge_15 of the book is ridge_15 of each instrument, weighted.
* **Feature oracle.** The best of the combined supervised models by the book's stitched net Sharpe
  (`book_feature_oracle`): a pick made after the fact on the same windows, so optimistic, labelled as the
  single-instrument run's (`supervised.oracle_label`). It is the best *combined* model, not the model
  that did best on some one instrument.
* **Scoring** reuses the run's: `evaluation.record_metrics` (Sharpe with its interval, PSR against the
  book's buy-and-hold, drawdown, turnover, exposure, hit rate) and `evaluation.compare` (the paired
  bootstrap test of the Sharpe difference, alpha, beta, information ratio). Annualisation: the union
  calendar's bars per year over the record unless stated.

The book's `Record` (for `record_metrics`) holds the book's exposure as its positions: exposure reads
|position| and the hit rate "in the market" reads position ≠ 0, which is what they mean for a book.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from foxhunt.evaluate.evaluation import (
    BUY_AND_HOLD,
    MODEL,
    Evaluation,
    Scored,
    Scoring,
    WindowEvaluation,
    bootstrap_draws,
    compare,
    record_metrics,
)
from foxhunt.evaluate.metrics import Metrics
from foxhunt.evaluate.records import Record, bars_per_year
from foxhunt.evaluate.seed_spread import seed_spread
from foxhunt.evaluate.supervised import SUPERVISED_NAMES, feature_oracle, oracle_label

FLAT = "flat"
BOOK = "book"  # the name the book's figures and telemetry go by beside the instruments'
SERIES_KEYS = ("timestamp", "positions", "net_returns")  # the arrays of one instrument's series
WEIGHT_TOLERANCE = 1e-9  # stated weights must sum to 1 within this


@dataclass(frozen=True)
class InstrumentSeries:
    """One instrument's stitched out-of-sample record, with what its buy-and-hold needs."""

    timestamp: np.ndarray  # int64 ns UTC, strictly increasing
    positions: np.ndarray  # float64 in {−1, 0, 1}
    net_returns: np.ndarray  # float64: position × return − this instrument's costs, per bar
    asset_returns: np.ndarray  # float64: the bar's 1-bar forward log return
    cost_per_unit: float  # this instrument's cost per unit of position change
    # supervised model → (positions, net returns) on the same bars, as the instrument's run scored it
    baselines: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


@dataclass(frozen=True)
class BookSeries:
    """One policy combined across the instruments, per bar of the union calendar."""

    timestamp: np.ndarray
    gross: np.ndarray
    net: np.ndarray
    exposure: np.ndarray  # Σ wᵢ |posᵢ|
    changes: np.ndarray  # Σ wᵢ |Δposᵢ|


@dataclass(frozen=True)
class BookEvaluation:
    """The book's weights, its window (model and baselines scored, standings) and each policy's series."""

    weights: dict[str, float]
    window: WindowEvaluation  # fold −1: the stitched record; policies MODEL, BUY_AND_HOLD, FLAT
    series: dict[str, BookSeries]  # by policy


def instrument_series(
    series: Mapping[str, np.ndarray], asset_returns: np.ndarray, cost_per_unit: float
) -> InstrumentSeries:
    """An `InstrumentSeries` from the trainer's plain dict (`SERIES_KEYS`, and ``<model>/positions``,
    ``<model>/net_returns`` for each supervised model it holds), checked: one length, increasing
    timestamps, positions in {−1, 0, 1}."""
    missing = [key for key in SERIES_KEYS if key not in series]
    if missing:
        raise ValueError(f"an instrument's series lacks {', '.join(missing)}")
    out = InstrumentSeries(
        timestamp=np.asarray(series["timestamp"], dtype=np.int64),
        positions=np.asarray(series["positions"], dtype=np.float64),
        net_returns=np.asarray(series["net_returns"], dtype=np.float64),
        asset_returns=np.asarray(asset_returns, dtype=np.float64),
        cost_per_unit=float(cost_per_unit),
        baselines={
            name: (
                np.asarray(series[f"{name}/positions"], dtype=np.float64),
                np.asarray(series[f"{name}/net_returns"], dtype=np.float64),
            )
            for name in SUPERVISED_NAMES
            if f"{name}/positions" in series and f"{name}/net_returns" in series
        },
    )
    n = out.timestamp.size
    supervised = [array for pair in out.baselines.values() for array in pair]
    if {a.size for a in (out.positions, out.net_returns, out.asset_returns, *supervised)} != {n}:
        raise ValueError("an instrument's timestamps, positions, net and asset returns differ in length")
    if n > 1 and not np.all(np.diff(out.timestamp) > 0):
        raise ValueError("an instrument's timestamps are not strictly increasing")
    held = [out.positions, *(positions for positions, _ in out.baselines.values())]
    if not all(np.isin(positions, (-1.0, 0.0, 1.0)).all() for positions in held):
        raise ValueError("an instrument's positions are not all −1, 0 or 1")
    return out


def book_start(instruments: Mapping[str, InstrumentSeries]) -> int:
    """The book's first out-of-sample bar: the earliest first timestamp of any instrument's record."""
    firsts = [int(s.timestamp[0]) for s in instruments.values() if s.timestamp.size]
    if not firsts:
        raise ValueError("no instrument has an out-of-sample bar")
    return min(firsts)


def volatility_before(
    timestamp: np.ndarray, returns: np.ndarray, cutoff_ns: int, *, periods_per_year: float | None = None
) -> float:
    """The population standard deviation of the 1-bar `returns` at bars strictly before `cutoff_ns`
    (the book's start: the weights never see a bar the book trades); × sqrt(periods_per_year) when given,
    so instruments with different sessions are compared per year rather than per bar."""
    before = np.asarray(returns, dtype=np.float64)[np.asarray(timestamp, dtype=np.int64) < cutoff_ns]
    if before.size < 2:
        raise ValueError(f"{before.size} bars before the book's start: too few to measure a volatility")
    sigma = float(before.std())
    return sigma * float(np.sqrt(periods_per_year)) if periods_per_year is not None else sigma


def inverse_vol_weights(volatilities: Mapping[str, float]) -> dict[str, float]:
    """Equal-risk weights: wᵢ = (1 / σᵢ) / Σⱼ (1 / σⱼ), by instrument."""
    bad = [name for name, sigma in volatilities.items() if not (np.isfinite(sigma) and sigma > 0)]
    if bad or not volatilities:
        raise ValueError(f"volatility of {bad[0]} is not a positive number" if bad else "no instrument")
    inverse = {name: 1.0 / float(sigma) for name, sigma in volatilities.items()}
    total = sum(inverse.values())
    return {name: value / total for name, value in inverse.items()}


def equal_risk_weights(
    history: Mapping[str, tuple[np.ndarray, np.ndarray]],
    start_ns: int,
    periods_per_year: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """`inverse_vol_weights` of each instrument's `volatility_before(timestamp, returns, start_ns)`, where
    `history[name]` is (timestamps, 1-bar returns) of its loaded data and `start_ns` the book's first
    out-of-sample bar (`book_start`); per year where `periods_per_year[name]` is given."""
    per_year = periods_per_year or {}
    return inverse_vol_weights(
        {
            name: volatility_before(stamps, returns, start_ns, periods_per_year=per_year.get(name))
            for name, (stamps, returns) in history.items()
        }
    )


def stated_weights(weights: Mapping[str, float]) -> dict[str, float]:
    """Stated weights, checked: each ≥ 0, summing to 1 (within `WEIGHT_TOLERANCE`)."""
    if not weights or any(not (np.isfinite(w) and w >= 0) for w in weights.values()):
        raise ValueError("stated weights must be non-negative numbers, one per instrument")
    if abs(sum(weights.values()) - 1.0) > WEIGHT_TOLERANCE:
        raise ValueError(f"stated weights sum to {sum(weights.values())}, not 1")
    return {name: float(w) for name, w in weights.items()}


def union_calendar(instruments: Mapping[str, InstrumentSeries]) -> np.ndarray:
    """Every timestamp at which some instrument has a bar, increasing."""
    stamps = [s.timestamp for s in instruments.values()]
    return np.unique(np.concatenate(stamps)) if stamps else np.zeros(0, dtype=np.int64)


def _entry_changes(positions: np.ndarray) -> np.ndarray:
    """|Δposition| per bar, the first bar entered from flat."""
    return np.abs(np.diff(positions, prepend=0.0))


def _policy_arrays(s: InstrumentSeries, policy: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(positions, gross, net) of one instrument under `policy` on its own bars."""
    if policy == MODEL:
        return s.positions, s.positions * s.asset_returns, s.net_returns
    if policy == BUY_AND_HOLD:
        held = np.ones_like(s.asset_returns)
        return held, s.asset_returns, s.asset_returns - s.cost_per_unit * _entry_changes(held)
    if policy == FLAT:
        zero = np.zeros_like(s.asset_returns)
        return zero, zero, zero
    if policy in s.baselines:
        positions, net = s.baselines[policy]
        return positions, positions * s.asset_returns, net
    raise ValueError(f"unknown policy {policy!r}")


def calendar_places(instruments: Mapping[str, InstrumentSeries]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The union calendar and each instrument's bars' places in it."""
    calendar = union_calendar(instruments)
    return calendar, {name: np.searchsorted(calendar, s.timestamp) for name, s in instruments.items()}


def combine(
    instruments: Mapping[str, InstrumentSeries],
    weights: Mapping[str, float],
    policy: str = MODEL,
    places: tuple[np.ndarray, Mapping[str, np.ndarray]] | None = None,
) -> BookSeries:
    """`policy` (MODEL, BUY_AND_HOLD, FLAT or a supervised model every instrument holds) of every instrument, weighted, on the union calendar; an
    instrument without a bar at a time adds 0 there. `places`: `calendar_places(instruments)`, where the
    caller combines several policies (the union of millions of timestamps is most of a combination's time)."""
    if set(weights) != set(instruments):
        raise ValueError(f"weights for {sorted(weights)}, instruments {sorted(instruments)}: not the same")
    calendar, at_of = places if places is not None else calendar_places(instruments)
    gross, net, exposure, changes = (np.zeros(calendar.size) for _ in range(4))
    for name, s in instruments.items():
        at = at_of[name]
        positions, own_gross, own_net = _policy_arrays(s, policy)
        w = weights[name]
        gross[at] += w * own_gross
        net[at] += w * own_net
        exposure[at] += w * np.abs(positions)
        changes[at] += w * _entry_changes(positions)
    return BookSeries(calendar, gross, net, exposure, changes)


def book_record(series: BookSeries, periods_per_year: float) -> Record:
    """The book's `Record` for `record_metrics`: the exposure as positions (see the module's note)."""
    n = series.timestamp.size
    return Record(
        index=np.arange(n, dtype=np.int64),
        timestamp=series.timestamp,
        positions=series.exposure,
        returns=series.gross,
        fold=np.zeros(n, dtype=np.int64),
        bars_per_year=periods_per_year,
    )


def _score(series: BookSeries, record: Record, scoring: Scoring, bench: Evaluation | None) -> Scored:
    """Gross and net metrics of one combined policy, with its net draws and P&L for the paired tests."""
    turnover = float(series.changes.sum())
    gross_bench = bench.gross.sharpe_per_period if bench else 0.0
    net_bench = bench.net.sharpe_per_period if bench else 0.0
    net_draws = bootstrap_draws(series.net, scoring)
    evaluation = Evaluation(
        gross=record_metrics(record, series.gross, scoring, gross_bench, turnover=turnover),
        net=record_metrics(record, series.net, scoring, net_bench, net_draws, turnover=turnover),
    )
    return Scored(evaluation, net_draws, series.net)


def book_supervised(instruments: Mapping[str, InstrumentSeries]) -> tuple[str, ...]:
    """The supervised models every instrument's series holds, in `SUPERVISED_NAMES` order (a model some
    instrument lacks cannot be combined with the book's weights, so it is left out)."""
    return tuple(name for name in SUPERVISED_NAMES if all(name in s.baselines for s in instruments.values()))


def evaluate_book(
    instruments: Mapping[str, InstrumentSeries],
    weights: Mapping[str, float],
    scoring: Scoring,
    *,
    periods_per_year: float | None = None,
) -> BookEvaluation:
    """The book's record scored beside its baselines (buy-and-hold, flat and the supervised models every
    instrument holds, each combined with the same `weights`), and the paired comparisons against each;
    PSR against the book's buy-and-hold.

    `scoring`'s cost and execution are not applied again (the instruments' net returns hold their costs);
    its bootstrap settings are. `periods_per_year`: default the union calendar's bars per year.
    """
    if scoring.execution is not None:
        raise ValueError("the book combines net returns already costed: scoring.execution must be None")
    names = (MODEL, BUY_AND_HOLD, FLAT, *book_supervised(instruments))
    places = calendar_places(instruments)
    series = {policy: combine(instruments, weights, policy, places) for policy in names}
    calendar = series[MODEL].timestamp
    if calendar.size == 0:
        raise ValueError("no instrument has an out-of-sample bar")
    periods = bars_per_year(calendar) if periods_per_year is None else periods_per_year
    records = {policy: book_record(s, periods) for policy, s in series.items()}
    bench = _score(series[BUY_AND_HOLD], records[BUY_AND_HOLD], scoring, None)
    scored = {
        p: bench if p == BUY_AND_HOLD else _score(series[p], records[p], scoring, bench.evaluation)
        for p in names
    }
    policies = {p: scored[p].evaluation for p in names}
    baselines = {p: policies[p] for p in names if p != MODEL}
    window = WindowEvaluation(
        fold=-1,
        start_ns=int(calendar[0]),
        end_ns=int(calendar[-1]),
        n_bars=int(calendar.size),
        policies=policies,
        standings=compare(policies[MODEL], baselines, records, scoring, scored),
        best_baseline=max(baselines, key=lambda p: baselines[p].net.sharpe),
    )
    return BookEvaluation(dict(weights), window, series)


def book_feature_oracle(book: BookEvaluation) -> dict | None:
    """The book's feature oracle: the combined supervised model with the best stitched net Sharpe, its
    Sharpe and bootstrap interval, how many it was picked from, the label the single-instrument run uses,
    and the model's share of it (the book's net Sharpe over the oracle's; None unless the oracle's is
    positive). None when the book holds no supervised model."""
    sharpes = {n: p.net.sharpe for n, p in book.window.policies.items() if n in SUPERVISED_NAMES}
    oracle = feature_oracle(sharpes)
    if oracle is None:
        return None
    name, sharpe = oracle
    net = book.window.policies[name].net
    return {
        "name": name,
        "sharpe": sharpe,
        "ci": [net.sharpe_ci_low, net.sharpe_ci_high],
        "models": len(sharpes),
        "label": oracle_label(len(sharpes)),
        "share": book_net(book).sharpe / sharpe if sharpe > 0 else None,
    }


def book_to_dict(book: BookEvaluation) -> dict:
    """The book for report.json: its weights, its window (`reports.window_to_dict`: each policy's gross
    and net figures, the standings; `reports.window_from_dict` reads it back) and its feature oracle
    (`book_feature_oracle`, None without supervised models)."""
    from foxhunt.evaluate.reports import window_to_dict

    return {
        "weights": dict(book.weights),
        "window": window_to_dict(book.window),
        "feature_oracle": book_feature_oracle(book),
    }


def book_net(book: BookEvaluation) -> Metrics:
    """The book's stitched net figures (what a seed's spread and the search read)."""
    return book.window.policies[MODEL].net


def book_seed_spread(books: Mapping[int, BookEvaluation], left_out: Mapping[int, str] | None = None) -> dict:
    """The seeds' spread of the book's stitched net Sharpe (`seed_spread.seed_spread`), seed → book, with
    the seeds `left_out` of it (seed → why); the seeds' books should share their weights (the same data
    before the start gives the same weights)."""
    return seed_spread({seed: book_net(book) for seed, book in books.items()}, left_out)
