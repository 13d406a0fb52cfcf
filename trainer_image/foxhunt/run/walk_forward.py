"""A run's walk-forward on its loaded data: the data on the device once, the trainer built once, every fold
trained in order (or taken over from an earlier attempt), then the stitched out-of-sample record, the
spread across seeds (`--seeds K`) and the untouched holdout. A search hands the data to its trials."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Protocol

from foxhunt import collector, out_names, storage
from foxhunt.config import MAJORITY, MIN_SEEDS_FOR_MAJORITY, RunConfig
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.evaluation import MODEL, RunEvaluation, Scoring, evaluate_window
from foxhunt.evaluate.plot import flat_words
from foxhunt.evaluate.plot_jobs import PicturePool, early_worker
from foxhunt.evaluate.plot_run import run_pictures, send_fold_pictures
from foxhunt.evaluate.reports import flat_run_reading
from foxhunt.evaluate.run_scores import run_scoring
from foxhunt.evaluate.score_memo import ScoreMemo
from foxhunt.evaluate.seed_spread import (
    majority_figures,
    majority_record,
    result_label,
    seed_spread,
    spread_lines,
)
from foxhunt.evaluate.stitched_report import cost_noise_line, one_bar_noise, stitched_report, verdict_line
from foxhunt.evaluate.trades import run_tables
from foxhunt.run import compile_cache
from foxhunt.run.fold import FoldOutcome, load_fold, out_of_sample_evidence, stitch_majority, stitch_outcomes
from foxhunt.run.holdout import run_holdout
from foxhunt.run.lifecycle import Run
from foxhunt.run.n_step_choice import first_training_returns, with_chosen_n_step
from foxhunt.run.sinks.telemetry_reads import stitched_figures
from foxhunt.run.walk import FoldDone, FoldResults, WalkHooks, diverged_seeds, walk_folds
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
    summary, out_uri, progress = run.summary, run.out_uri, run.progress
    data = _upload(run, cache, folds, read_seconds, device)
    settings = _choose_n_step(run, data, folds)
    collector.settle()  # the run's modules are imported: later collections skip them (collector.py says why)
    if plan is not None:
        plan.run(run, data, folds)
        return
    max_rows = max(f.train_rows for f in folds)
    seeds = [settings.seed + i for i in range(settings.seeds)]  # member i trains from seed + i
    scoring = run_scoring(settings.eval, settings.seed, data)  # the tail selection scores with it too
    step_cache = compile_cache.for_run(
        settings.compile_cache, summary.fxcache, settings.dqn, data, max_rows, len(seeds), progress
    )
    build = partial(_build_trainer, run, data, max_rows, scoring, seeds)
    trainer = compile_cache.build_with_cache(build, step_cache, progress)
    outs = {0: out_uri, **{i: storage.join(out_uri, seed_folder(s)) for i, s in enumerate(seeds) if i}}
    memo = ScoreMemo()  # the stitched evaluation looks up the fold windows scored as they ended
    # Where cores are to spare, a picture worker starts now: its start-up is paid while the folds train.
    with early_worker(collector.owned() and settings.draws_pictures) as pictures:
        walked = walk_folds(
            trainer,
            folds,
            outs,
            settings.epochs,
            scoring,
            memo=memo,
            diagnostics_every=settings.diagnostics_spacing(),
            hooks=_run_hooks(run, done, outs, seeds),
        )
        summary.graph_captures = trainer.graph_captures
        if pictures is not None:  # the folds' pictures need no stitched record: drawn while it is scored
            send_fold_pictures(pictures, summary.folds, _heading(summary))
        result = _run_result(run, data, folds, walked, seeds, scoring, memo)
        _report_run(run, data, folds, result.voted or result.first, scoring, pictures)
    if len(seeds) > 1:
        _seed_spread(run, data, folds, walked, seeds, scoring, result, memo)
    if settings.folds.holdout_days > 0 and summary.stitched is not None:
        in_search = {
            "what": "net Sharpe of the run's stitched folds",
            "value": summary.stitched.policies[MODEL].net.sharpe,
        }
        voters = result.voters or {0: walked.outcomes[0]}
        earlier = {i: out_of_sample_evidence(by_fold) for i, by_fold in voters.items()}
        run_holdout(
            run, data, trainer, len(folds), max_rows, scoring, "the run's settings", in_search, earlier
        )


@dataclass(frozen=True)
class RunResult:
    """The first seed's stitched evaluation; with `--result majority`, the members that vote (member → its
    outcomes by fold) and their vote's stitched evaluation, the run's result."""

    first: RunEvaluation
    voters: dict[int, dict[int, FoldOutcome]] | None = None
    voted: RunEvaluation | None = None


def _run_result(
    run: Run, data, folds: list[FoldRange], walked, seeds: list[int], scoring: Scoring, memo: ScoreMemo
) -> RunResult:
    """The first seed's stitched evaluation and, with `--result majority`, the seeds' vote that is the run's
    result, recorded in the summary and the console. Fewer than MIN_SEEDS_FOR_MAJORITY seeds that walked
    every fold leave the first seed's result, with a warning."""
    first = stitch_outcomes(data, folds, walked.outcomes[0], scoring, memo)
    if run.config.result != MAJORITY:
        return RunResult(first)
    voters = {i: walked.outcomes[i] for i in walked.voters()}
    run.summary.result = result_label([seeds[i] for i in voters], seeds[0])
    if len(voters) < MIN_SEEDS_FOR_MAJORITY:
        named = ", ".join(str(seeds[i]) for i in voters)
        run.progress(
            f"WARNING --result majority: only seeds {named} walked every fold; the run's result is "
            f"seed {seeds[0]}'s"
        )
        return RunResult(first)
    run.progress(f"the run's result: the {run.summary.result} (the side more than half hold, else flat)")
    return RunResult(first, voters, stitch_majority(data, folds, list(voters.values()), scoring, memo))


