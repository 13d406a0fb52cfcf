"""Batches of trials for a population: asked together, told one by one, counted as trials one at a time are.

The objective is a cheap function of the settings (as in test_trials.py); the population's own
training is in test_population.py, and the whole search through the CLI in test_trials_run.py.
"""

from __future__ import annotations

import math
import sqlite3
import time
import warnings
from contextlib import closing

import optuna
import pytest
from optuna.exceptions import ExperimentalWarning
from support.trials_worker import SPACE, cheap_score, one_at_a_time

from foxhunt.search.space import parse_search_space
from foxhunt.search.storage import STUDY_FILE
from foxhunt.search.study import folds_run, open_study, study_progress, trial_by_number
from foxhunt.search.trial_loop import run_trials
from foxhunt.train import TrainingDiverged

TEST_SPACE = parse_search_space(SPACE, "test space")
optuna.logging.set_verbosity(optuna.logging.WARNING)


def _study(tmp_path, name="s", **kwargs):
    return open_study(None, tmp_path, name, seed=5, **{"heartbeat_seconds": 1, "grace_seconds": 2, **kwargs})


def steady_batch(batch, folds=3, seen=None):
    """Each trial reports its cheap score after every fold (stopping when pruned) and returns it."""
    if seen is not None:
        seen.append([a.number for a in batch])
    results = {}
    for fold in range(folds):
        for asked in batch:
            if not asked.pruned:
                asked.report_fold(fold, cheap_score(asked.params))
    for asked in batch:
        if not asked.pruned:
            results[asked.number] = cheap_score(asked.params)
    return results


def test_trials_are_asked_in_batches_of_the_population_size_and_the_study_ends_at_n(tmp_path):
    study, seen = _study(tmp_path), []
    progress = run_trials(study, 5, lambda b: steady_batch(b, seen=seen), size=2, space=TEST_SPACE, seed=5)
    assert seen == [[0, 1], [2, 3], [4]]
    assert progress.finished == 5 and progress.created == 5
    assert {t.state.name for t in study.get_trials()} == {"COMPLETE"}
    assert len({t.params["lr"] for t in study.get_trials()}) == 5


def test_a_batch_samples_the_settings_one_at_a_time_would(tmp_path):
    run_trials(_study(tmp_path, "batch"), 4, steady_batch, size=4, space=TEST_SPACE, seed=5)
    run_trials(
        _study(tmp_path, "alone"), 4, one_at_a_time(lambda n, p, r: cheap_score(p)), space=TEST_SPACE, seed=5
    )
    batch, alone = (_study(tmp_path, name).get_trials() for name in ("batch", "alone"))
    assert [t.params for t in batch] == [t.params for t in alone]
    assert [t.value for t in batch] == [t.value for t in alone]


def test_each_trial_of_a_batch_gets_its_own_value_and_sharpe_figures(tmp_path):
    from foxhunt.search.study import TrialOutcome

    study = _study(tmp_path)

    def outcomes(batch):
        return {
            a.number: TrialOutcome(objective=float(a.number), sharpe=0.1 * a.number, n_obs=100) for a in batch
        }

    run_trials(study, 3, outcomes, size=3, space=TEST_SPACE, seed=5)
    for number in range(3):
        trial = trial_by_number(study, number)
        assert trial.value == float(number) and trial.user_attrs["sharpe"] == pytest.approx(0.1 * number)


def test_a_pruned_member_ends_pruned_at_its_fold_while_the_others_complete(tmp_path):
    study = _study(tmp_path, pruner=optuna.pruners.MedianPruner(n_startup_trials=2))
    run_trials(study, 2, steady_batch, size=2, space=TEST_SPACE, seed=5)

    def with_a_hopeless_one(batch):
        for fold in range(3):
            for asked in batch:
                if not asked.pruned:
                    asked.report_fold(fold, -100.0 if asked.number == 3 else 100.0)
        return {a.number: 100.0 for a in batch if not a.pruned}

    run_trials(study, 4, with_a_hopeless_one, size=2, space=TEST_SPACE, seed=5)
    hopeless = trial_by_number(study, 3)
    assert hopeless.state.name == "PRUNED" and folds_run(hopeless) == 1
    assert trial_by_number(study, 2).state.name == "COMPLETE"


def test_a_diverged_member_fails_its_own_trial_with_the_reason_and_the_study_goes_on(tmp_path):
    study = _study(tmp_path)

    def one_diverges(batch):
        results = steady_batch(batch)
        results[1] = TrainingDiverged("fold 0 epoch 1: loss is nan")
        return results

    progress = run_trials(study, 3, one_diverges, size=3, space=TEST_SPACE, seed=5, catch=(TrainingDiverged,))
    assert progress.finished == 3
    failed = trial_by_number(study, 1)
    assert (
        failed.state.name == "FAIL"
        and failed.user_attrs["error"] == "TrainingDiverged: fold 0 epoch 1: loss is nan"
    )
    assert [trial_by_number(study, n).state.name for n in (0, 2)] == ["COMPLETE", "COMPLETE"]


