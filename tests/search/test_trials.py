"""Trials: the study loop (pruning, failures, retries, restarts, the budget of N), the study's outputs
and metrics. The objective is a cheap function of the settings; the walk-forward objective is the
pipeline's. Search spaces: test_trial_space.py; storage and worker processes: test_trial_storage.py."""

from __future__ import annotations

import csv
import io
import json
import math
import threading
from statistics import NormalDist

import numpy as np
import optuna
import pytest
from prometheus_client import CollectorRegistry
from support.trials_worker import SPACE, cheap_score, one_at_a_time

from foxhunt.config import DQNConfig, override
from foxhunt.search.outputs import (
    BEST_PARAMS,
    TABLE_CSV,
    TABLE_JSON,
    selection_check,
    write_study_outputs,
)
from foxhunt.search.space import parse_search_space, suggest
from foxhunt.search.study import (
    TrialOutcome,
    folds_run,
    open_study,
    study_progress,
    trial_by_number,
    trial_pruner,
    trial_sampler,
    within_budget,
)
from foxhunt.search.telemetry import TrialMetrics
from foxhunt.search.trial_loop import run_trials
from foxhunt.storage import read_bytes

TEST_SPACE = parse_search_space(SPACE, "test space")
optuna.logging.set_verbosity(optuna.logging.WARNING)


def _study(tmp_path, name="s", **kwargs):
    return open_study(None, tmp_path, name, seed=5, **{"heartbeat_seconds": 1, "grace_seconds": 2, **kwargs})


def _steady(number, params, report_fold, folds=3):
    """Reports the same score after every fold and returns it."""
    score = cheap_score(params)
    for fold in range(folds):
        if report_fold(fold, score):
            return score
    return score


# ---- sampling and the budget of N -------------------------------------------------------------------


def test_the_sampler_is_seeded_by_seed_worker_and_trial_index():
    def first_lr(*args):
        return suggest(optuna.create_study(sampler=trial_sampler(*args)).ask(), TEST_SPACE)["lr"]

    assert first_lr(5, 0, 3) == first_lr(5, 0, 3)
    assert len({first_lr(5, 0, 3), first_lr(5, 1, 3), first_lr(5, 0, 4), first_lr(6, 0, 3)}) == 4


def _frozen(number, state, **user_attrs):
    values = {"value": 1.0} if state == optuna.trial.TrialState.COMPLETE else {}
    trial = optuna.create_trial(state=state, user_attrs=user_attrs, **values)
    trial.number = number
    return trial


def test_a_trial_runs_only_while_fewer_than_n_earlier_trials_hold_the_budget():
    s = optuna.trial.TrialState
    earlier = [_frozen(0, s.COMPLETE), _frozen(1, s.PRUNED), _frozen(2, s.RUNNING)]
    assert within_budget(earlier, 3, 4) and not within_budget(earlier, 3, 3)
    # A stale or interrupted trial (failed, no error) gave its place to its retry; a surplus one held none.
    released = [_frozen(0, s.COMPLETE), _frozen(1, s.FAIL), _frozen(2, s.FAIL, surplus=True)]
    assert within_budget(released, 3, 2)
    # A trial that failed by its own exception is finished: it keeps its place.
    assert not within_budget([_frozen(0, s.COMPLETE), _frozen(1, s.FAIL, error="boom")], 2, 2)
    # Only earlier trials count, waiting ones included.
    assert not within_budget([_frozen(0, s.WAITING), _frozen(5, s.COMPLETE)], 1, 1)
    assert within_budget([_frozen(0, s.WAITING), _frozen(5, s.COMPLETE)], 0, 1)


# ---- the study loop -------------------------------------------------------------------------------


def test_a_study_of_few_trials_writes_a_table_and_best_settings_that_round_trip_into_the_dqn_config(tmp_path):
    study = _study(tmp_path)
    base = override(DQNConfig(), {"hidden": 128}, what="base")
    assert run_trials(study, 4, one_at_a_time(_steady), space=TEST_SPACE, seed=5).finished == 4
    write_study_outputs(study, str(tmp_path / "out"), planned_trials=4, base=base)

    rows = json.loads(read_bytes(tmp_path / "out" / TABLE_JSON))
    table = list(csv.DictReader(io.StringIO(read_bytes(tmp_path / "out" / TABLE_CSV).decode())))
    assert [r["number"] for r in rows] == [0, 1, 2, 3] and [r["number"] for r in table] == [
        "0",
        "1",
        "2",
        "3",
    ]
    for row, line in zip(rows, table, strict=True):
        assert row["state"] == "COMPLETE" and row["folds_run"] == 3 and row["duration_seconds"] > 0
        assert row["folder"] == line["folder"] == f"trials/000{row['number']}"
        assert row["objective"] == pytest.approx(cheap_score(row["params"]))
        assert float(line["objective"]) == row["objective"] and float(line["lr"]) == row["params"]["lr"]
    best = max(rows, key=lambda r: r["objective"])

    written = json.loads(read_bytes(tmp_path / "out" / BEST_PARAMS))
    assert list(written) == ["dqn"]
    assert override(DQNConfig(), written["dqn"], what=BEST_PARAMS) == override(
        base, best["params"], what="best"
    )


