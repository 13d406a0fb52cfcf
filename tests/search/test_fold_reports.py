"""A trial's fold reports: one write to the study per fold, and the folds it walked counted from them."""

from __future__ import annotations

import optuna
from support.trials_worker import one_at_a_time
from test_trials import TEST_SPACE, _steady, _study

from foxhunt.search.outputs import study_summary, study_table
from foxhunt.search.study import FOLDS_ATTR, folds_run, trial_by_number
from foxhunt.search.trial_loop import run_trials


def _counted_writes(study, monkeypatch) -> dict[str, int]:
    """The study's storage writes of intermediate values and user attributes, counted from now on."""
    counts = {"intermediate": 0, "user_attr": 0}
    storage = study._storage
    for name, key in (("set_trial_intermediate_value", "intermediate"), ("set_trial_user_attr", "user_attr")):
        original = getattr(storage, name)

        def counted(*args, _original=original, _key=key, **kwargs):
            counts[_key] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(storage, name, counted)
    return counts


def _writes_of_a_search(tmp_path, monkeypatch, folds: int) -> dict[str, int]:
    study = _study(tmp_path / f"folds{folds}", pruner=optuna.pruners.NopPruner())
    counts = _counted_writes(study, monkeypatch)
    run_trials(study, 2, one_at_a_time(lambda n, p, report: _steady(n, p, report, folds=folds)),
               space=TEST_SPACE, seed=5)  # fmt: skip
    return counts


def test_each_fold_costs_the_study_one_write(tmp_path, monkeypatch):
    one, four = (_writes_of_a_search(tmp_path, monkeypatch, folds) for folds in (1, 4))
    assert (one["intermediate"], four["intermediate"]) == (2, 8)  # a report per trial and fold
    assert four["user_attr"] == one["user_attr"]  # no attribute rewritten per fold


def test_the_folds_walked_are_counted_from_the_reports(tmp_path):
    study = _study(tmp_path)
    run_trials(study, 2, one_at_a_time(lambda n, p, report: _steady(n, p, report, folds=3)),
               space=TEST_SPACE, seed=5)  # fmt: skip
    trials = study.get_trials()
    assert [folds_run(t) for t in trials] == [3, 3]
    assert [row.folds_run for row in study_table(study)] == [3, 3]
    assert study_summary(study, 2).best.folds_run == 3


def test_an_older_studys_count_is_read_where_it_is_larger(tmp_path):
    study = _study(tmp_path)
    trial = study.ask()
    for fold in range(2):
        trial.report(0.1, step=fold)
    trial.set_user_attr(FOLDS_ATTR, 5)  # as searches before this one kept it
    assert folds_run(trial_by_number(study, trial.number)) == 5
    trial.set_user_attr(FOLDS_ATTR, 1)
    assert folds_run(trial_by_number(study, trial.number)) == 2


def test_a_trial_without_reports_walked_no_fold(tmp_path):
    study = _study(tmp_path)
    trial = study.ask()
    assert folds_run(trial_by_number(study, trial.number)) == 0
