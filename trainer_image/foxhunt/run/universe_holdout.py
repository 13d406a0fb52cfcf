"""The held-out final period of a universe run (`--holdout-days D` with several --fxcache).

The cut. One time for the whole universe: the latest timestamp of any instrument less D days
(`holdout_cut`), so every instrument's held-out bars share the same dates: those after the cut. As in
one instrument's run (`run/holdout.py`), the folds are planned only on each instrument's rows before its
first held-out row less `holdout.HOLDOUT_GAP` rows (`universe_planning_rows`, then
`data.universe.universe_folds` on those rows: `plan_universe`), so no target of a row a fold trains or
validates on reaches a held-out bar.

The held-out fold. After the folds, one more universe fold (`holdout_fold`, numbered after them) trains
one trainer on each instrument's `train_days` before the cut (from its first row in expanding mode),
purged as every fold is, and validates each instrument on its held-out rows alone. An instrument with
fewer held-out bars than `min_val_rows` (or fewer training rows than `min_train_rows`) takes no part,
with a warning line naming it; when none can take part the run is refused before any work. With
`--seeds K` the first seed's is the headline; with `--result majority`, per instrument, the vote of the
seeds that walked every fold (`voted_instruments`), as one instrument's held-out fold does.

What is written (`run_universe_holdout`): the fold's files under ``holdout/instruments/<name>/fold_N/``;
per instrument ``instruments/<name>/holdout.json`` (`holdout.holdout_record`: its held-out window beside
the baselines, with its stitched folds' net Sharpe as the in-search figure); the book of the held-out
series (`evaluate.book.evaluate_book`, with the run's book's equal-risk weights, renormalised over the
instruments taking part) in ``holdout.json``; summary.json's `holdout` (each instrument's figures, the
book's: `book.net_sharpe`); a console line per instrument and one for the book; the telemetry's held-out
gauges per instrument and under ``instrument="book"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from foxhunt import storage, strict_json
from foxhunt.config import NS_PER_DAY, FoldConfig, RunConfig
from foxhunt.data.bars import iso_utc
from foxhunt.data.folds import FoldRange
from foxhunt.data.universe import UniverseFold, instruments_in_no_fold, universe_folds
from foxhunt.errors import BadInput
from foxhunt.evaluate.book import BookEvaluation, book_to_dict, evaluate_book
from foxhunt.evaluate.evaluation import MODEL, RunEvaluation
from foxhunt.evaluate.stitched_report import verdict_line
from foxhunt.run.fold import FoldOutcome, Progress, stitch_outcomes, voted_outcome
from foxhunt.run.holdout import (
    HEADLINE,
    HOLDOUT_DIR,
    HOLDOUT_FILE,
    HOLDOUT_GAP,
    holdout_record,
    window_figures,
)
from foxhunt.run.sinks.telemetry import BOOK, RunMetrics
from foxhunt.run.sinks.telemetry_reads import holdout_figures
from foxhunt.run.universe_book import History, book_instruments, book_scoring, stitched_series
from foxhunt.run.universe_walk import InstrumentView, instrument_folder, raise_first_divergence, universe_step
from foxhunt.run.walk import FoldDone, WalkHooks, walk_folds
from foxhunt.train import DQNTrainer
from foxhunt.train.evidence import WindowEvidence

SETTINGS_LABEL = "the run's settings"


def holdout_cut(timestamps: Sequence[np.ndarray], days: float) -> int:
    """The universe's cut (ns): the latest timestamp of any instrument less `days`; the held-out bars of
    every instrument are those after it."""
    last = max(int(ts[-1]) for ts in timestamps if len(ts))
    return last - round(days * NS_PER_DAY)


def first_held_out(timestamp: np.ndarray, cut: int) -> int:
    """An instrument's first held-out row: its first bar after `cut` (its row count when it has none)."""
    return int(np.searchsorted(np.asarray(timestamp, dtype=np.int64), cut, side="right"))


def universe_planning_rows(timestamps: Sequence[np.ndarray], days: float) -> list[int]:
    """Per instrument, how many leading rows the folds may use: all without a held-out period, else those
    before its first held-out row less `HOLDOUT_GAP` (none when that leaves nothing)."""
    if days <= 0:
        return [len(ts) for ts in timestamps]
    cut = holdout_cut(timestamps, days)
    return [max(first_held_out(ts, cut) - HOLDOUT_GAP, 0) for ts in timestamps]


