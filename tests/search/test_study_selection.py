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
    assert found["trials"] == [0, 2, 3] and found["splits"] == 6 and found["folds_used"] == 4
    assert "caution" in found["reading"]


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
    assert check.n_trials == 3 and check.n_tried == 4
    assert check.dsr_reading.startswith(f"DSR {check.dsr:.2f}: ")
    assert "best of 3 trials" in check.dsr_reading
    assert "same trials" in check.dsr_rule
