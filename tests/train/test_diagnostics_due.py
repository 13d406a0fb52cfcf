"""Which epochs get the greedy policy's diagnostics when a run spaces them out (`diagnostics_every`)."""

import pytest

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
