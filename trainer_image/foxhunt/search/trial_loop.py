"""The batch trial loop (a universe's search, trials one at a time), and what the slot loop of a one-instrument
search (`slot_loop`) shares with it: asking, heartbeats, telling, the end at an interruption. Trials are asked
in batches of up to `size`, trained by the objective, told one by one.

The TPE sampler's constant liar spreads the trials of a batch, as it does the running trials of other
workers. While a batch trains the loop keeps every trial's heartbeat, and then tells each trial its
own end: complete, pruned after a fold, or failed by its settings. The counting is the study's
(`study`): the budget of N finished trials, the surplus rule for trials created beyond it, and the retry
(with the same settings) of trials that an interruption left running.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import FrozenTrial, TrialState

from foxhunt.config.search import Distribution
from foxhunt.search.space import suggest
from foxhunt.search.study import (
    ERROR_ATTR,
    SURPLUS_ATTR,
    WORKER_ATTR,
    ObjectiveNotFinite,
    StudyProgress,
    TrialOutcome,
    _heartbeat_seconds,
    record_outcome,
    requeue_if_running,
    requeue_running_trials,
    study_progress,
    trial_by_number,
    trial_sampler,
    within_budget,
)

log = logging.getLogger(__name__)


@dataclass
class AskedTrial:
    """A trial asked by the loop: its settings, and whether it is to train no further after a fold."""

    trial: optuna.Trial
    params: dict[str, Any]
    pruned: bool = False  # its pruner stopped it after a fold
    stale: bool = False  # another worker declared it stale while it ran, and queued its retry

    @property
    def number(self) -> int:
        return self.trial.number

    def report_fold(self, fold: int, value: float, *, last: bool = False) -> bool:
        """Report the fold's value to the pruner; True when the trial is to train no further (pruned, or
        stale: its retry carries on elsewhere). After the `last` fold the pruner is not asked."""
        try:
            self.trial.report(value, step=fold)  # the fold counted too (study.folds_run)
            # A trial that walked every fold has its objective: pruning it now would save nothing.
            self.pruned = not last and self.trial.should_prune()
        except UpdateFinishedTrialError:
            self.stale = True
        return self.pruned or self.stale


# A batch's results by trial number: the walk-forward's outcome, or the exception (in `catch`) that
# failed the trial's settings. A pruned trial needs no entry.
BatchResults = dict[int, TrialOutcome | float | Exception]
BatchObjective = Callable[[list[AskedTrial]], BatchResults]


def ask_batch(
    study: optuna.Study,
    count: int,
    n_trials: int,
    space: Mapping[str, Distribution],
    *,
    seed: int,
    worker: int,
    created: int,
    startup_trials: int = 10,
) -> list[AskedTrial]:
    """Ask up to `count` trials with sampled settings (a waiting retry keeps its own); a trial beyond the
    budget is marked surplus and ended. An exception on the way requeues the trials already asked."""
    batch: list[AskedTrial] = []
    asked: list[int] = []
    heartbeat = _heartbeat_seconds(study)
    try:
        for k in range(count):
            study.sampler = trial_sampler(seed, worker, created + k, startup_trials)
            with warnings.catch_warnings():
                # This loop keeps the heartbeats itself (see `heartbeats`), which Optuna cannot know.
                warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used")
                trial = study.ask()
            asked.append(trial.number)
            if heartbeat:  # from its first moment, so that a worker killed now leaves a trial that goes stale
                study._storage.record_heartbeat(trial._trial_id)  # type: ignore[attr-defined]  # RDBStorage
            if not within_budget(study.get_trials(deepcopy=False), trial.number, n_trials):
                trial.set_user_attr(SURPLUS_ATTR, True)
                study.tell(trial, state=TrialState.FAIL)
                continue
            trial.set_user_attr(WORKER_ATTR, worker)
            batch.append(AskedTrial(trial, suggest(trial, space)))
    except BaseException:
        for number in asked:  # running, and no other worker would retry them before their grace ran out
            requeue_if_running(study, number)
        raise
    return batch


@contextmanager
def heartbeats(
    study: optuna.Study, trials: Callable[[], Iterable[AskedTrial]], seconds: int | None
) -> Iterator[None]:
    """Record the heartbeat of every trial `trials()` gives (asked again at each beat) each `seconds` while the
    block runs (nothing when heartbeats are off); a beat the storage fails is logged and tried again at the next."""
    if not seconds:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        while True:
            # Asked at each beat: the slot loop's trials start and end while the block runs.
            for trial_id in [asked.trial._trial_id for asked in trials()]:
                try:
                    study._storage.record_heartbeat(trial_id)  # type: ignore[attr-defined]  # RDBStorage, checked by the caller
                except Exception as exc:  # a lost connection: a dead thread would let the trials go stale
                    log.warning("heartbeat of trial id %d failed (next in %d s): %s", trial_id, seconds, exc)
            if stop.wait(seconds):
                return

    thread = threading.Thread(target=beat, name="trial-heartbeats", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def tell_trial(
    study: optuna.Study, asked: AskedTrial, result: Any, catch: tuple[type[Exception], ...]
) -> None:
    """End one trial as its result says: pruned, failed by its settings, or complete."""
    trial = asked.trial
    if asked.pruned:
        study.tell(trial, state=TrialState.PRUNED)
        return
    if isinstance(result, catch):
        trial.set_user_attr(ERROR_ATTR, f"{type(result).__name__}: {result}")
        study.tell(trial, state=TrialState.FAIL)
        return
    if result is None or isinstance(result, BaseException):
        raise RuntimeError(f"trial {trial.number}: the objective returned no result ({result!r})")
    try:
        value = record_outcome(trial, result)
    except ObjectiveNotFinite:
        study.tell(trial, state=TrialState.FAIL)
        return
    study.tell(trial, value)


Callbacks = Iterable[Callable[[optuna.Study, FrozenTrial], None]]


def _after_trial(study: optuna.Study, number: int, callbacks: Callbacks) -> None:
    """The callbacks on trial `number`, just told its end."""
    trial = trial_by_number(study, number)
    for callback in callbacks:
        callback(study, trial)


def _train_batch(
    study: optuna.Study,
    batch: list[AskedTrial],
    objective: BatchObjective,
    heartbeat: int | None,
    catch: tuple[type[Exception], ...],
    callbacks: Callbacks = (),
) -> BatchResults:
    """`objective(batch)` with the trials' heartbeats kept; an exception in `catch` is every trial's
    result, any other ends the members already pruned as pruned (then runs the callbacks on them, as on
    any pruned trial), requeues the batch's other running trials and goes on up."""
    try:
        with heartbeats(study, lambda: batch, heartbeat):
            return objective(batch)
    except catch as exc:
        return {asked.number: exc for asked in batch}
    except BaseException:
        end_interrupted(study, batch, callbacks)
        raise


