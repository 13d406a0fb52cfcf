"""A trial whose settings break the arithmetic (an overflow, a floating-point error, a divergence) is
marked failed with its reason, and the study goes on with the next trial."""

from __future__ import annotations

import pytest
from support.trials_worker import one_at_a_time
from test_trials import TEST_SPACE, _steady, _study

from foxhunt.search.driver import SETTINGS_FAILURES
from foxhunt.search.study import trial_by_number
from foxhunt.search.trial_loop import run_trials
from foxhunt.train import TrainingDiverged


@pytest.mark.parametrize(
    "failure",
    [
        OverflowError("(34, 'Numerical result out of range')"),
        FloatingPointError("overflow"),
        TrainingDiverged("nan"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_a_numeric_failure_fails_its_trial_and_the_study_goes_on(failure, tmp_path):
    study = _study(tmp_path)

    def objective(number, params, report_fold):
        if number == 0:
            raise failure
        return _steady(number, params, report_fold)

    progress = run_trials(
        study, 3, one_at_a_time(objective), space=TEST_SPACE, seed=5, catch=SETTINGS_FAILURES
    )
    assert progress.finished == 3
    failed = trial_by_number(study, 0)
    assert failed.state.name == "FAIL" and failed.user_attrs["error"].startswith(type(failure).__name__)
    assert trial_by_number(study, 2).state.name == "COMPLETE"
