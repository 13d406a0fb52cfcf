"""The Optuna study behind `--trials N`: storage, seeded sampling, per-fold pruning, and the counting by
which the trial loops (`trial_loop.run_trials`, `slot_loop.run_slot_trials`) finish exactly N trials
however many workers share the study and however often they die.

Counting. A study is done when N trials are *finished*: complete, pruned, or failed by the
objective itself (an exception in `catch`: the settings failed, e.g. the training diverged; that
is a verdict, and counting it keeps a study of failing settings from running forever). A trial
that was interrupted (SIGKILL, preemption: its heartbeat went stale; SIGTERM or any other exception
outside `catch`) is not finished: it is retried with the same settings, at most `max_retry` times.

Exactly N with many workers. Trial numbers are assigned under a lock on the study row, so they
give a total order of creation. A trial runs only if fewer than N trials numbered below it are
finished, running or waiting; otherwise it is marked surplus and ends at once (it ran nothing
and is left out of the study table). A worker stops when N are finished; while the other
workers' running trials fill the budget it waits, so that a dead worker's trial, once its
heartbeat is stale, is retried by a live one.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import optuna
from optuna.exceptions import ExperimentalWarning
from optuna.trial import FrozenTrial, TrialState

from foxhunt.config.search import DEFAULT_PRUNER, MEDIAN_STARTUP_TRIALS, PRUNERS
from foxhunt.search.storage import rdb_storage, study_storage_url

# A pod's trial takes minutes; a stale heartbeat after 2 minutes means the worker is gone.
HEARTBEAT_SECONDS = 30
GRACE_SECONDS = 120
MAX_RETRY = 2
# User attributes this module keeps on trials.
ERROR_ATTR = "error"  # the objective failed with an exception in `catch`: a finished trial
SURPLUS_ATTR = "surplus"  # created beyond the budget of N: ran nothing
FOLDS_ATTR = "folds_run"  # kept by searches before 2026-12-07 (`folds_run` reads it)
WORKER_ATTR = "worker"
SHARPE_ATTRS = ("sharpe", "n_obs", "skew", "kurtosis")
WARNING_ATTRS = ("warnings", "collapsed", "ignores_features")


@dataclass(frozen=True)
class TrialOutcome:
    """What one walk-forward run gives its trial: the objective, and for the Deflated Sharpe Ratio the
    per-period (not annualised) net Sharpe of the stitched record with its length, skew and kurtosis."""

    objective: float
    sharpe: float | None = None
    n_obs: int | None = None
    skew: float | None = None
    kurtosis: float | None = None  # non-excess: 3 for normal returns
    warnings: tuple[str, ...] = ()  # the folds' training diagnostics (collapse, features ignored)
    collapsed: bool = False  # the policy collapsed to one action in some fold
    ignores_features: bool = False  # the policy ignored the features in some fold
    rejected: str | None = None  # why the objective refuses this trial (it fails), e.g. a collapse


@dataclass(frozen=True)
class StudyProgress:
    """How far a study is: finished trials (they count towards N), running and waiting ones."""

    finished: int
    running: int
    waiting: int
    created: int


class ObjectiveNotFinite(ArithmeticError):
    """The objective came back NaN or infinite: the trial failed."""


def trial_sampler(
    seed: int, worker: int, trial_index: int, startup_trials: int = 10
) -> optuna.samplers.TPESampler:
    """A TPE sampler seeded from (seed, worker, index of the next trial).

    Workers sample differently, and a restarted worker does not replay the random draws of the
    trials it made before its restart.
    """
    mixed = int(np.random.SeedSequence([seed, worker, trial_index]).generate_state(1)[0])
    return optuna.samplers.TPESampler(seed=mixed, n_startup_trials=startup_trials, constant_liar=True)


def open_study(
    storage_url: str | None,
    work_dir: str | Path,
    study_name: str,
    seed: int,
    *,
    worker: int = 0,
    direction: str = "maximize",
    pruner: optuna.pruners.BasePruner | None = None,
    heartbeat_seconds: int = HEARTBEAT_SECONDS,
    grace_seconds: int = GRACE_SECONDS,
    max_retry: int = MAX_RETRY,
    private: bool = False,
) -> optuna.Study:
    """Create or load the study `study_name`: SQLite in `work_dir` by default, or the given SQLAlchemy URL.
    `private`: `work_dir` is a pod-local folder no other process opens (storage.private_sqlite; an SQLite
    study only).

    Heartbeats mark a dead worker's trial stale after `grace_seconds`; it is then retried with the
    same settings (at most `max_retry` times). The default pruner stops a trial after a fold whose
    value is below the median of earlier trials at that fold, once five trials have completed.
    """
    url = study_storage_url(storage_url, work_dir)
    storage = rdb_storage(
        url,
        heartbeat_seconds=heartbeat_seconds,
        grace_seconds=grace_seconds,
        max_retry=max_retry,
        private=private,
    )
    return optuna.create_study(
        storage=storage,
        study_name=study_name,
        direction=direction,  # type: ignore[arg-type]  # "maximize" or "minimize", as the caller passes
        sampler=trial_sampler(seed, worker, 0),
        pruner=pruner or trial_pruner(DEFAULT_PRUNER),
        load_if_exists=True,
    )


def trial_pruner(name: str) -> optuna.pruners.BasePruner:
    """The pruner `--pruner name` asks for (`search.PRUNERS`): the median rule, or none."""
    if name not in PRUNERS:
        raise ValueError(f"pruner {name!r}: expected one of {', '.join(PRUNERS)}")
    if name == "none":
        return optuna.pruners.NopPruner()
    return optuna.pruners.MedianPruner(n_startup_trials=MEDIAN_STARTUP_TRIALS, n_warmup_steps=0)


def folds_run(trial: FrozenTrial) -> int:
    """The folds the trial walked: one report to the pruner per fold (its intermediate values), or the
    count an older study kept as a user attribute. Counted from the reports, a fold costs the study one
    write instead of two (bench/README, "The search's host work after each round")."""
    return max(len(trial.intermediate_values), int(trial.user_attrs.get(FOLDS_ATTR, 0)))


def best_trial(study: optuna.Study, trials: Sequence[FrozenTrial] | None = None) -> FrozenTrial | None:
    """The best complete trial (the storage's pick), or None while none of `trials` (default: the study's
    now) has completed."""
    trials = study.get_trials(deepcopy=False) if trials is None else trials
    return study.best_trial if any(t.state == TrialState.COMPLETE for t in trials) else None


def is_finished(trial: FrozenTrial) -> bool:
    """True for trials that count towards N: complete, pruned, or failed by the objective itself."""
    if trial.state in (TrialState.COMPLETE, TrialState.PRUNED):
        return True
    return trial.state == TrialState.FAIL and ERROR_ATTR in trial.user_attrs


def is_surplus(trial: FrozenTrial) -> bool:
    """True for trials created beyond the budget, which ran nothing."""
    return bool(trial.user_attrs.get(SURPLUS_ATTR))


def within_budget(trials: Iterable[FrozenTrial], number: int, n_trials: int) -> bool:
    """True when fewer than `n_trials` trials numbered below `number` are finished, running or waiting."""
    holding = (TrialState.RUNNING, TrialState.WAITING)
    return sum(t.number < number and (is_finished(t) or t.state in holding) for t in trials) < n_trials


def study_progress(study: optuna.Study) -> StudyProgress:
    """Fail the stale trials of dead workers (which queues their retries), then count."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
    trials = study.get_trials(deepcopy=False)
    return StudyProgress(
        finished=sum(map(is_finished, trials)),
        running=sum(t.state == TrialState.RUNNING for t in trials),
        waiting=sum(t.state == TrialState.WAITING for t in trials),
        created=len(trials),
    )


