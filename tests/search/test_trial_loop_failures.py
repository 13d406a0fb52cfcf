"""The trial loop survives the failures around a batch: a worker dying while it asks, a storage error in
a heartbeat, an interruption after a member was pruned, a settings failure of one shape's group."""

from __future__ import annotations

import time
import warnings

import optuna
import pytest
from optuna.exceptions import ExperimentalWarning
from support.trials_worker import SPACE

from foxhunt.search.space import parse_search_space
from foxhunt.search.study import open_study, study_progress
from foxhunt.search.trial_loop import ask_batch, run_trials

TEST_SPACE = parse_search_space(SPACE, "test space")
optuna.logging.set_verbosity(optuna.logging.WARNING)


def _study(tmp_path, **kwargs):
    return open_study(None, tmp_path, "s", seed=5, **{"heartbeat_seconds": 1, "grace_seconds": 2, **kwargs})


def _fail_stale(study) -> None:
    """What another worker's loop does each round: fail the trials whose heartbeat is stale."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)


def _states(study) -> list[str]:
    return [t.state.name for t in study.get_trials()]


def test_a_worker_stopped_while_asking_its_batch_leaves_the_asked_trials_to_their_retries(
    tmp_path, monkeypatch
):
    import foxhunt.search.trial_loop as loop

    real, calls = loop.suggest, []

    def stops_at_the_second(trial, space):
        calls.append(trial.number)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(trial, space)

    monkeypatch.setattr(loop, "suggest", stops_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        run_trials(_study(tmp_path), 4, lambda b: {}, size=2, space=TEST_SPACE, seed=5)
    assert _states(_study(tmp_path)) == ["FAIL", "FAIL", "WAITING", "WAITING"]


def test_a_trial_asked_by_a_worker_that_then_died_goes_stale_and_is_retried(tmp_path):
    study = _study(tmp_path)
    ask_batch(study, 1, 4, TEST_SPACE, seed=5, worker=0, created=0)  # then the worker is killed
    time.sleep(3)  # past the grace period
    study_progress(_study(tmp_path))  # another worker's round
    assert _states(study) == ["FAIL", "WAITING"]