def test_a_nan_objective_fails_only_its_trial(tmp_path):
    study = _study(tmp_path)
    run_trials(
        study,
        2,
        lambda b: {a.number: math.nan if a.number == 0 else 1.0 for a in b},
        size=2,
        space=TEST_SPACE,
        seed=5,
    )
    assert (
        trial_by_number(study, 0).state.name == "FAIL"
        and "nan" in trial_by_number(study, 0).user_attrs["error"]
    )
    assert trial_by_number(study, 1).state.name == "COMPLETE"


class Interrupted(Exception):
    """Stands for the pipeline's SIGTERM stop: an exception the loop does not catch."""


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit, Interrupted])
def test_an_interrupted_batch_retries_every_member_with_its_settings_and_the_study_still_finishes_n(
    tmp_path, interrupt
):
    study = _study(tmp_path)

    def interrupted(batch):
        batch[0].report_fold(0, 0.0)
        raise interrupt

    with pytest.raises(interrupt):
        run_trials(study, 2, interrupted, size=2, space=TEST_SPACE, seed=5)
    assert [t.state.name for t in study.get_trials()] == ["FAIL", "FAIL", "WAITING", "WAITING"]
    progress = run_trials(_study(tmp_path), 2, steady_batch, size=2, space=TEST_SPACE, seed=5)
    assert progress.finished == 2 and progress.created == 4
    for first, retry in ((0, 2), (1, 3)):
        assert trial_by_number(study, retry).params == trial_by_number(study, first).params
        assert trial_by_number(study, retry).state.name == "COMPLETE"


def test_a_sole_worker_retries_a_batch_left_running_without_waiting_for_its_heartbeat(tmp_path):
    study = _study(tmp_path, grace_seconds=3600)
    with pytest.raises(SystemExit):
        run_trials(study, 2, lambda b: (_ for _ in ()).throw(SystemExit), size=2, space=TEST_SPACE, seed=5)
    progress = run_trials(
        _study(tmp_path, grace_seconds=3600),
        2,
        steady_batch,
        size=2,
        space=TEST_SPACE,
        seed=5,
        exclusive=True,
    )
    assert progress.finished == 2 and study_progress(study).finished == 2


def test_every_member_keeps_a_fresh_heartbeat_while_the_batch_trains(tmp_path):
    study = _study(tmp_path)  # heartbeat every second, stale after two
    seen = {}

    def slow(batch):
        time.sleep(3)  # past the grace period: without heartbeats the trials would be failed as stale
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)
        ids = ",".join(str(a.trial._trial_id) for a in batch)
        with closing(sqlite3.connect(tmp_path / STUDY_FILE)) as db:
            seen["beating"] = db.execute(
                f"select count(*) from trial_heartbeats where trial_id in ({ids})"
            ).fetchone()[0]
        seen["states"] = [trial_by_number(study, a.number).state.name for a in batch]
        return steady_batch(batch)

    run_trials(study, 2, slow, size=2, space=TEST_SPACE, seed=5)
    assert seen == {"beating": 2, "states": ["RUNNING", "RUNNING"]}
    assert study_progress(study).finished == 2


def test_a_settings_failure_the_objective_raises_fails_every_trial_of_the_batch_not_pruned(tmp_path):
    study = _study(tmp_path, pruner=optuna.pruners.MedianPruner(n_startup_trials=2))
    run_trials(study, 2, steady_batch, size=2, space=TEST_SPACE, seed=5)

    def raises_after_pruning_one(batch):
        for asked in batch:
            asked.report_fold(0, -100.0 if asked.number == 3 else 100.0)
        raise TrainingDiverged("the population's step overflowed")

    progress = run_trials(
        study, 4, raises_after_pruning_one, size=2, space=TEST_SPACE, seed=5, catch=(TrainingDiverged,)
    )
    assert progress.finished == 4
    assert trial_by_number(study, 3).state.name == "PRUNED"
    failed = trial_by_number(study, 2)
    assert failed.state.name == "FAIL"
    assert failed.user_attrs["error"] == "TrainingDiverged: the population's step overflowed"


def test_a_trial_another_worker_declared_stale_stops_training_and_is_left_to_its_retry(tmp_path):
    study, told = _study(tmp_path), []

    def declared_stale_after_fold_0(batch):
        asked = batch[0]
        stopped = []
        for fold in range(3):
            if asked.number == 0 and fold == 1:  # as another worker's fail_stale_trials would
                study.tell(asked.number, state=optuna.trial.TrialState.FAIL)
            stopped.append(asked.report_fold(fold, 1.0))
            if stopped[-1]:
                break
        told.append((asked.number, stopped, asked.stale))
        return {} if asked.stale else {asked.number: 1.0}

    progress = run_trials(study, 2, declared_stale_after_fold_0, space=TEST_SPACE, seed=5)
    assert told[0] == (0, [False, True], True)
    assert trial_by_number(study, 0).state.name == "FAIL"
    assert progress.finished == 2 and [t.state.name for t in study.get_trials()][1:] == ["COMPLETE"] * 2