def _retry_callback(study: optuna.Study) -> Callable[[optuna.Study, FrozenTrial], None] | None:
    # The storage built by open_study holds the retry callback; Optuna exposes no public way to it.
    getter = getattr(study._storage, "get_heartbeat_stale_trial_callback", None)
    return getter() if getter else None


def _heartbeat_seconds(study: optuna.Study) -> int | None:
    getter = getattr(study._storage, "get_heartbeat_interval", None)
    return getter() if getter else None


def trial_by_number(study: optuna.Study, number: int) -> FrozenTrial:
    """The trial numbered `number`, as stored now (a copy)."""
    # One trial's lookup: reading (and copying) every trial after each one ends grows with the study.
    # Optuna gives no public way from a number to its trial; Study keeps its storage and id private.
    stored = study._storage
    trial_id = stored.get_trial_id_from_study_id_trial_number(study._study_id, number)
    return copy.deepcopy(stored.get_trial(trial_id))


def requeue_running_trials(study: optuna.Study) -> list[int]:
    """Fail and retry every running trial at once; only for a study that no other worker uses.

    A run that owns its study (the embedded SQLite file) knows that a trial left running was
    interrupted, so it need not wait for the heartbeat's grace period. Returns their numbers.
    """
    retry = _retry_callback(study)
    requeued = []
    for trial in study.get_trials(deepcopy=True, states=(TrialState.RUNNING,)):
        if retry is not None:
            retry(study, trial)
        study.tell(trial.number, state=TrialState.FAIL)
        requeued.append(trial.number)
    return requeued


