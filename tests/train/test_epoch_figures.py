"""A fold's warnings (`foxhunt.train.epoch_figures.fold_warnings`): what its last epoch's diagnostics say
is wrong with the policy, in words: collapse to one action, features ignored."""

from __future__ import annotations

from foxhunt.train.epoch_figures import EpochFigures, fold_warnings


def epoch(shares=None, agreement=None) -> EpochFigures:
    return EpochFigures(0, 0.1, 0.05, 4, 0.1, 0.1, 1e4, action_shares=shares, feature_agreement=agreement)


def test_a_policy_on_one_action_for_95_percent_of_bars_has_collapsed():
    (warning,) = fold_warnings(3, [epoch([0.01, 0.04, 0.95], 0.5)])
    assert warning.startswith("fold 3: the policy collapsed to one action: long on 95.0%")
    assert fold_warnings(3, [epoch([0.02, 0.04, 0.94], 0.5)]) == []


def test_only_the_last_epoch_decides_the_warnings():
    assert fold_warnings(0, [epoch([0.0, 1.0, 0.0], 1.0), epoch([0.3, 0.3, 0.4], 0.5)]) == []


def test_a_policy_whose_actions_stay_with_features_at_their_mean_ignores_the_features():
    (warning,) = fold_warnings(1, [epoch([0.3, 0.3, 0.4], 0.995)])
    assert "ignores the features: 99.5%" in warning
    assert fold_warnings(1, [epoch([0.3, 0.3, 0.4], 0.98)]) == []


def test_no_diagnostics_no_warnings():
    assert fold_warnings(0, [epoch()]) == [] and fold_warnings(0, []) == []
