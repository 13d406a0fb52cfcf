"""Which epochs get the greedy policy's diagnostics when a run spaces them out (`diagnostics_every`)."""

import pytest

from foxhunt.config import RunConfig
from foxhunt.train.diagnostics import diagnostics_due


@pytest.mark.parametrize(
    ("epochs", "every", "due"),
    [
        (10, 3, [2, 5, 8, 9]),  # epochs 3, 6, 9 counted from 1, and the last
        (6, 3, [2, 5]),  # the last is a k-th epoch already
        (5, 1, [0, 1, 2, 3, 4]),  # the default: every epoch, as before the setting
        (4, 10, [3]),  # k beyond the fold's epochs: the last alone
        (1, 2, [0]),
    ],
)
def test_the_diagnostics_are_due_on_every_kth_epoch_and_on_the_folds_last(epochs, every, due):
    assert [epoch for epoch in range(epochs) if diagnostics_due(epoch, epochs, every)] == due


def test_unset_a_run_diagnoses_every_epoch_and_a_search_trial_only_each_folds_last():
    config = RunConfig(epochs=7)
    assert (config.diagnostics_spacing(), config.diagnostics_spacing(trial=True)) == (1, 7)


def test_a_given_spacing_holds_for_runs_and_search_trials_alike():
    config = RunConfig(epochs=7, diagnostics_every=3)
    assert (config.diagnostics_spacing(), config.diagnostics_spacing(trial=True)) == (3, 3)