def _seeds_majority(evaluations: list[RunEvaluation], scoring: Scoring, memo: ScoreMemo) -> RunEvaluation:
    """The seeds' vote on their stitched records (`seed_spread.majority_record`), scored as a stitched
    record is, once: beside the first seed's baselines (every seed's), which `memo` has scored. Its `folds`
    are empty: only the stitched figures and records are read."""
    first = evaluations[0]
    records = {**first.records, MODEL: majority_record(evaluations)}
    return replace(first, folds=[], stitched=evaluate_window(records, scoring, memo=memo), records=records)


def _choose_n_step(run: Run, data: DeviceData, folds: list[FoldRange]) -> RunConfig:
    """The run's settings with dqn.n_step 0 resolved on the first fold's training rows (run.n_step_choice),
    into `run.config` and the summary (what trained, and why); the manifest keeps the setting given."""
    first = first_training_returns([data.targets], [folds[0]])
    run.config, run.summary.n_step_choice = with_chosen_n_step(run.config, first, run.progress)
    run.summary.dqn_config["n_step"] = run.config.dqn.n_step
    return run.config


def _upload(run: Run, cache, folds: list[FoldRange], read_seconds: float, device) -> DeviceData:
    """The fxcache onto the device, once; its load time into the summary, the telemetry and the console."""
    summary = run.summary
    t0 = time.perf_counter()
    data = to_device(cache.features, cache.targets, cache.timestamp, device)
    summary.data_load_seconds = read_seconds + time.perf_counter() - t0
    run.metrics.data_loaded(summary.data_load_seconds, len(cache))
    run.progress(
        f"loaded {len(cache):,} rows from {summary.fxcache} ({'cache hit' if cache.cache_hit else 'read'}) "
        f"onto {device} in {summary.data_load_seconds:.2f}s"
    )
    run.progress(
        f"{len(folds)} folds: "
        + ", ".join(f"{f.fold}: train {f.train_rows:,} val {f.val_rows:,}" for f in folds)
    )
    return data


def _build_trainer(
    run: Run, data: DeviceData, max_rows: int, scoring: Scoring, seeds: list[int]
) -> DQNTrainer:
    """The run's one trainer: one member per seed (member i trains from seed + i); on CUDA its build
    compiles, captures and warms up the step."""
    settings = run.config
    built = time.perf_counter()
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
    run.progress(f"trainer built in {time.perf_counter() - built:.2f}s")
    return trainer