def holdout_fold(
    timestamps: Sequence[np.ndarray], config: FoldConfig, cut: int, number: int, candidates: set[int]
) -> tuple[UniverseFold, dict[int, str]]:
    """The universe fold that trains before `cut` and validates each instrument of `candidates` on its
    rows after it, numbered `number`; and why each candidate that cannot take part is left out."""
    span = round(config.train_days * NS_PER_DAY)
    expanding = config.mode == "expanding"
    ranges: list[FoldRange | None] = []
    left_out: dict[int, str] = {}
    for i, ts in enumerate(timestamps):
        start = first_held_out(ts, cut)
        first = 0 if expanding else int(np.searchsorted(np.asarray(ts), cut - span, side="left"))
        train_end = start - config.purge_bars
        held, train = len(ts) - start, max(train_end - first, 0)
        if i in candidates and held < config.min_val_rows:
            left_out[i] = f"{held} bars after the cut, fewer than --min-val-rows {config.min_val_rows}"
        elif i in candidates and train < config.min_train_rows:
            left_out[i] = (
                f"{train} training rows before the cut, fewer than --min-train-rows {config.min_train_rows}"
            )
        ok = i in candidates and i not in left_out
        ranges.append(FoldRange(number, first, train_end, start, len(ts), 1.0) if ok else None)
    starts = [int(ts[0]) for ts in timestamps if len(ts)]
    last = max(int(ts[-1]) for ts in timestamps if len(ts))
    train_window = (min(starts) if expanding else cut + 1 - span, cut + 1)
    return UniverseFold(number, train_window, (cut + 1, last + 1), tuple(ranges)), left_out


def plan_universe(
    timestamps: Sequence[np.ndarray],
    close_returns: Sequence[np.ndarray],
    names: Sequence[str],
    config: FoldConfig,
    progress: Progress,
) -> tuple[list[UniverseFold], UniverseFold | None]:
    """The universe's folds, each instrument's held-out rows cut off when `config.holdout_days` > 0, and
    the held-out fold after them (None without a held-out period). A warning line names each instrument
    that fits in no fold, and each left out of the held-out fold; BadInput when none can take part."""
    days = config.holdout_days
    planned = universe_planning_rows(timestamps, days)
    if days > 0 and not any(planned):
        raise BadInput(f"--holdout-days {days:g}: the held-out period covers every instrument's whole data")
    folds = universe_folds(
        [ts[:n] for ts, n in zip(timestamps, planned, strict=True)],
        config,
        names=names,
        close_returns=[r[:n] for r, n in zip(close_returns, planned, strict=True)],
    )
    absent = instruments_in_no_fold(folds, names)
    for name in absent:
        progress(f"WARNING instrument {name} fits in no fold and takes no part in the run")
    if days <= 0:
        return folds, None
    cut = holdout_cut(timestamps, days)
    candidates = {i for i, name in enumerate(names) if name not in absent}
    held, left_out = holdout_fold(timestamps, config, cut, len(folds), candidates)
    for i, why in left_out.items():
        progress(
            f"WARNING instrument {names[i]} takes no part in the held-out period after {iso_utc(cut)}: {why}"
        )
    if not held.members:
        raise BadInput(
            f"--holdout-days {days:g}: no instrument can take part in the held-out period after {iso_utc(cut)} "
            f"(each needs --min-val-rows {config.min_val_rows} bars in it and --min-train-rows "
            f"{config.min_train_rows} before it)"
        )
    return folds, held


def train_holdout_fold(
    trainer: DQNTrainer,
    views: Sequence[InstrumentView],
    fold: UniverseFold,
    out_uri: str,
    settings: RunConfig,
    progress: Progress,
    earlier: Mapping[int, Sequence[WindowEvidence]],
    at_fold: Callable[[int | None], None] = lambda fold: None,
    check: Callable[[], None] = lambda: None,
) -> dict[int, dict[int, FoldOutcome]]:
    """The held-out fold trained on `trainer` (after the run's folds) by each member `earlier` names, its
    files under ``holdout/``: per member that did not diverge, its outcome per instrument taking part.
    The first member's divergence ends the run, as in a fold. Each member's pooled decision weighs its
    `earlier` windows (the run's folds' pooled out-of-sample windows) as each fold did; `at_fold` is told
    of its start and end (the walk's hook: a failure or a stop in it names it); `check` runs at its
    boundaries, as at a fold's (a stop signal raises there)."""
    said: Progress = lambda line: progress(f"holdout {line}")  # noqa: E731
    folder = storage.join(out_uri, HOLDOUT_DIR)
    walked = walk_folds(
        trainer,
        [fold],
        {m: folder for m in earlier},
        settings.epochs,
        None,
        hooks=WalkHooks(progress=said, check=check, at_fold=at_fold, on_fold=_diverged),
        step=universe_step(trainer, views, folder, settings, said, prior=earlier, check=check),
    )
    return {m: dict(by_fold[fold.fold].instruments) for m, by_fold in walked.outcomes.items() if by_fold}


def voted_instruments(
    views: Sequence[InstrumentView], fold: UniverseFold, by_member: Mapping[int, Mapping[int, FoldOutcome]]
) -> dict[int, FoldOutcome]:
    """Per instrument taking part, the held-out outcome of the members' vote (`fold.voted_outcome`: the
    first member's where too few walked it)."""
    out = {}
    for i in by_member[0]:
        members = [own[i] for own in by_member.values() if i in own]
        local = fold.ranges[i]
        assert local is not None  # an instrument with an outcome took part
        out[i] = voted_outcome(views[i].data, local, members, views[i].scoring, views[i].memo)
    return out


def _diverged(done: FoldDone) -> tuple[int, ...]:
    """The held-out walk's `on_fold`: the member's divergence raised within the fold, which a failure names."""
    raise_first_divergence(done)
    return ()


