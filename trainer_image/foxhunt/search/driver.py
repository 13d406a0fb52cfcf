"""The search driver: `--trials N` as an Optuna study whose trials are whole walk-forward runs.

Everything a trial does not change is made once per process: the fxcache is on the device once for
the whole study, and one trainer per distinct shape (`POPULATION_SHARED`: batch size, hidden width, step count)
serves every trial of that shape. Between trials `apply_settings` refills the device values that the
captured step reads (no new capture, no new compile); between folds `reset_for_fold` does the rest.
The slot loop (`slot_loop.run_slot_trials`) trains `--population P` slots (1 by default) fold by fold,
a slot freed by a trial that ends taken by the next; `population.PopulationRounds` trains a round's
trials, one fold each, as the members of the trainer of their shape with `walk.walk_folds` (as a run
does), reports each fold's net validation Sharpe to the pruner, and `TrialScoring` scores each trial
after its last fold on the stitched out-of-sample record (`evaluation`, without the bootstrap: a cheap objective). Its outputs are `trials/NNNN/fold_F/` and
`trials/NNNN/trial.json` in `--out`; the manifest records each completed fold of each trial. The
study's files are written once after each round that ends a trial (a population's members mostly end in
the same round), and once more at the end.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from foxhunt import out_names, storage, strict_json
from foxhunt.config import DQNConfig, RunConfig, override
from foxhunt.config.search import (
    DEFAULT_SEARCH_SPACE,
    NO_COLLAPSE_SUFFIX,
    Distribution,
    SearchOptions,
    study_name,
)
from foxhunt.data.folds import FoldRange
from foxhunt.errors import RunFailure
from foxhunt.evaluate.evaluation import MODEL, RunEvaluation
from foxhunt.evaluate.run_scores import run_scoring
from foxhunt.evaluate.score_memo import ScoreMemo
from foxhunt.run.fold import FoldOutcome, load_fold, out_of_sample_evidence, stitch_outcomes
from foxhunt.run.holdout import holdout_range, run_holdout
from foxhunt.run.lifecycle import Run, now_iso
from foxhunt.run.manifest import FoldRecord, WorkRecord, write_manifest
from foxhunt.run.sinks.telemetry_reads import fold_figures
from foxhunt.search.headline import TABLE_FILES, write_headline_tables
from foxhunt.search.outputs import BestTrial, StudySummary, TrialReport, trial_folder, write_study_outputs
from foxhunt.search.population import PopulationRounds, TrainerPool, trainer_builder
from foxhunt.search.slot_loop import run_slot_trials
from foxhunt.search.space import load_search_space
from foxhunt.search.storage import (
    StudyFolder,
    check_storage_url,
    redacted,
    study_folder,
    sync_study_file,
)
from foxhunt.search.study import (
    ERROR_ATTR,
    TrialOutcome,
    is_finished,
    open_study,
    record_selection,
    trial_pruner,
)
from foxhunt.search.telemetry import TrialMetrics
from foxhunt.train import DeviceData, TrainingDiverged
from foxhunt.train.epoch_figures import COLLAPSED, fold_flags
from foxhunt.train.evidence import WindowEvidence

TRIAL_REPORT = out_names.TRIAL_REPORT
# A trial whose training diverges failed on its settings: a verdict, and the study goes on.
SETTINGS_FAILURES = (TrainingDiverged, OverflowError, FloatingPointError)  # numbers its settings broke


@dataclass(frozen=True)
class SearchPlan:
    """A search checked before any work: its options, its space and the study's name."""

    options: SearchOptions
    space: dict[str, Distribution]
    study_name: str

    @property
    def identity(self) -> dict[str, Any]:
        """What a resumed search must share with the one in `--out` (the manifest compares it)."""
        return {
            "objective": self.options.objective,
            "study_name": self.study_name,
            "storage": redacted(self.options.study_storage) if self.options.study_storage else "embedded",
            "space": {name: d.to_dict() for name, d in self.space.items()},
        }

    def run(self, run: Run, data: DeviceData, folds: list[FoldRange]) -> None:
        """The study on the run's loaded data (`run_search`)."""
        run_search(run, data, folds, self)


def plan_search(options: SearchOptions | None, out_uri: str, settings: RunConfig) -> SearchPlan:
    """Read and check the space, the storage URL and the study name; UsageError or BadInput naming the problem."""
    options = options or SearchOptions()
    space = load_search_space(options.search_space) if options.search_space else dict(DEFAULT_SEARCH_SPACE)
    if options.study_storage:
        check_storage_url(options.study_storage)
    explicit_id = settings.run_id or os.environ.get("FOXHUNT_RUN_ID") or os.environ.get("ARGO_WORKFLOW_NAME")
    return SearchPlan(options, space, study_name(options, out_uri, explicit_id))


