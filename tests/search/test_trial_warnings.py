"""Trials carry their training warnings (collapsed, ignores features) into the study table and study.json,
and an objective can refuse a trial whose policy collapsed."""

import csv
import io

from support import strict_json
from support.trials_worker import one_at_a_time
from test_trials import TEST_SPACE, _study

from foxhunt.config.search import OBJECTIVES
from foxhunt.search.outputs import study_lines, study_summary, study_table, table_csv, write_study_outputs
from foxhunt.search.study import TrialOutcome
from foxhunt.search.trial_loop import run_trials
from foxhunt.train.epoch_figures import EpochFigures, fold_flags

COLLAPSE = "fold 1: the policy collapsed to one action: flat on 99.0% of validation bars (warning at 95%)"


def _outcomes(number, params, report_fold):
    report_fold(0, 1.0)
    if number == 0:
        return TrialOutcome(objective=2.0, sharpe=0.02, n_obs=100, warnings=(COLLAPSE,), collapsed=True)
    if number == 1:
        return TrialOutcome(objective=1.0, sharpe=0.01, n_obs=100, ignores_features=True, warnings=("x",))
    return TrialOutcome(
        objective=3.0, sharpe=0.03, n_obs=100, collapsed=True, rejected="the policy collapsed to one action"
    )


def epoch(shares, agreement):
    return EpochFigures(0, 0.0, 0.0, 1, 0.0, 0.0, 0.0, action_shares=shares, feature_agreement=agreement)


def test_fold_flags_read_the_last_epochs_diagnostics():
    assert fold_flags([epoch([0.0, 0.99, 0.01], 0.5)]) == (True, False)
    assert fold_flags([epoch([0.99, 0.0, 0.01], 0.5), epoch([0.3, 0.3, 0.4], 0.995)]) == (False, True)
    assert fold_flags([]) == (False, False)


def test_the_study_table_has_each_trials_warnings(tmp_path):
    study = _study(tmp_path)
    run_trials(study, 3, one_at_a_time(_outcomes), space=TEST_SPACE, seed=5)
    rows = {r.number: r for r in study_table(study)}
    assert (rows[0].collapsed, rows[0].ignores_features, rows[0].warnings) == (True, False, COLLAPSE)
    assert (rows[1].collapsed, rows[1].ignores_features) == (False, True)
    table = list(csv.DictReader(io.StringIO(table_csv(list(rows.values())))))
    assert [t["collapsed"] for t in table] == ["True", "False", "True"]
    assert table[0]["warnings"] == COLLAPSE


def test_a_rejected_trial_fails_with_its_reason_and_still_counts(tmp_path):
    study = _study(tmp_path)
    progress = run_trials(study, 3, one_at_a_time(_outcomes), space=TEST_SPACE, seed=5)
    assert progress.finished == 3
    row = next(r for r in study_table(study) if r.number == 2)
    assert row.state == "FAIL" and row.error == "the policy collapsed to one action" and row.collapsed
    summary = study_summary(study, 3)
    assert summary.best.number == 0  # the rejected trial's higher objective is not chosen
    assert summary.best.collapsed is True and summary.best.warnings == [COLLAPSE]
    assert summary.warned_trials == {"collapsed": [0, 2], "ignores_features": [1]}


def test_the_console_table_names_the_warning(tmp_path):
    study = _study(tmp_path)
    run_trials(study, 3, one_at_a_time(_outcomes), space=TEST_SPACE, seed=5)
    write_study_outputs(study, str(tmp_path), planned_trials=3)
    lines = study_lines(str(tmp_path))
    assert "warning" in lines[0]
    assert " collapsed " in lines[2] and " no-inputs " in lines[3]
    assert strict_json.read(tmp_path / "study.json")["best"]["collapsed"] is True


def test_an_objective_requires_no_collapse():
    assert "stitched_sharpe_no_collapse" in OBJECTIVES