def record_outcome(trial: optuna.Trial, result: float | TrialOutcome) -> float:
    """The objective of a finished walk-forward, its Sharpe figures kept on the trial; ObjectiveNotFinite
    (with the reason kept on the trial) when it is NaN or infinite."""
    outcome = result if isinstance(result, TrialOutcome) else TrialOutcome(objective=float(result))
    trial.set_user_attr("warnings", list(outcome.warnings))
    trial.set_user_attr("collapsed", outcome.collapsed)
    trial.set_user_attr("ignores_features", outcome.ignores_features)
    if outcome.rejected is not None:
        trial.set_user_attr(ERROR_ATTR, outcome.rejected)
        raise ObjectiveNotFinite(f"trial {trial.number}: {outcome.rejected}")
    if not math.isfinite(outcome.objective):
        trial.set_user_attr(ERROR_ATTR, f"objective is {outcome.objective}")
        raise ObjectiveNotFinite(f"trial {trial.number}: objective is {outcome.objective}")
    for name in SHARPE_ATTRS:
        value = getattr(outcome, name)
        if value is not None:
            trial.set_user_attr(name, value)
    return float(outcome.objective)


def requeue_if_running(study: optuna.Study, number: int, *, retry: bool = True) -> None:
    """A trial that an interruption left running: queue its retry (same settings, unless `retry` is
    False because that was done already) and fail it."""
    if trial_by_number(study, number).state == TrialState.RUNNING:
        callback = _retry_callback(study) if retry else None
        if callback is not None:
            callback(study, trial_by_number(study, number))
        study.tell(number, state=TrialState.FAIL)


# The selection check's figures as study user attributes (what optuna-dashboard shows of a study).
DSR_ATTR, PBO_ATTR, DSR_TRIAL_ATTR = "dsr", "pbo", "dsr_trial"


def record_selection(study: optuna.Study, dsr: float | None, pbo: float | None, trial: int | None) -> None:
    """Keep the best trial's Deflated Sharpe Ratio (and which trial that is) and the probability of
    backtest overfitting on the study itself; None where the search cannot compute them (yet)."""
    for key, value in ((DSR_ATTR, dsr), (PBO_ATTR, pbo), (DSR_TRIAL_ATTR, trial)):
        study.set_user_attr(key, value)