def objective_value(name: str, evaluation: RunEvaluation) -> float:
    """The `--objective` figure of a trial's evaluation (every one net of the run's evaluation costs)."""
    if name in ("stitched_sharpe", "stitched_sharpe" + NO_COLLAPSE_SUFFIX):
        return evaluation.stitched.policies[MODEL].net.sharpe
    if name == "stitched_return":
        return evaluation.stitched.policies[MODEL].net.log_return
    if name == "mean_fold_sharpe":
        return float(np.mean([w.policies[MODEL].net.sharpe for w in evaluation.folds]))
    raise ValueError(f"unknown objective {name!r}")


class TrialScoring:
    """What the trials of a study share (the run, its data and folds, the scoring), and the records of
    each trial: its folds in the manifest, its stitched score, its `trial.json`."""

    def __init__(self, run: Run, data: DeviceData, folds: list[FoldRange], objective: str) -> None:
        self.run, self.data, self.folds, self.objective = run, data, folds, objective
        settings = run.config
        # The run's evaluation costs without the bootstrap: its interval is not part of any objective.
        self.scoring = replace(run_scoring(settings.eval, settings.seed, data), resamples=0)
        # Every trial scores the same baselines over the same windows: each once for the study.
        self.memo = ScoreMemo()

    def folds_done(self, fold: int, outcomes: dict[int, FoldOutcome]) -> dict[int, float]:
        """Record trials' completed `fold` (trial number → outcome: manifest, metrics); each one's net validation
        Sharpe, for the pruner. The manifest is written once for them all: written per trial, a 64-trial
        search rewrote its growing record 1,152 times (half its host work outside the rounds)."""
        for number, outcome in outcomes.items():
            # Output names relative to --out, as the manifest keeps them for the run's own folds.
            record = self.run.manifest.trials.setdefault(number, WorkRecord())
            outputs = {f"{trial_folder(number)}/{k}": v for k, v in (outcome.outputs or {}).items()}
            record.folds[fold] = FoldRecord(outputs, now_iso())
            self.run.metrics.fold_finished(fold_figures(outcome.report), trial=number)
        if outcomes:
            write_manifest(self.run.out_uri, self.run.manifest)
        return {n: o.report.evaluation.policies[MODEL].net.sharpe for n, o in outcomes.items()}

    def score(
        self, number: int, params: dict[str, Any], dqn: DQNConfig, outcomes: dict[int, FoldOutcome]
    ) -> TrialOutcome:
        """A trial that ran every fold: its stitched out-of-sample record, objective and `trial.json`."""
        evaluation = stitch_outcomes(self.data, self.folds, outcomes, self.scoring, self.memo)
        value = objective_value(self.objective, evaluation)
        self.write_report(number, params, dqn, outcomes, evaluation, value)
        net = evaluation.stitched.policies[MODEL].net
        flags = [fold_flags(o.report.epochs) for o in outcomes.values()]
        collapsed = any(c for c, _ in flags)
        return TrialOutcome(
            objective=value,
            sharpe=net.sharpe_per_period,
            n_obs=net.n_bars,
            skew=net.skewness,
            kurtosis=net.kurtosis,
            warnings=tuple(w for o in outcomes.values() for w in o.report.warnings),
            collapsed=collapsed,
            ignores_features=any(i for _, i in flags),
            rejected=COLLAPSED if collapsed and self.objective.endswith(NO_COLLAPSE_SUFFIX) else None,
        )

    def write_report(self, number, params, dqn, outcomes, evaluation, value=None) -> None:
        """`trials/NNNN/trial.json`: the settings, the fold Sharpes, and for a complete trial its record."""
        report = TrialReport(
            number=number,
            params=params,
            dqn=asdict(dqn),
            objective=self.objective,
            value=value,
            fold_net_sharpe={f: o.report.evaluation.policies[MODEL].net.sharpe for f, o in outcomes.items()},
            stitched=None if evaluation is None else evaluation.stitched.policies[MODEL],
            best_baseline=None if evaluation is None else evaluation.stitched.best_baseline,
        )
        data = strict_json.json_bytes(report.to_dict())  # undefined figures (no bootstrap) are null
        storage.write_bytes(storage.join(self.run.out_uri, trial_folder(number), TRIAL_REPORT), data)