def held_out_book(
    evaluations: Mapping[str, RunEvaluation],
    weights: Mapping[str, float],
    history: History,
    settings: RunConfig,
) -> BookEvaluation:
    """The book of the instruments' held-out series: the run's book's `weights`, renormalised over the
    instruments of `evaluations` (those that took part), scored as the run's book is."""
    names = [name for name in evaluations if name in weights]
    total = sum(weights[name] for name in names)
    series = {name: stitched_series(evaluations[name]) for name in names}
    costs = {name: evaluations[name].cost_per_unit for name in names}
    instruments = book_instruments(series, history, costs)
    own = {name: weights[name] / total for name in names}
    return evaluate_book(instruments, own, book_scoring(settings.eval, settings.seed))


def _instrument_records(
    views: Sequence[InstrumentView],
    fold: UniverseFold,
    outcomes: Mapping[int, FoldOutcome],
    stitched: Mapping[str, RunEvaluation],
    days: float,
    out_uri: str,
) -> tuple[dict[str, dict], dict[str, RunEvaluation]]:
    """Each instrument's held-out record (`holdout.holdout_record`), written to its
    ``instruments/<name>/holdout.json``; and its held-out evaluation (what the book combines)."""
    records: dict[str, dict] = {}
    evaluations: dict[str, RunEvaluation] = {}
    for i, outcome in outcomes.items():
        view, local = views[i], fold.ranges[i]
        assert local is not None  # an instrument with an outcome took part
        evaluations[view.name] = stitch_outcomes(
            view.data, [local], {fold.fold: outcome}, view.scoring, view.memo
        )
        in_search = {
            "what": f"net Sharpe of {view.name}'s stitched folds",
            "value": stitched[view.name].stitched.policies[MODEL].net.sharpe,
        }
        records[view.name] = holdout_record(days, local, outcome, SETTINGS_LABEL, in_search)
        folder = instrument_folder(out_uri, view.name)
        storage.write_bytes(storage.join(folder, HOLDOUT_FILE), strict_json.json_bytes(records[view.name]))
    return records, evaluations


def book_holdout_line(book: BookEvaluation, days: float) -> str:
    """The console line of the book's held-out figure."""
    figures = window_figures(book.window)
    low, high = figures["net_sharpe_ci"]
    return (
        f"book: held-out net Sharpe {figures['net_sharpe']:.2f} [{low:.2f}, {high:.2f}] over "
        f"{book.window.n_bars:,} bars, {iso_utc(book.window.start_ns)[:16]} → {iso_utc(book.window.end_ns)[:16]} "
        f"(the last {days:g} days, never seen by any fold); {verdict_line(book.window)}"
    )


def run_universe_holdout(
    trainer: DQNTrainer,
    views: Sequence[InstrumentView],
    fold: UniverseFold,
    stitched: Mapping[str, RunEvaluation],
    weights: Mapping[str, float],
    history: History,
    out_uri: str,
    settings: RunConfig,
    progress: Progress,
    metrics: RunMetrics,
    earlier: Mapping[int, Sequence[WindowEvidence]],
    at_fold: Callable[[int | None], None] = lambda fold: None,
    check: Callable[[], None] = lambda: None,
) -> dict:
    """Train the held-out fold, then write, print and tell `metrics` each instrument's held-out record and
    the book's (module docstring); returns summary.json's `holdout`. `stitched`: each instrument's
    stitched evaluation (its in-search figure); `weights`: the run's book's; `at_fold` and `check`: the
    walk's hooks."""
    days = settings.folds.holdout_days
    by_member = train_holdout_fold(trainer, views, fold, out_uri, settings, progress, earlier, at_fold, check)
    outcomes = by_member[0] if len(earlier) == 1 else voted_instruments(views, fold, by_member)
    records, evaluations = _instrument_records(views, fold, outcomes, stitched, days, out_uri)
    book = held_out_book(evaluations, weights, history, settings)
    book_figures = {
        **window_figures(book.window),
        "days": days,
        "start": iso_utc(book.window.start_ns),
        "end": iso_utc(book.window.end_ns),
        "weights": dict(book.weights),
    }
    summary = {
        "headline": HEADLINE,
        "days": days,
        "cut": iso_utc(fold.val_window[0] - 1),
        "instruments": {
            n: {k: v for k, v in r.items() if k not in ("evaluation", "lines")} for n, r in records.items()
        },
        "left_out": [v.name for i, v in enumerate(views) if fold.ranges[i] is None],
        "book": book_figures,
    }
    line = book_holdout_line(book, days)
    record = {**summary, "lines": [line], "book_evaluation": book_to_dict(book)}
    storage.write_bytes(storage.join(out_uri, HOLDOUT_FILE), strict_json.json_bytes(record))
    for name, r in records.items():
        progress(f"{name}: held-out net Sharpe {r['net_sharpe']:.2f} over {r['n_bars']:,} bars")
        metrics.holdout_scored(holdout_figures(r), name)
    progress(line)
    metrics.holdout_scored(holdout_figures(book_figures), BOOK)
    return summary