def end_interrupted(study: optuna.Study, trials: list[AskedTrial], callbacks: Callbacks) -> None:
    """An interruption's end of the trials under way: a pruned one ends pruned (its callbacks run, a failing
    one logged), any other is queued for a retry with its settings."""
    told = []
    for asked in trials:
        if asked.pruned and not asked.stale:  # its verdict came before the interruption: no retry
            try:
                study.tell(asked.trial, state=TrialState.PRUNED)
                told.append(asked.number)
            except UpdateFinishedTrialError:
                pass  # declared stale by another worker since its last fold
        else:
            requeue_if_running(study, asked.number)
    for number in told:  # after every trial is settled: a failing callback leaves none running
        try:
            _after_trial(study, number, callbacks)
        except Exception as exc:  # the interruption is what this worker reports; this is logged
            log.warning("trial %d pruned at an interruption: its callbacks failed: %s", number, exc)


def _tell_batch(
    study: optuna.Study,
    batch: list[AskedTrial],
    results: BatchResults,
    catch: tuple[type[Exception], ...],
    callbacks: Callbacks,
) -> None:
    """Tell each trial of the batch its end, then run the callbacks on it."""
    for asked in batch:
        tell_and_report(study, asked, results.get(asked.number), catch, callbacks)


def tell_and_report(
    study: optuna.Study,
    asked: AskedTrial,
    result: Any,
    catch: tuple[type[Exception], ...],
    callbacks: Callbacks,
) -> None:
    """Tell one trial its end (`tell_trial`), then run the callbacks on it; nothing for a stale trial."""
    if asked.stale:
        return  # another worker declared it stale while it ran; its retry carries on there
    try:
        tell_trial(study, asked, result, catch)
    except UpdateFinishedTrialError:
        return  # declared stale after its last fold
    _after_trial(study, asked.number, callbacks)


def run_trials(
    study: optuna.Study,
    n_trials: int,
    objective: BatchObjective,
    *,
    size: int = 1,
    space: Mapping[str, Distribution],
    seed: int,
    worker: int = 0,
    catch: tuple[type[Exception], ...] = (),
    callbacks: Callbacks = (),
    poll_seconds: float | None = None,
    exclusive: bool = False,
    startup_trials: int = 10,
) -> StudyProgress:
    """Run trials, up to `size` at a time, until the study has `n_trials` finished ones; returns the
    final progress.

    Each round asks a batch (`ask_batch`), keeps its trials' heartbeats while `objective(batch)` trains
    their walk-forwards (alone for a batch of one, side by side for a population), calling each trial's
    `report_fold` after each fold, and tells every trial its own end from the results the objective
    returns by trial number; `callbacks(study, trial)` run after each trial told. An exception in
    `catch` that the objective raises, rather than returns for one trial, is the verdict of every trial
    of the batch not pruned (for a batch of one: its trial's). Any other exception ends the loop: a
    trial of the batch pruned already ends pruned (the callbacks run on it), every other one still running is queued for a retry
    with its settings, and failed.
    `exclusive=True` (this worker alone uses the study) retries left-over running trials at once.
    """
    if exclusive:
        requeue_running_trials(study)
    heartbeat = _heartbeat_seconds(study)
    poll = poll_seconds if poll_seconds is not None else (heartbeat or 1.0)
    while True:
        progress = study_progress(study)
        if progress.finished >= n_trials:
            return progress
        free = n_trials - progress.finished - progress.running
        if free <= 0:
            if heartbeat is None:  # nothing would ever notice a dead worker's trial: do not wait for it
                return progress
            time.sleep(poll)
            continue
        batch = ask_batch(
            study,
            min(size, free),
            n_trials,
            space,
            seed=seed,
            worker=worker,
            created=progress.created,
            startup_trials=startup_trials,
        )
        if not batch:
            continue
        results = _train_batch(study, batch, objective, heartbeat, catch, callbacks)
        _tell_batch(study, batch, results, catch, callbacks)