def _open(run: Run, plan: SearchPlan, folder: StudyFolder) -> optuna.Study:
    """Open (or create) the plan's study in `folder` or its storage, and say so on the run's lines."""
    settings, options = run.config, plan.options
    study = open_study(
        options.study_storage,
        folder.path,
        plan.study_name,
        settings.seed,
        worker=options.worker,
        pruner=trial_pruner(options.pruner),
        private=folder.private,
    )
    where = redacted(options.study_storage) if options.study_storage else "embedded"
    run.progress(
        f"study {plan.study_name} ({where}): {settings.trials} trials, objective {options.objective}, "
        f"searching {', '.join(plan.space)}; worker {options.worker}"
        + (f"; {options.population} trials side by side" if options.population > 1 else "")
    )
    return study


def run_search(run: Run, data: DeviceData, folds: list[FoldRange], plan: SearchPlan) -> StudySummary:
    """The study of `run`: trials until it has `run.config.trials` finished ones; returns `study.json`'s content."""
    settings, options = run.config, plan.options
    # The run's own lines say how each trial ended; Optuna would add a traceback for a stopped one.
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    max_rows = max(f.train_rows for f in folds)
    pool = TrainerPool(trainer_builder(run, data, max_rows), options.population)
    with study_folder(run.out_uri, embedded=options.embedded) as folder:
        study = _open(run, plan, folder)
        synced = folder.synced
        save = partial(_save_study, run, study, pool, synced)
        metrics = TrialMetrics(run.metrics.registry, settings.trials)
        metrics.update_study(study)  # a resumed study's totals, and every counter at its value, at once
        # The folds this process may train: every fold of each trial still to run (pruning ends some early).
        finished_before = sum(map(is_finished, study.get_trials(deepcopy=False)))
        left = max(settings.trials - finished_before, 0)
        started = time.monotonic()
        run.summary.folds_planned = left * len(folds)
        run.metrics.folds_planned(run.summary.folds_planned)  # pushes

        def after_trial(study: optuna.Study, trial: FrozenTrial) -> None:
            trials = study.get_trials(deepcopy=False)  # one read for the metrics and the line
            metrics.record(study, trial, trials)
            run.metrics.push()
            finished = sum(map(is_finished, trials))
            estimate = time_left(
                time.monotonic() - started, finished - finished_before, settings.trials - finished
            )
            run.progress(_trial_line(trial, finished, settings.trials) + estimate)

        def after_round(study: optuna.Study) -> None:
            save()  # once for a round's ended trials: a population's members mostly end together

        try:
            scoring = TrialScoring(run, data, folds, options.objective)
            rounds = PopulationRounds(scoring, pool, SETTINGS_FAILURES)
            run_slot_trials(study, settings.trials, rounds, size=options.population,
                       space=plan.space, seed=settings.seed, worker=options.worker, catch=SETTINGS_FAILURES,
                       callbacks=[after_trial], round_callbacks=[after_round],
                       exclusive=options.embedded)  # fmt: skip
        except BaseException:
            _save_on_the_way_out(run, save)
            raise
        finally:
            run.summary.graph_captures = pool.graph_captures
            run.progress(
                f"{'populations' if options.population > 1 else 'trainers'} built: {pool.builds} "
                f"(one per shape), graph captures {pool.graph_captures}"
            )
        metrics.update_study(study)
        summary = save()
    if run.config.draws_pictures:
        _draw_trials(run)
    if summary.best is None:
        raise RunFailure(f"study {plan.study_name}: no trial completed, so there are no best settings")
    run.progress(_closing_line(summary, summary.best, run.out_uri))
    if options.worker == 0:  # the chosen settings' headline and its files (one worker)
        _headline(run, data, folds, summary, summary.best, pool, max_rows, options.objective)
    return summary


def _headline(
    run: Run, data: DeviceData, folds: list[FoldRange], summary: StudySummary, best: BestTrial,
    pool: TrainerPool, max_rows: int, objective: str,
) -> None:  # fmt: skip
    """The held-out period trained with the best trial's settings (`--holdout-days`) on the trainer of its
    shape that trained the trials (member 0, as a trial alone in a round), then the headline's trade list,
    daily and monthly files (the held-out period's, or the best trial's record); `study.json` again with
    both."""
    settings = run.config
    scoring = run_scoring(settings.eval, settings.seed, data)
    holdout = None
    if settings.folds.holdout_days > 0:
        dqn = override(settings.dqn, best.params, what=f"trial {best.number}")
        in_search = {"what": f"best trial {best.number}'s {objective} over the search's folds, selected",
                     "value": best.objective}  # fmt: skip
        # The pool's trainer: no second build (on CUDA a compile and a capture), the trials' own numerics.
        summary.holdout = run_holdout(
            run, data, pool.trainer_for([dqn]), len(folds), max_rows, scoring,
            f"best trial {best.number}'s settings", in_search, {0: _best_evidence(run, folds, best.number)},
        )  # fmt: skip
        holdout = holdout_range(data.timestamp, settings.folds, len(folds), max_rows)
    try:
        summary.headline_tables = write_headline_tables(
            run.out_uri, data, scoring, folds, best.number, holdout
        )
        run.progress(f"headline files ({summary.headline_tables['record']}): {', '.join(TABLE_FILES)}")
    except FileNotFoundError as exc:  # a shared study: another worker, another --out, ran the best trial
        run.progress(f"headline files not written: best trial {best.number}'s folds are not in --out ({exc})")
    storage.write_bytes(
        storage.join(run.out_uri, out_names.STUDY_SUMMARY), strict_json.json_bytes(summary.to_dict())
    )


