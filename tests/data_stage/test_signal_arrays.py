"""The learning-test arrays: one feature carries a regime that moves the next bars; the twin has no drift."""

import math

import numpy as np
import pytest
from support.signal_arrays import DRIFT, FOLDS, N_ROWS, SIGNAL_FEATURE, signal_arrays

from foxhunt.data.folds import generate_walk_forward_indices

COST = 1e-4


@pytest.fixture(scope="module")
def pair():
    return signal_arrays(seed=1), signal_arrays(seed=1, signal=False)


def net_sharpe(positions: np.ndarray, returns: np.ndarray) -> float:
    pnl = positions * returns - COST * np.abs(np.diff(positions, prepend=0.0))
    return pnl.mean() / pnl.std() * math.sqrt(525_960)


def test_the_targets_are_forward_sums_of_the_next_bars_returns(pair):
    data, _ = pair
    one_bar = data.targets[:, 0].astype(np.float64)
    for column, horizon in ((1, 5), (2, 15), (3, 60)):
        sums = np.convolve(one_bar, np.ones(horizon), "valid")[: len(one_bar) - 60]
        np.testing.assert_allclose(data.targets[: len(sums), column], sums, atol=2e-6)


def test_one_feature_carries_the_regime_and_the_others_are_noise(pair):
    data, _ = pair
    corr = [np.corrcoef(data.features[:, k], data.regime)[0, 1] for k in range(data.features.shape[1])]
    assert corr[SIGNAL_FEATURE] > 0.9
    assert max(abs(c) for k, c in enumerate(corr) if k != SIGNAL_FEATURE) < 0.05
    np.testing.assert_array_equal(data.expected, DRIFT * data.regime)


def test_holding_the_regime_pays_clearly_after_costs_and_nothing_in_the_twin(pair):
    data, twin = pair
    positions = data.regime.astype(np.float64)
    assert net_sharpe(positions, data.targets[:, 0]) > 20.0
    # The twin: the same noise without the drift, so the regime's sign is a coin flip that pays costs.
    np.testing.assert_allclose(twin.targets[:, 0], data.targets[:, 0] - data.expected, atol=1e-7)
    assert net_sharpe(positions, twin.targets[:, 0]) < 0.0
    np.testing.assert_array_equal(twin.features, data.features)
    assert np.all(twin.expected == 0.0)


def test_the_default_size_gives_one_fold_of_12_training_and_4_validation_days(pair):
    data, _ = pair
    (fold,) = generate_walk_forward_indices(data.timestamp, FOLDS, close_returns=data.targets[:, 0])
    assert len(data.timestamp) == N_ROWS
    assert fold.train_rows == 12 * 1440 - 60 and fold.val_rows == 4 * 1440
