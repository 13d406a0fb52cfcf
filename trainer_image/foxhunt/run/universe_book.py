"""The book of a universe run: its instruments' stitched out-of-sample records combined (evaluate/book.py).

Each instrument's series (`stitched_series`: timestamps, positions, net returns after its own
costs) is taken with its 1-bar forward log returns at those bars (`targets[:, 0]` of its fxcache, for
buy-and-hold) and the cost per unit its stitched record paid. The weights are equal risk, measured per
year (σ of the 1-bar returns × √(bars per year), so an exchange's sessions and FX's 24×5 compare) on the
bars before the book's first out-of-sample bar, as book.py states. An instrument with fewer than two bars
there (its data begins after the book has started) is measured on its bars before its own first
out-of-sample bar instead: none of those is a bar the book trades. `book["volatility_before"]` names each
instrument's cutoff.

What a run writes: summary.json's `book` and ``book.json`` (the same dict: the weights, the book's window
with its record's gross and net figures, its baselines, buy-and-hold, flat and the supervised models of the
series, each combined with the same weights, and the paired comparisons against them; `feature_oracle`, the
best of the combined supervised models with its interval and the model's share of it), one console line, and with `--seeds K` the seeds'
spread of the book's stitched net Sharpe (`book_seed_spread`); with three seeds or more that hold every
instrument, also the book of their majority (`majority_series`: per instrument, bar by bar, the side more
than half of them hold, else flat), with its console line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from foxhunt import storage, strict_json
from foxhunt.config import MAJORITY, MIN_SEEDS_FOR_MAJORITY, EvalConfig, RunConfig
from foxhunt.data.bars import iso_utc
from foxhunt.evaluate.book import (
    BookEvaluation,
    InstrumentSeries,
    book_feature_oracle,
    book_net,
    book_seed_spread,
    book_start,
    book_to_dict,
    evaluate_book,
    instrument_series,
    inverse_vol_weights,
    volatility_before,
)
from foxhunt.evaluate.evaluation import BUY_AND_HOLD, MODEL, RunEvaluation, Scoring
from foxhunt.evaluate.records import bars_per_year
from foxhunt.evaluate.seed_spread import (
    majority_figures,
    majority_line,
    majority_record,
    result_label,
)
from foxhunt.run.fold import Progress
from foxhunt.run.sinks.telemetry import RunMetrics
from foxhunt.run.sinks.telemetry_reads import stitched_figures

BOOK_FILE = "book.json"
History = Mapping[str, tuple[np.ndarray, np.ndarray]]  # name → (timestamps ns, 1-bar forward log returns)


def book_scoring(config: EvalConfig, seed: int) -> Scoring:
    """How the book is scored: the run's bootstrap (seeded with the run's seed); no costs applied again
    (the instruments' net returns hold theirs)."""
    return Scoring(cost=config.cost, spread=config.spread, seed=seed, execution=None)


def book_instruments(
    series: Mapping[str, Mapping[str, np.ndarray]], history: History, costs: Mapping[str, float]
) -> dict[str, InstrumentSeries]:
    """Each traded instrument's `InstrumentSeries`: its series, its forward returns at those bars (looked
    up by timestamp in its loaded data) and its cost per unit of position change."""
    out = {}
    for name, arrays in series.items():
        stamps, returns = history[name]
        at = np.searchsorted(stamps, arrays["timestamp"])
        out[name] = instrument_series(arrays, np.asarray(returns)[at], costs[name])
    return out


def volatility_cutoffs(instruments: Mapping[str, InstrumentSeries], history: History) -> dict[str, int]:
    """Per instrument, the time (ns) before which its volatility is measured: the book's first
    out-of-sample bar, or its own first one where it has fewer than two bars before the book's."""
    start = book_start(instruments)
    cutoffs = {}
    for name, s in instruments.items():
        enough = int(np.count_nonzero(np.asarray(history[name][0]) < start)) >= 2
        cutoffs[name] = start if enough else int(s.timestamp[0])
    return cutoffs


def universe_weights(cutoffs: Mapping[str, int], history: History) -> dict[str, float]:
    """Equal-risk weights: 1 / (σ per year of each instrument's 1-bar returns before its cutoff), summing
    to 1."""
    sigmas = {}
    for name, cutoff in cutoffs.items():
        stamps, returns = (np.asarray(a) for a in history[name])
        per_year = bars_per_year(stamps[stamps < cutoff])
        sigmas[name] = volatility_before(stamps, returns, cutoff, periods_per_year=per_year)
    return inverse_vol_weights(sigmas)


def universe_book(
    series: Mapping[str, Mapping[str, np.ndarray]],
    history: History,
    costs: Mapping[str, float],
    scoring: Scoring,
) -> tuple[BookEvaluation, dict[str, int]]:
    """The book of the traded instruments' `series` (equal-risk weights, module docstring), and each
    instrument's volatility cutoff."""
    instruments = book_instruments(series, history, costs)
    cutoffs = volatility_cutoffs(instruments, history)
    return evaluate_book(instruments, universe_weights(cutoffs, history), scoring), cutoffs


def book_entry(book: BookEvaluation, cutoffs: Mapping[str, int]) -> dict:
    """summary.json's `book` (and book.json): `book_to_dict`, the book's stitched net Sharpe, and each
    instrument's volatility cutoff (ISO-8601 UTC)."""
    return {
        **book_to_dict(book),
        "stitched_net_sharpe": book.window.policies[MODEL].net.sharpe,
        "volatility_before": {name: iso_utc(ns) for name, ns in cutoffs.items()},
    }


def book_line(book: BookEvaluation) -> str:
    """The book's console line, beside each instrument's."""
    net = book.window.policies[MODEL].net
    bench = book.window.policies[BUY_AND_HOLD].net
    vs = book.window.standings[BUY_AND_HOLD]
    weights = ", ".join(f"{name} {w:.2f}" for name, w in book.weights.items())
    return (
        f"book: stitched net Sharpe {net.sharpe:.2f} [{net.sharpe_ci_low:.2f}, {net.sharpe_ci_high:.2f}] "
        f"over {book.window.n_bars:,} bars; buy-and-hold {bench.sharpe:.2f}, paired difference "
        f"{vs.difference:+.2f} [{vs.difference_ci_low:+.2f}, {vs.difference_ci_high:+.2f}]: {vs.verdict}; "
        f"equal-risk weights {weights}{oracle_words(book)}"
    )


def oracle_words(book: BookEvaluation) -> str:
    """The book's feature oracle in the console line's words (empty without supervised models)."""
    oracle = book_feature_oracle(book)
    if oracle is None:
        return ""
    low, high = oracle["ci"]
    share = "" if oracle["share"] is None else f", the book earns {oracle['share']:.0%} of it"
    return (
        f"; feature oracle ({oracle['label']}: {oracle['name']}) {oracle['sharpe']:.2f} "
        f"[{low:.2f}, {high:.2f}]{share}"
    )


def stitched_series(evaluation: RunEvaluation) -> dict[str, np.ndarray]:
    """The stitched record as plain arrays, one entry per bar: ``timestamp``, the model's ``positions`` and
    ``net_returns`` (after the instrument's own costs), and each baseline's as ``<baseline>/positions`` and
    ``<baseline>/net_returns`` (buy-and-hold, ridge, ... over the same bars: what a book combines too)."""
    out = {"timestamp": np.asarray(evaluation.records[MODEL].timestamp, dtype=np.int64)}
    for policy, record in evaluation.records.items():
        prefix = "" if policy == MODEL else f"{policy}/"
        net = record.pnl(evaluation.cost_per_unit, evaluation.execution)
        out[f"{prefix}positions"] = np.asarray(record.positions, dtype=np.float64)
        out[f"{prefix}net_returns"] = np.asarray(net, dtype=np.float64)
    return out


def majority_series(by_seed: Sequence[RunEvaluation]) -> dict[str, np.ndarray]:
    """An instrument's `stitched_series` of its seeds' majority (`seed_spread.majority_record`), its net
    returns after the instrument's own costs; the baselines' are the first seed's (the same for every seed)."""
    first = by_seed[0]
    voted = majority_record(by_seed)
    net = voted.pnl(first.cost_per_unit, first.execution)
    return {
        **stitched_series(first),
        "positions": voted.positions,
        "net_returns": np.asarray(net, np.float64),
    }


def majority_book(
    by_seed: Sequence[Mapping[str, RunEvaluation]], history: History, scoring: Scoring
) -> BookEvaluation:
    """The book of the seeds' majority, instrument by instrument (`majority_series`), weighted as theirs."""
    names = list(by_seed[0])
    series = {name: majority_series([seed[name] for seed in by_seed]) for name in names}
    costs = {name: by_seed[0][name].cost_per_unit for name in names}
    return universe_book(series, history, costs, scoring)[0]


def write_book(
    evaluations: dict[int, dict[str, RunEvaluation]],
    history: dict[str, tuple[np.ndarray, np.ndarray]],
    seeds: list[int],
    left_out: dict[int, str],
    settings: RunConfig,
    out_uri: str,
    progress: Progress,
    metrics: RunMetrics,
) -> tuple[dict, BookEvaluation]:
    """The book of the first seed's stitched records (`universe_book`; with `--result majority`, of the
    seeds' vote: `majority_book`), written to book.json, printed and told to `metrics`; with several
    seeds, the spread of every seed's book that holds every instrument, naming the seeds `left_out` of it
    (seed → why it lacks a stitched record). Its entry (summary.json's `book`) and the book (for its
    picture)."""
    scoring = book_scoring(settings.eval, settings.seed)
    books: dict[int, BookEvaluation] = {}
    cutoffs: dict[str, int] = {}
    for m, by_name in evaluations.items():
        if by_name.keys() == evaluations[0].keys():
            series = {name: stitched_series(e) for name, e in by_name.items()}
            costs = {name: e.cost_per_unit for name, e in by_name.items()}
            books[seeds[m]], cutoffs = universe_book(series, history, costs, scoring)
            if len(seeds) == 1:
                break
    voters = [m for m in evaluations if seeds[m] in books]
    voted = None
    if len(voters) >= MIN_SEEDS_FOR_MAJORITY:
        voted = majority_book([evaluations[m] for m in voters], history, scoring)
    book = voted if voted is not None and settings.result == MAJORITY else books[seeds[0]]
    entry = book_entry(book, cutoffs)
    if len(seeds) > 1:
        entry["seed_spread"] = book_seed_spread(books, {s: left_out[s] for s in seeds if s not in books})
    vote = None
    if voted is not None:
        vote = entry["seed_spread"]["majority"] = majority_figures(
            book_net(voted), [seeds[m] for m in voters]
        )
    if settings.result == MAJORITY:  # whose book this is, as the instruments' records say
        entry["result"] = result_label([seeds[m] for m in voters], seeds[0])
    storage.write_bytes(storage.join(out_uri, BOOK_FILE), strict_json.json_bytes(entry))
    progress(book_line(book))
    if vote is not None:
        progress(f"book: {majority_line(vote)}")
    metrics.book_scored(stitched_figures(book.window))
    return entry, book