def _run_hooks(run: Run, done: set[int], outs: dict[int, str], seeds: list[int]) -> WalkHooks:
    """A run's walk: folds an earlier attempt completed taken over, member 0's divergence ends the run
    (another seed's leaves the spread), each fold into the manifest, the telemetry and the console."""

    def at_fold(fold: int | None) -> None:
        run.current_fold = fold

    def taken_over(fold_range: FoldRange) -> dict[int, FoldOutcome] | None:
        if fold_range.fold not in done:
            return None
        return _take_over(run, fold_range.fold, outs, seeds)

    def on_fold(done: FoldDone) -> list[int]:
        fold, results, outcome = done.fold.fold, done.results, done.results[0]
        if isinstance(outcome, TrainingDiverged):
            raise outcome
        for i, other in results.items():
            if i and isinstance(other, TrainingDiverged):
                run.progress(f"seed {seeds[i]}: {other}")
        if done.taken:
            run.fold_finished(outcome.report, None)
            run.progress(f"fold {fold} skipped: completed by an earlier attempt, outputs verified")
            return []
        run.fold_finished(outcome.report, _all_outputs(outcome, results, seeds))
        run.progress(_fold_line(outcome))
        return []

    return WalkHooks(run.progress, run.check, at_fold, run.epoch_finished, taken_over, on_fold)


def _fold_line(outcome: FoldOutcome) -> str:
    """The console line of a trained fold: its phases and its validation beside the best baseline."""
    report = outcome.report
    p, window = report.phases, report.evaluation
    net = window.policies[MODEL].net
    return (
        f"fold {report.fold} done: reset {p['reset'] * 1e3:.1f}ms normalize {p['normalize'] * 1e3:.1f}ms "
        f"train {p['train']:.2f}s select {p['select']:.2f}s validation Sharpe {net.sharpe:.2f} ± {net.sharpe_se:.2f} after costs, "
        f"best baseline {window.best_baseline} {window.policies[window.best_baseline].net.sharpe:.2f}"
    )


seed_folder = out_names.seed_folder


def _all_outputs(outcome: FoldOutcome, members: FoldResults, seeds: list[int]) -> dict[str, str] | None:
    """The fold's files for the manifest: member 0's, and every other live seed's under `seed_S/`, so a
    resume verifies (and test-loads) each seed's files, not the first seed's alone."""
    outputs = dict(outcome.outputs or {})
    for i, other in members.items():
        if i and isinstance(other, FoldOutcome):
            folder = seed_folder(seeds[i])
            outputs.update({f"{folder}/{name}": digest for name, digest in (other.outputs or {}).items()})
    return outputs


def _take_over(run: Run, fold: int, outs: dict[int, str], seeds: list[int]) -> dict[int, FoldOutcome]:
    """A fold an earlier attempt completed: member 0's outcome and every other seed's, from their folders
    (verified with the fold's record); a seed the record does not list (it diverged in that fold) is left
    out, and so drops out of the spread, as it did the first time."""
    record = run.manifest.run.folds[fold]
    taken = {0: load_fold(outs[0], fold)}
    for i in outs:
        report = f"{seed_folder(seeds[i])}/{out_names.fold_folder(fold)}/{out_names.FOLD_REPORT}"
        if i and report in record.outputs:
            taken[i] = load_fold(outs[i], fold)
    return taken


