"""The generated sample bars look like real minute bars and plant a weak, costly-to-trade signal."""

import math

import numpy as np
import pytest

from foxhunt.data.bars import generate_sample_bars
from foxhunt.data.sample import NEWS_BARS, sample_returns

COST = 1e-4  # 1 bp per unit of position change
N_BARS = 300_000  # about 200 trading days: the Sharpe's standard error is about 1.1


def annualised_sharpe(pnl: np.ndarray, timestamp: np.ndarray) -> float:
    years = (timestamp[-1] - timestamp[0]) / (365.25 * 86_400e9)
    return pnl.mean() / pnl.std() * math.sqrt((len(timestamp) - 1) / years)


def held_pnl(positions: np.ndarray, next_returns: np.ndarray, cost: float) -> np.ndarray:
    return positions * next_returns - cost * np.abs(np.diff(positions, prepend=0.0))


@pytest.fixture(scope="module", params=[0, 1, 2])
def sample(request):
    seed = request.param
    return generate_sample_bars(N_BARS, seed=seed), sample_returns(N_BARS, seed)


def test_volatility_is_a_few_basis_points_per_minute(sample):
    bars, _ = sample
    per_minute = np.diff(np.log(bars.close)).std()
    assert 3e-4 <= per_minute <= 5e-4


def test_the_planted_returns_are_the_bars_returns(sample):
    bars, planted = sample
    np.testing.assert_allclose(np.diff(np.log(bars.close)), planted.returns[1:], atol=1e-12)


def test_the_oracle_of_the_planted_signal_trades_at_a_few_units_of_sharpe_after_costs(sample):
    bars, planted = sample
    # At bar t's close the oracle holds the sign of bar t + 1's expected return.
    positions = np.sign(planted.expected[1:])
    net = annualised_sharpe(held_pnl(positions, planted.returns[1:], COST), bars.timestamp[:-1])
    gross = annualised_sharpe(held_pnl(positions, planted.returns[1:], 0.0), bars.timestamp[:-1])
    assert 2.0 <= net <= 8.0, net
    assert net < gross < 12.0, gross  # a few units, not the old data's tens


def test_the_sign_of_the_last_return_loses_after_costs(sample):
    bars, planted = sample
    positions = np.sign(planted.returns[:-1])
    assert annualised_sharpe(held_pnl(positions, planted.returns[1:], COST), bars.timestamp[:-1]) < -20


def test_news_bars_drift_for_the_planted_number_of_bars_and_carry_volume(sample):
    bars, planted = sample
    news = np.flatnonzero(planted.news[: -NEWS_BARS - 1])
    direction = np.sign(planted.returns[news])  # a news bar's 4-sigma jump sets its sign
    inside = planted.expected[news[:, None] + np.arange(1, NEWS_BARS + 1)] * direction[:, None]
    assert (np.median(inside, axis=0) > 0).all()
    assert np.median(planted.expected[news + NEWS_BARS + 1] * direction) == pytest.approx(0.0, abs=1e-12)
    assert np.median(bars.volume[planted.news]) > 4 * np.median(bars.volume[~planted.news])


def test_without_news_the_only_signal_is_the_autocorrelation():
    planted = sample_returns(5000, seed=4, news_rate=0.0, ar_coef=0.3, sigma=1e-3)
    assert not planted.news.any()
    np.testing.assert_allclose(planted.expected[1:], 0.3 * planted.returns[:-1], atol=1e-15)
    assert planted.returns.std() == pytest.approx(1e-3 / math.sqrt(1 - 0.3**2), rel=0.05)