def _best_evidence(run: Run, folds: list[FoldRange], number: int) -> list[WindowEvidence]:
    """The out-of-sample windows trial `number`'s folds recorded (its reports under --out), which the held-out
    fold's pooled decision weighs as the trial's folds did; none when another worker's --out holds them."""
    folder = storage.join(run.out_uri, trial_folder(number))
    try:
        return out_of_sample_evidence({f.fold: load_fold(folder, f.fold) for f in folds})
    except FileNotFoundError:
        run.progress(
            f"holdout: trial {number}'s folds are not in --out; its decision weighs its own tail only"
        )
        return []


def _save_study(
    run: Run,
    study: optuna.Study,
    pool: TrainerPool,
    synced: Path | None,
    trials: list[FrozenTrial] | None = None,
) -> StudySummary:
    """The study's files in `--out` (and the SQLite study uploaded there when `--out` is s3://); of `trials`
    where the caller read them."""
    # What this process built, for the record: one trainer, capture and compile per shape.
    built = {"builds": pool.builds, "graph_captures": pool.graph_captures, "compiles": pool.compiles}
    summary = write_study_outputs(
        study,
        run.out_uri,
        planned_trials=run.config.trials,
        base=run.config.dqn,
        trainers=built,
        trials=trials,
    )
    selection = summary.selection  # DSR and PBO on the study, for optuna-dashboard
    record_selection(study, selection.dsr, selection.overfitting.get("pbo"), selection.trial)
    if synced is not None:
        sync_study_file(synced, run.out_uri)
    return summary


def _draw_trials(run: Run) -> None:
    """`trials.png` from the study's files, once the trials are done (drawing after each would cost seconds)."""
    try:
        from foxhunt.evaluate.plot_search import render_trials_png

        png = render_trials_png(run.out_uri)
    except ImportError as exc:  # a slim image without matplotlib still reports in JSON
        run.progress(f"{out_names.TRIALS_PICTURE} not drawn: {exc}")
        return
    storage.write_bytes(storage.join(run.out_uri, out_names.TRIALS_PICTURE), png)


def _save_on_the_way_out(run: Run, save: Callable[[], Any]) -> None:
    # The run is ending on an error or a signal: keep what the study has, but never hide the cause.
    try:
        save()
    except Exception as exc:  # noqa: BLE001 (reported, then the original exception goes on)
        run.progress(f"study outputs not written on the way out: {type(exc).__name__}: {exc}")


def time_left(elapsed_s: float, done_here: int, remaining: int) -> str:
    """The search's estimate of its remaining wall time, from this process's pace ("" before a first
    trial ends here, or when none remain): a long CPU search says how long it will take."""
    if done_here <= 0 or remaining <= 0:
        return ""
    pace = elapsed_s / done_here
    left_min = pace * remaining / 60
    return f"; about {left_min:.0f} min left ({pace / 60:.1f} min a trial here)"


def _trial_line(trial: FrozenTrial, finished: int, planned: int) -> str:
    value = f" objective {trial.value:.4g}" if trial.state == TrialState.COMPLETE else ""
    error = f" ({trial.user_attrs[ERROR_ATTR]})" if ERROR_ATTR in trial.user_attrs else ""
    return f"trial {trial.number} {trial.state.name.lower()}{value}{error}; {finished}/{planned} finished"


def _closing_line(summary: StudySummary, best: BestTrial, out_uri: str) -> str:
    selection = summary.selection
    dsr_text = selection.dsr_reading or f"DSR undefined: {selection.reason}"
    overfitting = selection.overfitting
    dsr_text += "; " + overfitting.get("reading", f"PBO undefined: {overfitting.get('reason')}")
    return (
        f"study {summary.study_name}: {summary.finished_trials}/{summary.planned_trials} trials finished; "
        f"best trial {best.number} objective {best.objective:.4g}; {dsr_text}; "
        f"best settings: {storage.join(out_uri, out_names.BEST_PARAMS)}"
    )
