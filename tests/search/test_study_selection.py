"""The study's selection check: PBO over what the complete trials reported per fold, the DSR's rule, readings."""

import optuna
import pytest
from support.selection_cases import HAND
from support.trials_worker import one_at_a_time
from test_trials import TEST_SPACE, _study

from foxhunt.search.outputs import selection_check
from foxhunt.search.study import TrialOutcome
from foxhunt.search.trial_loop import run_trials


def _reporting(columns):
    """Trial i reports HAND's column i fold by fold; a None column is pruned after fold 0."""

    def objective(number, params, report_fold):
        column = columns[number]
        if column is None:
            report_fold(0, -1e9)
            raise optuna.TrialPruned
        for fold in range(HAND.shape[0]):
            report_fold(fold, float(HAND[fold, column]))
        return TrialOutcome(objective=float(HAND[:, column].sum()), sharpe=0.01 * (column + 1), n_obs=1000)

    return objective


def test_pbo_is_computed_over_the_complete_trials_per_fold_results(tmp_path):
    # Trials 0, 2, 3 carry HAND's columns A, B, C (hand-computed PBO 1/3); trial 1 was pruned and is out.
    study = _study(tmp_path, pruner=optuna.pruners.NopPruner())
    run_trials(study, 4, one_at_a_time(_reporting([0, None, 1, 2])), space=TEST_SPACE, seed=5)
    found = selection_check(study).overfitting
    assert found["pbo"] == pytest.approx(1 / 3)
    assert found["trials"] == [0, 2, 3] and found["splits"] == 6 and found["folds_used"] == [0, 1, 2, 3]
    assert "caution" in found["reading"] and "over 3 trials" in found["reading"]


def test_pbo_says_which_trials_it_leaves_out_and_why(tmp_path):
    study = _study(tmp_path, pruner=optuna.pruners.NopPruner())
    run_trials(study, 4, one_at_a_time(_reporting([0, None, 1, 2])), space=TEST_SPACE, seed=5)
    found = selection_check(study).overfitting
    assert found["left_out"] == {"pruned": [1], "failed": []} and "pruned trial has none" in found["rule"]


def test_the_check_says_why_there_is_no_pbo(tmp_path):
    study = _study(tmp_path, pruner=optuna.pruners.NopPruner())
    run_trials(study, 2, one_at_a_time(_reporting([0, None])), space=TEST_SPACE, seed=5)
    check = selection_check(study)
    assert check.overfitting["pbo"] is None and "two or more complete trials" in check.overfitting["reason"]
    assert check.dsr is None and check.n_tried == 2


def test_the_dsr_has_its_reading_and_its_rule(tmp_path):
    study = _study(tmp_path, pruner=optuna.pruners.NopPruner())
    run_trials(study, 4, one_at_a_time(_reporting([0, None, 1, 2])), space=TEST_SPACE, seed=5)
    check = selection_check(study)
    assert check.n_trials == 4 and check.n_tried == 4 and check.n_with_sharpe == 3
    assert check.dsr_reading.startswith(f"DSR {check.dsr:.2f}: ")
    assert "best of 4 trials tried" in check.dsr_reading
    assert "every trial tried" in check.dsr_rule and "pruned" in check.dsr_rule


def _flat(number, params, report_fold):
    """Every trial flat in every fold: net Sharpe 0 reported, a stitched Sharpe of 0."""
    for fold in range(4):
        report_fold(fold, 0.0)
    return TrialOutcome(objective=0.0, sharpe=0.0, n_obs=1000, skew=0.0, kurtosis=3.0)


def test_a_search_of_flat_trials_has_no_pbo_and_no_dsr_and_says_why(tmp_path):
    # Catches: PBO 1.00 ("selection explains this ranking") and DSR 0.50 where nothing traded.
    study = _study(tmp_path, pruner=optuna.pruners.NopPruner())
    run_trials(study, 3, one_at_a_time(_flat), space=TEST_SPACE, seed=5)
    check = selection_check(study)
    assert check.overfitting["pbo"] is None and "flat in every fold" in check.overfitting["reason"]
    assert check.dsr is None and "flat" in check.reason and check.dsr_reading.startswith("DSR undefined")
    data = check.to_dict()
    assert data["dsr"] is None and data["n_trials"] == 3 and data["sharpe_per_period"] == 0.0
