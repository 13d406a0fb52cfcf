"""A run's walk-forward on its loaded data: the data on the device once, the trainer built once, every fold
trained in order (or taken over from an earlier attempt), then the stitched out-of-sample record, the
spread across seeds (`--seeds K`) and the untouched holdout. A search hands the data to its trials."""

from __future__ import annotations

import time
from typing import Any, Protocol

from foxhunt import out_dir, storage
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.evaluation import MODEL, ScoreMemo, Scoring
from foxhunt.evaluate.plot import flat_words
from foxhunt.evaluate.reports import flat_run_reading
from foxhunt.evaluate.run_scores import (
    run_pictures,
    run_scoring,
    stitched_report,
    verdict_line,
)
from foxhunt.evaluate.seed_spread import seed_spread, spread_lines
from foxhunt.evaluate.trades import run_tables
from foxhunt.run import compile_cache
from foxhunt.run.fold_loop import FoldOutcome, load_fold, stitch_outcomes, train_fold
from foxhunt.run.holdout import run_holdout
from foxhunt.run.lifecycle import Run
from foxhunt.train import DeviceData, DQNTrainer, TrainingDiverged, to_device


class SearchPlan(Protocol):
    """A checked search (foxhunt.search.driver.SearchPlan): what the manifest records, and its trials."""

    @property
    def identity(self) -> dict[str, Any]: ...

    def run(self, run: Run, data: DeviceData, folds: list[FoldRange]) -> None: ...


def run_folds(
    run: Run,
    cache,
    folds: list[FoldRange],
    done: set[int],
    read_seconds: float,
    device,
    plan: SearchPlan | None = None,
) -> None:
    """Upload once, build the trainer once, then every fold: taken over when done (`done`), else trained;
    then the stitched record, the seeds' spread and the holdout.

    A search (`plan`) hands the uploaded data to its trials instead.
    """
    settings, summary, out_uri, progress = run.config, run.summary, run.out_uri, run.progress
    t0 = time.perf_counter()
    data = to_device(cache.features, cache.targets, cache.timestamp, device)
    summary.data_load_seconds = read_seconds + time.perf_counter() - t0
    run.metrics.data_loaded(summary.data_load_seconds, len(cache))
    progress(
        f"loaded {len(cache):,} rows from {summary.fxcache} ({'cache hit' if cache.cache_hit else 'read'}) "
        f"onto {device} in {summary.data_load_seconds:.2f}s"
    )
    progress(
        f"{len(folds)} folds: "
        + ", ".join(f"{f.fold}: train {f.train_rows:,} val {f.val_rows:,}" for f in folds)
    )
    if plan is not None:
        plan.run(run, data, folds)
        return
    max_rows = max(f.train_rows for f in folds)
    step_cache = compile_cache.for_run(
        settings.compile_cache, summary.fxcache, device, settings.dqn, data, max_rows, progress
    )
    scoring = run_scoring(settings.eval, settings.seed, data)  # the tail selection scores with it too
    built = time.perf_counter()
    seeds = [settings.seed + i for i in range(settings.seeds)]  # member i trains from seed + i
    trainer = DQNTrainer(
        data,
        settings.dqn if len(seeds) == 1 else [settings.dqn] * len(seeds),
        max_train_rows=max_rows,
        seed=settings.seed,
        eval_cost=settings.eval.cost,
        eval_spread=settings.eval.spread,
        execution=scoring.execution,
        member_seeds=seeds,
    )
    outs = {0: out_uri, **{i: storage.join(out_uri, seed_folder(s)) for i, s in enumerate(seeds) if i}}
    other_seeds: dict[int, dict[int, FoldOutcome]] = {i: {} for i in outs if i}
    progress(f"trainer built in {time.perf_counter() - built:.2f}s")  # on CUDA: compile, capture, warm-up
    memo = ScoreMemo()  # the stitched evaluation looks up the fold windows scored as they ended
    outcomes: dict[int, FoldOutcome] = {}
    for fold_range in folds:
        run.check()
        run.current_fold = fold = fold_range.fold
        if fold in done:
            outcomes[fold] = load_fold(out_uri, fold)
            _take_over_seeds(run, fold, outs, seeds, other_seeds)
            run.fold_finished(outcomes[fold].report, None)
            progress(f"fold {fold} skipped: completed by an earlier attempt, outputs verified")
            continue
        members = train_fold(
            trainer,
            fold_range,
            settings.epochs,
            outs,
            progress,
            run.check,
            scoring=scoring,
            memo=memo,
            diagnostics_every=settings.diagnostics_every,
            on_epoch=run.epoch_finished,
        )
        outcome = members[0]
        if isinstance(outcome, TrainingDiverged):
            raise outcome
        for i, other in members.items():
            if i:
                if isinstance(other, TrainingDiverged):
                    progress(f"seed {seeds[i]}: {other}")
                    other_seeds.pop(i, None)
                elif i in other_seeds:
                    other_seeds[i][fold] = other
        outcomes[fold] = outcome
        run.fold_finished(outcome.report, _all_outputs(outcome, members, seeds))
        if step_cache is not None:
            step_cache.after_fold(progress)
        p, window = outcome.report.phases, outcome.report.evaluation
        net = window.policies[MODEL].net
        progress(
            f"fold {fold} done: reset {p['reset'] * 1e3:.1f}ms normalize {p['normalize'] * 1e3:.1f}ms "
            f"train {p['train']:.2f}s validation Sharpe {net.sharpe:.2f} ± {net.sharpe_se:.2f} after costs, "
            f"best baseline {window.best_baseline} {window.policies[window.best_baseline].net.sharpe:.2f}"
        )
    summary.graph_captures = trainer.graph_captures
    run.current_fold = None
    evaluation = _evaluate_run(run, data, folds, outcomes, scoring, memo)
    if len(seeds) > 1:
        _seed_spread(run, data, folds, outcomes, other_seeds, seeds, scoring, evaluation)
    if settings.folds.holdout_days > 0 and summary.stitched is not None:
        in_search = {
            "what": "net Sharpe of the run's stitched folds",
            "value": summary.stitched.policies[MODEL].net.sharpe,
        }
        run_holdout(run, data, trainer, len(folds), max_rows, scoring, "the run's settings", in_search)