def _seed_spread(
    run: Run,
    data,
    folds: list[FoldRange],
    walked,
    seeds: list[int],
    scoring: Scoring,
    result: RunResult,
    memo: ScoreMemo,
) -> None:
    """--seeds K: every seed's stitched net Sharpe, their median and IQR into the summary and the console,
    with the seeds left out (they diverged, so have no stitched record) named beside them, and (three
    seeds or more) their majority's record (`result.voted` where it is the run's result); `seeds.png`
    draws their stitched records and the majority's. The run's `memo` is every seed's: the baselines'
    records, the same for every seed, are scored once, not once a seed."""
    summary = run.summary
    if summary.stitched is None:
        return
    outcomes = walked.outcomes[0]
    other_seeds = {i: walked.outcomes[i] for i in walked.voters() if i}
    evaluations = {seeds[0]: result.first}
    for i, by_fold in other_seeds.items():
        evaluations[seeds[i]] = stitch_outcomes(data, folds, by_fold, scoring, memo, outcomes)
    nets = {s: e.stitched.policies[MODEL].net for s, e in evaluations.items()}
    summary.seed_spread = seed_spread(nets, diverged_seeds(walked, seeds))
    voted = result.voted
    if voted is None and len(evaluations) >= MIN_SEEDS_FOR_MAJORITY:  # the seeds that walked every fold
        voted = _seeds_majority(list(evaluations.values()), scoring, memo)
    if voted is not None:
        net = voted.stitched.policies[MODEL].net
        summary.seed_spread["majority"] = majority_figures(net, list(evaluations))
    for line in spread_lines(summary.seed_spread):
        run.progress(line)
    if not run.config.draws_pictures:
        return
    try:
        from foxhunt.evaluate.plot_seeds import render_seeds_png, seeds_picture

        selections = {seeds[0]: [o.report.selection for o in outcomes.values()]}
        for i, by_fold in other_seeds.items():
            selections[seeds[i]] = [o.report.selection for o in by_fold.values()]
        picture = seeds_picture(evaluations, selections, voted)
        png = render_seeds_png(picture, summary.seed_spread, f"foxhunt run {summary.run_id}")
    except ImportError as exc:  # a slim image without matplotlib still reports in JSON
        run.progress(f"{out_names.SEEDS_PICTURE} not drawn: {exc}")
        return
    storage.write_bytes(storage.join(run.out_uri, out_names.SEEDS_PICTURE), png)


def _report_run(
    run: Run,
    data,
    folds: list[FoldRange],
    evaluation: RunEvaluation,
    scoring: Scoring,
    pool: PicturePool | None = None,
) -> None:
    """The run's stitched `evaluation` (the first seed's, or the seeds' vote) into the summary, the
    metrics and the console; its tables; the run's pictures unless --pictures off (`plot_run.run_pictures`;
    with `pool`, the folds' pictures drawn by its worker meanwhile)."""
    summary, progress = run.summary, run.progress
    summary.stitched = evaluation.stitched
    run.metrics.stitched_scored(stitched_figures(evaluation.stitched))
    flat = flat_run_reading(summary.folds, summary.stitched)  # a run that never traded says so, in words
    lines = stitched_report(evaluation.stitched, len(evaluation.folds), scoring.level, flat)
    if flat:  # under the model's flat line, why a modest edge may not pay: the cost against a bar's move
        lines.insert(2, cost_noise_line(scoring.cost_per_unit, one_bar_noise(data.targets, folds)))
    for line in lines:
        progress(line)
    title = _title(summary, evaluation)  # the record's pictures carry its verdict; the folds' do not
    for name, table in run_tables(evaluation).items():  # trades.parquet, daily.csv, monthly.csv
        storage.write_bytes(storage.join(run.out_uri, name), table)
    if not run.config.draws_pictures:
        return
    try:
        pictures = run_pictures(evaluation, summary.folds, title, pool, _heading(summary))
    except ImportError as exc:  # a slim image without matplotlib still trains and reports in JSON
        progress(f"the run's pictures not drawn: {exc}")
        return
    for name, png in pictures.items():
        storage.write_bytes(storage.join(run.out_uri, name), png)


def _heading(summary) -> str:
    """The folds' pictures' title (`timings.png`, `learning.png`): the run and its device."""
    return f"foxhunt run {summary.run_id} on {summary.device}"


def _title(summary, evaluation) -> str:
    """The record's pictures' title (`run.png`, `positions.png`): the heading and the stitched verdict."""
    net = evaluation.stitched.policies[MODEL].net
    flat = flat_words(net.exposure, [r.selection for r in summary.folds])
    # A record that never traded says why, not "model net Sharpe 0.00", which reads as a fault.
    verdict = f"the model's record is {flat} in any fold" if flat else verdict_line(evaluation.stitched)
    return f"{_heading(summary)}\n{verdict}"