def _hopeless_last(folds_trained: dict, hopeless: int):
    """Trial `hopeless` scores far below the others at every fold; the others score steadily."""

    def objective(number, params, report_fold):
        score = -100.0 if number == hopeless else cheap_score(params)
        for fold in range(3):
            folds_trained[number] = fold + 1
            if report_fold(fold, score):
                return score
        return score

    return objective


def test_a_hopeless_trial_is_pruned_after_its_first_fold(tmp_path):
    study = _study(tmp_path, pruner=optuna.pruners.MedianPruner(n_startup_trials=2))
    folds_trained = {}
    run_trials(study, 3, one_at_a_time(_hopeless_last(folds_trained, hopeless=2)), space=TEST_SPACE, seed=5)
    hopeless = trial_by_number(study, 2)
    assert hopeless.state == optuna.trial.TrialState.PRUNED
    assert folds_trained[2] == 1 and folds_run(hopeless) == 1
    assert [trial_by_number(study, n).state.name for n in (0, 1)] == ["COMPLETE", "COMPLETE"]


def test_the_median_pruner_waits_for_five_trials_then_stops_a_hopeless_one(tmp_path):
    study, folds_trained = _study(tmp_path, pruner=trial_pruner("median")), {}
    run_trials(study, 5, one_at_a_time(_hopeless_last(folds_trained, hopeless=4)), space=TEST_SPACE, seed=5)
    assert trial_by_number(study, 4).state.name == "COMPLETE"  # four trials before it: no pruning yet
    run_trials(study, 7, one_at_a_time(_hopeless_last(folds_trained, hopeless=6)), space=TEST_SPACE, seed=5)
    assert trial_by_number(study, 6).state.name == "PRUNED" and folds_trained[6] == 1


def test_with_pruner_none_a_hopeless_trial_runs_every_fold(tmp_path):
    study, folds_trained = _study(tmp_path, pruner=trial_pruner("none")), {}
    run_trials(study, 7, one_at_a_time(_hopeless_last(folds_trained, hopeless=6)), space=TEST_SPACE, seed=5)
    assert trial_by_number(study, 6).state.name == "COMPLETE" and folds_trained[6] == 3


def test_an_unknown_pruner_is_refused_by_name():
    with pytest.raises(ValueError, match="'hyperband'"):
        trial_pruner("hyperband")


def test_a_settings_failure_is_a_finished_trial_and_the_study_goes_on(tmp_path):
    study = _study(tmp_path)

    def objective(number, params, report_fold):
        if number == 1:
            raise FloatingPointError("loss is nan")
        return _steady(number, params, report_fold)

    progress = run_trials(
        study, 3, one_at_a_time(objective), space=TEST_SPACE, seed=5, catch=(FloatingPointError,)
    )
    assert progress.finished == 3 and progress.created == 3
    failed = trial_by_number(study, 1)
    assert failed.state.name == "FAIL" and failed.user_attrs["error"] == "FloatingPointError: loss is nan"


def test_a_nan_objective_fails_its_trial(tmp_path):
    study = _study(tmp_path)
    run_trials(study, 2, one_at_a_time(lambda n, p, r: math.nan if n == 0 else 1.0), space=TEST_SPACE, seed=5)
    assert (
        trial_by_number(study, 0).state.name == "FAIL"
        and "nan" in trial_by_number(study, 0).user_attrs["error"]
    )


class Interrupted(Exception):
    """Stands for the pipeline's SIGTERM stop: an exception the study loop does not catch."""


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit, Interrupted])
def test_an_interrupted_trial_is_retried_once_with_the_same_settings_and_the_study_still_finishes_n(
    tmp_path, interrupt
):
    study = _study(tmp_path)

    def interrupted_at_1(number, params, report_fold):
        if number == 1:
            report_fold(0, 0.0)
            raise interrupt
        return _steady(number, params, report_fold)

    with pytest.raises(interrupt):
        run_trials(study, 3, one_at_a_time(interrupted_at_1), space=TEST_SPACE, seed=5, catch=(ValueError,))
    assert [t.state.name for t in study.get_trials()] == ["COMPLETE", "FAIL", "WAITING"]
    assert study_progress(study).finished == 1
    progress = run_trials(_study(tmp_path), 3, one_at_a_time(_steady), space=TEST_SPACE, seed=5)
    assert progress.finished == 3 and progress.created == 4
    first, retry = trial_by_number(study, 1), trial_by_number(study, 2)
    assert first.state.name == "FAIL" and retry.state.name == "COMPLETE"
    assert retry.params == first.params and retry.system_attrs["retry_history"] == [1]