seed_folder = out_dir.seed_folder


def _all_outputs(outcome: FoldOutcome, members: dict, seeds: list[int]) -> dict[str, str] | None:
    """The fold's files for the manifest: member 0's, and every other live seed's under `seed_S/`, so a
    resume verifies (and test-loads) each seed's files, not the first seed's alone."""
    outputs = dict(outcome.outputs or {})
    for i, other in members.items():
        if i and isinstance(other, FoldOutcome):
            folder = seed_folder(seeds[i])
            outputs.update({f"{folder}/{name}": digest for name, digest in (other.outputs or {}).items()})
    return outputs


def _take_over_seeds(run: Run, fold: int, outs: dict, seeds: list[int], other_seeds: dict) -> None:
    """A completed fold's other seeds, from their folders (verified with the fold's record); a seed the
    record does not list (it diverged in that fold) drops out of the spread, as it did the first time."""
    record = run.manifest.run.folds[fold]
    for i in list(other_seeds):
        report = f"{seed_folder(seeds[i])}/{out_dir.fold_folder(fold)}/{out_dir.FOLD_REPORT}"
        if report in record.outputs:
            other_seeds[i][fold] = load_fold(outs[i], fold)
        else:
            other_seeds.pop(i)


def _seed_spread(
    run: Run,
    data,
    folds: list[FoldRange],
    outcomes: dict,
    other_seeds: dict[int, dict[int, FoldOutcome]],
    seeds: list[int],
    scoring: Scoring,
    evaluation,
) -> None:
    """--seeds K: every seed's stitched net Sharpe, their median and IQR into the summary and the console;
    `seeds.png` draws their stitched records (`evaluation`: the run's own, member 0's)."""
    summary = run.summary
    if summary.stitched is None:
        return
    evaluations = {seeds[0]: evaluation}
    for i, by_fold in other_seeds.items():
        if len(by_fold) != len(outcomes):  # a seed that diverged in some fold has no stitched record
            continue
        evaluations[seeds[i]] = stitch_outcomes(data, folds, by_fold, scoring, ScoreMemo(), outcomes)
    summary.seed_spread = seed_spread({s: e.stitched.policies[MODEL].net for s, e in evaluations.items()})
    for line in spread_lines(summary.seed_spread):
        run.progress(line)
    try:
        from foxhunt.evaluate.plot_seeds import render_seeds_png, seeds_picture

        selections = {seeds[0]: [o.report.selection for o in outcomes.values()]}
        for i, by_fold in other_seeds.items():
            selections[seeds[i]] = [o.report.selection for o in by_fold.values()]
        picture = seeds_picture(evaluations, selections)
        png = render_seeds_png(picture, summary.seed_spread, f"foxhunt run {summary.run_id}")
    except ImportError as exc:  # a slim image without matplotlib still reports in JSON
        run.progress(f"{out_dir.SEEDS_PICTURE} not drawn: {exc}")
        return
    storage.write_bytes(storage.join(run.out_uri, out_dir.SEEDS_PICTURE), png)


def _evaluate_run(run: Run, data, folds: list[FoldRange], outcomes: dict, scoring: Scoring, memo: ScoreMemo):
    """The stitched record into the summary, the metrics and the console; the run's pictures
    (`run_scores.run_pictures`). Returns the run's evaluation."""
    summary, progress = run.summary, run.progress
    evaluation = stitch_outcomes(data, folds, outcomes, scoring, memo)
    summary.stitched = evaluation.stitched
    run.metrics.run_evaluated(evaluation.stitched)
    flat = flat_run_reading(summary.folds)  # a run that never traded says so, in words
    for line in stitched_report(evaluation.stitched, len(evaluation.folds), scoring.level, flat):
        progress(line)
    for name, table in run_tables(evaluation).items():  # trades.parquet, daily.csv, monthly.csv
        storage.write_bytes(storage.join(run.out_uri, name), table)
    net = evaluation.stitched.policies[MODEL].net
    flat = flat_words(net.exposure, [r.selection for r in summary.folds])
    # A record that never traded says why, not "model net Sharpe 0.00", which reads as a fault.
    verdict = f"the model's record is {flat} in any fold" if flat else verdict_line(evaluation.stitched)
    title = f"foxhunt run {summary.run_id} on {summary.device}\n{verdict}"
    try:
        pictures = run_pictures(evaluation, summary.folds, title)
    except ImportError as exc:  # a slim image without matplotlib still trains and reports in JSON
        progress(f"the run's pictures not drawn: {exc}")
        return evaluation
    for name, png in pictures.items():
        storage.write_bytes(storage.join(run.out_uri, name), png)
    return evaluation
