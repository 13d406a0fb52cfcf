"""An untouched final period (`--holdout-days D`): the last D days that no fold and no trial sees, and the
headline figure measured on them alone.

The cut. The held-out bars are those after `last timestamp − D days`. Folds are planned over the rows
before `holdout start − HOLDOUT_GAP` only (`planning_rows`): HOLDOUT_GAP is the longest target
horizon, so no target of any row a fold trains or validates on reaches a held-out bar's close (the
fold's own purge applies inside the planned rows as before). Every search and every fold works on that
prefix; the held-out rows are on the device but no fold range reaches them.

The headline. After the folds (a plain run: with the run's settings; a search: with the best trial's),
one more fold is trained: its training window is the `train_days` before the held-out period (from the
first row in expanding mode; at most as many rows as the run's trainer holds), purged as every fold is,
and it validates on the held-out period alone. Its evaluation beside the baselines, with the paired
verdicts, is the run's headline, written to `holdout.json`, `holdout.png`, `summary.json` (`holdout`),
`study.json` after a search, and the console, beside the in-search figure, each named for what it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from foxhunt import out_names, storage, strict_json
from foxhunt.config import MIN_SEEDS_FOR_MAJORITY, TARGET_HORIZONS
from foxhunt.data.bars import NS_PER_DAY, iso_utc
from foxhunt.data.folds import FoldRange
from foxhunt.errors import BadInput

if TYPE_CHECKING:
    from foxhunt.config import FoldConfig
    from foxhunt.train.evidence import WindowEvidence

HOLDOUT_GAP = max(TARGET_HORIZONS)  # rows between the last planned row and the first held-out one
HOLDOUT_DIR = out_names.HOLDOUT_DIR
HOLDOUT_FILE = out_names.HOLDOUT_REPORT
HOLDOUT_PICTURE = out_names.HOLDOUT_PICTURE
HEADLINE = "held-out final period"


def holdout_start(timestamp: np.ndarray, days: float) -> int:
    """The row of the first held-out bar: the first whose timestamp is after last − `days`."""
    ts = np.asarray(timestamp, dtype=np.int64)
    cut = int(ts[-1]) - round(days * NS_PER_DAY)
    return int(np.searchsorted(ts, cut, side="right"))


def planning_rows(timestamp: np.ndarray, days: float, min_bars: int = 1) -> int:
    """How many leading rows the folds and trials may use: all without a holdout, else up to the gap.
    BadInput when the held-out period holds fewer than `min_bars` bars (a fold's `min_val_rows`)."""
    n = len(timestamp)
    if days <= 0:
        return n
    start = holdout_start(timestamp, days)
    if start >= n:
        raise BadInput(f"--holdout-days {days:g}: no bar lies in the last {days:g} days")
    if n - start < min_bars:
        raise BadInput(
            f"--holdout-days {days:g}: the held-out period holds {n - start} bars, fewer than "
            f"--min-val-rows {min_bars} (a headline needs as many bars as a fold's validation)"
        )
    if start - HOLDOUT_GAP <= 0:
        raise BadInput(f"--holdout-days {days:g}: the held-out period covers the whole data ({n} rows)")
    return start - HOLDOUT_GAP


def holdout_range(timestamp: np.ndarray, config: FoldConfig, number: int, max_train_rows: int) -> FoldRange:
    """The fold that trains just before the held-out period and validates on it alone."""
    ts = np.asarray(timestamp, dtype=np.int64)
    start = holdout_start(ts, config.holdout_days)
    train_end = start - max(config.purge_bars, 0)
    first = (
        0
        if config.mode == "expanding"
        else int(np.searchsorted(ts, int(ts[start]) - round(config.train_days * NS_PER_DAY)))
    )
    train_start = max(first, train_end - max_train_rows)
    if train_end - train_start < 1:
        raise BadInput(f"--holdout-days {config.holdout_days:g}: no training rows before the held-out period")
    return FoldRange(number, train_start, train_end, start, len(ts), 1.0)


def checked_holdout_range(
    timestamp: np.ndarray, config: FoldConfig, number: int, max_train_rows: int, tail_share: float
) -> FoldRange:
    """`holdout_range`, refused (BadInput) before any fold trains when its training slice holds fewer rows
    than a fold needs (`min_train_rows`) or none to learn on beside the selection tail (`tail_share`)."""
    from foxhunt.train.selection import head_end

    fold = holdout_range(timestamp, config, number, max_train_rows)
    days = f"--holdout-days {config.holdout_days:g}"
    if fold.train_rows < config.min_train_rows:
        raise BadInput(
            f"{days}: the held-out fold would train on {fold.train_rows} rows before the held-out period, "
            f"fewer than --min-train-rows {config.min_train_rows} (a longer --train-days or another --holdout-days)"
        )
    try:
        head_end(fold, tail_share)
    except ValueError as exc:
        raise BadInput(f"{days}: {exc}") from None
    return fold


def window_figures(window) -> dict[str, Any]:
    """The held-out window's figures (`holdout.json`, `summary.json`'s `holdout`): the model's net record
    beside buy-and-hold and the best baseline, the paired verdicts. A book's window reads the same."""
    from foxhunt.evaluate.evaluation import MODEL

    net = window.policies[MODEL].net
    return {
        "net_sharpe": net.sharpe,
        "net_sharpe_ci": [net.sharpe_ci_low, net.sharpe_ci_high],
        "net_sharpe_se": net.sharpe_se,
        "psr_zero": net.psr_zero,
        "net_return": net.total_return,
        "max_drawdown": net.max_drawdown,
        "n_bars": net.n_bars,
        "buy_and_hold_sharpe": window.policies["buy_and_hold"].net.sharpe,
        "best_baseline": window.best_baseline,
        "best_baseline_sharpe": window.policies[window.best_baseline].net.sharpe,
        "verdicts": {name: s.verdict for name, s in window.standings.items()},
    }


def run_holdout(
    run,
    data,
    trainer,
    number: int,
    max_train_rows: int,
    scoring,
    settings_label: str,
    in_search: dict[str, Any],
    earlier: Mapping[int, Sequence[WindowEvidence]],
) -> dict[str, Any]:
    """Train `trainer` (set to the chosen settings) on the holdout fold, evaluate it, report it as the headline.

    `in_search` is the figure the folds gave (`{"what": ..., "value": ...}`), reported beside it;
    `earlier`, per member that walks the fold, the out-of-sample windows of the folds it walked, which the
    fold's pooled decision weighs as every fold's did (all end before the held-out period). With several
    members (`--result majority`) the headline is their vote (`_voted`).
    The fold is numbered `number` (the one after the run's folds; its files go to `--out/holdout/fold_N`,
    another member's to `--out/holdout/seed_S/fold_N`).
    Writes `holdout.json` and (but with --pictures off) `holdout.png` into `--out`, sets
    `run.summary.holdout`; returns the record.
    """
    from foxhunt.evaluate.stitched_report import verdict_line
    from foxhunt.run.sinks.telemetry_reads import holdout_figures

    config = run.config
    # A search scores its trials without the bootstrap; the headline has its interval.
    if not scoring.resamples:
        scoring = replace(scoring, resamples=1000)
    fold = checked_holdout_range(
        data.timestamp, config.folds, number, max_train_rows, trainer.config.select_tail_share
    )
    run.holdout_fold = fold.fold
    outcome = _walk_held_out(run, data, trainer, fold, scoring, earlier)
    record = holdout_record(config.folds.holdout_days, fold, outcome, settings_label, in_search)
    storage.write_bytes(storage.join(run.out_uri, HOLDOUT_FILE), strict_json.json_bytes(record))
    window = outcome.report.evaluation
    title = (
        f"HEADLINE: {HEADLINE} {iso_utc(window.start_ns)[:16]} → {iso_utc(window.end_ns)[:16]}, {settings_label}\n"
        f"{verdict_line(window)}"
    )
    if config.draws_pictures:
        _draw(run, data, outcome, fold, scoring, title)
    run.summary.holdout = {k: v for k, v in record.items() if k != "evaluation"}
    run.metrics.holdout_scored(holdout_figures(run.summary.holdout))
    for line in record["lines"]:
        run.progress(line)
    return run.summary.holdout


def _walk_held_out(run, data, trainer, fold: FoldRange, scoring, earlier: Mapping[int, Sequence]) -> Any:
    """The held-out fold walked by each member `earlier` names (their files under `holdout/`, another
    member's under `holdout/seed_S/`): the first member's outcome, or with several their vote's."""
    from foxhunt.evaluate.score_memo import ScoreMemo
    from foxhunt.run.walk import WalkHooks, walk_folds

    config = run.config
    # A stop or failure in it names the held-out fold (`Run.check`).
    hooks = WalkHooks(
        lambda m: run.progress(f"holdout {m}"), run.check, partial(setattr, run, "current_fold")
    )
    held = storage.join(run.out_uri, HOLDOUT_DIR)
    outs = {i: storage.join(held, out_names.seed_folder(config.seed + i)) if i else held for i in earlier}
    memo = ScoreMemo()  # the vote's window reuses the baselines the members' fold fitted
    walked = walk_folds(trainer, [fold], outs, config.epochs, scoring, memo=memo,
                        diagnostics_every=config.diagnostics_spacing(), hooks=hooks, prior=earlier)  # fmt: skip
    if 0 in walked.failures:
        raise walked.failures[0]
    if len(outs) == 1:
        return walked.outcomes[0][fold.fold]
    members = [o[fold.fold] for o in walked.outcomes.values() if o]
    return _voted(run, data, fold, members, scoring, memo)


def _voted(run, data, fold: FoldRange, members: Sequence, scoring, memo) -> Any:
    """The held-out fold's outcome of the members' vote (`fold.voted_outcome`); the first member's when
    fewer than MIN_SEEDS_FOR_MAJORITY walked the fold (a warning says so)."""
    from foxhunt.run.fold import voted_outcome

    if len(members) < MIN_SEEDS_FOR_MAJORITY:
        run.progress(
            f"WARNING holdout: {len(members)} seeds walked the held-out fold; its headline is the first seed's"
        )
    return voted_outcome(data, fold, members, scoring, memo)


def holdout_record(
    days: float, fold: FoldRange, outcome, settings_label: str, in_search: dict[str, Any]
) -> dict:
    """`holdout.json`: the held-out window's figures beside the baselines, the in-search figure and the lines
    the console prints."""
    from foxhunt.evaluate.reports import window_to_dict
    from foxhunt.evaluate.stitched_report import verdict_line

    window = outcome.report.evaluation
    figures = window_figures(window)
    ci = figures["net_sharpe_ci"]
    lines = [
        f"HEADLINE ({HEADLINE}, never seen by any fold or trial): {iso_utc(window.start_ns)[:16]} → "
        f"{iso_utc(window.end_ns)[:16]}, {window.n_bars:,} bars, {settings_label}: model net Sharpe "
        f"{figures['net_sharpe']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]; {verdict_line(window)}",
        f"in-search figure ({in_search['what']}; optimistic, not the headline): {in_search['value']:.2f}",
    ]
    return {
        "headline": HEADLINE,
        "days": days,
        "start": iso_utc(window.start_ns),
        "end": iso_utc(window.end_ns),
        "rows": [fold.val_start, fold.val_end],
        "train_rows": [fold.train_start, fold.train_end],
        "settings": settings_label,
        **figures,
        "in_search": in_search,
        "lines": lines,
        "evaluation": window_to_dict(window),
        "warnings": outcome.report.warnings,
    }


def _draw(run, data, outcome, fold: FoldRange, scoring, title: str) -> None:
    """`holdout.png`: the model's, buy-and-hold's and the best baseline's (named in its title) net wealth
    over the held-out period, its Sharpe."""
    from foxhunt.evaluate.evaluation import BUY_AND_HOLD, fold_record, host_array

    try:
        from foxhunt.evaluate.plot import EquityLine, RunPicture, fold_sharpe, render_run_png

        returns = host_array(data.targets[:, 0])
        window = outcome.report.evaluation
        policies = [("model", outcome.positions), ("buy and hold", np.ones(fold.val_rows))]
        if window.best_baseline != BUY_AND_HOLD:
            best = window.best_baseline
            policies.append((f"best baseline: {best}", host_array(outcome.baselines[best])))
        lines = []
        for label, positions in policies:
            record = fold_record(fold.fold, fold.val_start, positions, data.timestamp, returns)
            lines.append(EquityLine(label, record.pnl(scoring.cost_per_unit, scoring.execution)))
        sharpe = fold_sharpe(window, [outcome.report.selection])
        picture = RunPicture(np.asarray(data.timestamp[fold.val_slice]), lines, [sharpe], None)
        png = render_run_png(picture, title, record_title=f"{HEADLINE}: never seen by any fold or trial")
    except ImportError as exc:  # a slim image without matplotlib still reports in JSON
        run.progress(f"{HOLDOUT_PICTURE} not drawn: {exc}")
        return
    storage.write_bytes(storage.join(run.out_uri, HOLDOUT_PICTURE), png)