def test_a_restarted_study_continues_to_n_without_repeating_settings(tmp_path):
    run_trials(_study(tmp_path), 2, one_at_a_time(_steady), space=TEST_SPACE, seed=5)
    study = _study(tmp_path)
    assert run_trials(study, 5, one_at_a_time(_steady), space=TEST_SPACE, seed=5).finished == 5
    trials = study.get_trials()
    assert [t.number for t in trials] == [0, 1, 2, 3, 4]
    assert len({t.params["lr"] for t in trials}) == 5


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used with Study.optimize")
def test_a_sole_worker_retries_a_trial_left_running_without_waiting_for_its_heartbeat(tmp_path):
    left = _study(tmp_path).ask()  # as if the process had died with trial 0 running
    left.suggest_float("lr", 1e-5, 1e-3, log=True)
    left.suggest_float("gamma", 0.8, 0.99)
    study = _study(tmp_path, grace_seconds=3600)
    # Without the immediate retry the loop would wait for a heartbeat that never goes stale.
    loop = threading.Thread(
        target=run_trials,
        args=(study, 2, one_at_a_time(_steady)),
        kwargs={"space": TEST_SPACE, "seed": 5, "exclusive": True},
        daemon=True,
    )
    loop.start()
    loop.join(timeout=30)
    assert not loop.is_alive() and study_progress(study).finished == 2
    assert trial_by_number(study, 0).state.name == "FAIL"
    assert trial_by_number(study, 1).params == trial_by_number(study, 0).params


# ---- outputs, selection, metrics ------------------------------------------------------------------


def _outcome(sharpes):
    """Trial i reports per-period Sharpe sharpes[i] (None: pruned after fold 0)."""

    def objective(number, params, report_fold):
        if sharpes[number] is None:
            report_fold(0, -1e9)
            raise optuna.TrialPruned
        return TrialOutcome(
            objective=sharpes[number] * 100, sharpe=sharpes[number], n_obs=5000, skew=-0.3, kurtosis=5.0
        )

    return objective


def test_the_selection_check_deflates_the_best_trial_by_every_trial_tried_pruned_ones_included(tmp_path):
    study = _study(tmp_path)
    sharpes = [0.01, 0.03, None, 0.02]
    run_trials(study, 4, one_at_a_time(_outcome(sharpes)), space=TEST_SPACE, seed=5)
    check = selection_check(study)

    # Bailey & López de Prado (2014), written out: N = 4 trials tried (one pruned), variance of the three
    # with a Sharpe.
    normal, gamma_e = NormalDist(), 0.5772156649015329
    variance = np.var([0.01, 0.03, 0.02], ddof=1)
    expected_max = math.sqrt(variance) * (
        (1 - gamma_e) * normal.inv_cdf(1 - 1 / 4) + gamma_e * normal.inv_cdf(1 - 1 / (4 * math.e))
    )
    z = (0.03 - expected_max) * math.sqrt(5000 - 1) / math.sqrt(1 + 0.3 * 0.03 + (5.0 - 1) / 4 * 0.03**2)
    assert check.trial == 1 and check.n_trials == 4 and check.n_tried == 4 and check.n_with_sharpe == 3
    assert check.counted == {"complete": 3, "pruned": 1, "failed": 0}
    assert check.dsr == pytest.approx(normal.cdf(z), rel=1e-9)
    assert check.selection_share == pytest.approx(expected_max / 0.03, rel=1e-9)
    # Catches: N counting only the complete trials (3).
    completed_only = math.sqrt(variance) * (
        (1 - gamma_e) * normal.inv_cdf(1 - 1 / 3) + gamma_e * normal.inv_cdf(1 - 1 / (3 * math.e))
    )
    assert check.expected_max_sharpe_per_period != pytest.approx(completed_only, rel=1e-3)
    assert "best of 4 trials tried" in check.dsr_reading


def test_the_selection_check_needs_two_complete_trials_with_a_sharpe(tmp_path):
    study = _study(tmp_path)
    run_trials(study, 2, one_at_a_time(_steady), space=TEST_SPACE, seed=5)
    assert selection_check(study).dsr is None


def test_trial_metrics_follow_each_trial_and_the_whole_study(tmp_path):
    registry = CollectorRegistry()
    metrics = TrialMetrics(registry, planned_trials=4)
    study = _study(tmp_path)
    run_trials(
        study,
        4,
        one_at_a_time(_outcome([0.01, 0.03, None, 0.02])),
        space=TEST_SPACE,
        seed=5,
        callbacks=[metrics.record],
    )

    def value(name, **labels):
        return registry.get_sample_value(name, labels)

    assert (
        value("foxhunt_trials_total", state="complete") == 3
        and value("foxhunt_trials_total", state="pruned") == 1
    )
    assert value("foxhunt_trials_total", state="failed") == 0
    assert value("foxhunt_trial_objective", trial="1") == pytest.approx(3.0)
    assert value("foxhunt_trial_objective", trial="2") is None
    assert (
        value("foxhunt_trial_state", trial="2", state="pruned") == 1
        and value("foxhunt_trial_folds", trial="2") == 1
    )
    assert value("foxhunt_trial_duration_seconds", trial="0") > 0
    assert value("foxhunt_study_best_objective") == pytest.approx(3.0)
    assert (
        value("foxhunt_study_trials", state="complete") == 3 and value("foxhunt_study_finished_trials") == 4
    )
    assert value("foxhunt_study_planned_trials") == 4
