"""The figures of a scored record: Sharpe and its errors, the bootstrap interval, PSR and DSR, costs."""

import math

import numpy as np
import pytest
import torch
from support.record_cases import FIXED_RETURNS, NO_BOOTSTRAP, one_window

from foxhunt.evaluate import sharpe as sr
from foxhunt.evaluate.evaluation import (
    Scoring,
    score,
)
from foxhunt.train import periods_per_year, policy_metrics


def test_sharpe_and_its_standard_error_equal_the_direct_formula():
    got = score(one_window(np.ones(12), FIXED_RETURNS, every=5), Scoring(cost=0.0, resamples=0)).gross
    periods = 11 / (11 * 5 / (365.25 * 1440))  # bars per year of 5-minute spacing
    per_bar = FIXED_RETURNS.mean() / FIXED_RETURNS.std(ddof=0)
    assert got.periods_per_year == pytest.approx(periods, rel=1e-12)
    assert got.sharpe == pytest.approx(per_bar * math.sqrt(periods), rel=1e-12)
    assert got.sharpe_se == pytest.approx(
        math.sqrt((1 + per_bar**2 / 2) / 12) * math.sqrt(periods), rel=1e-12
    )
    # The plausible mistakes are far outside that tolerance: ddof=1, trading-day annualisation.
    ddof1 = FIXED_RETURNS.mean() / FIXED_RETURNS.std(ddof=1) * math.sqrt(periods)
    assert abs(ddof1 / got.sharpe - 1) > 0.04
    assert abs(per_bar * math.sqrt(252) / got.sharpe - 1) > 0.9


def test_evaluation_agrees_with_the_trainers_policy_metrics():
    rng = np.random.default_rng(5)
    returns = rng.normal(0, 1e-3, 500)
    positions = rng.integers(-1, 2, 500).astype(float)
    record = one_window(positions, returns)
    net = score(record, Scoring(cost=2e-4, resamples=0)).net
    want = policy_metrics(
        torch.from_numpy(positions), torch.from_numpy(returns), 2e-4, periods_per_year(record.timestamp)
    )
    assert net.sharpe == pytest.approx(want.sharpe, rel=1e-9)
    assert net.log_return == pytest.approx(want.total_return, rel=1e-9)
    assert net.max_drawdown == pytest.approx(want.max_drawdown, rel=1e-9)
    assert net.turnover == want.turnover
    assert net.hit_rate == pytest.approx(want.hit_rate, rel=1e-6)  # the trainer divides in float32


def test_returns_drawdown_turnover_and_exposure_on_a_hand_built_record():
    record = one_window([1, 1, 0, -1], [0.01, -0.02, 0.03, 0.01])
    net = score(record, Scoring(cost=0.001, resamples=0)).net
    pnl = np.array([0.01 - 0.001, -0.02, -0.001, -0.01 - 0.001])  # entry, hold, exit, short
    assert net.log_return == pytest.approx(pnl.sum())
    assert net.total_return == pytest.approx(math.expm1(pnl.sum()))
    assert net.max_drawdown == pytest.approx(1 - math.exp(pnl.sum() - pnl[0]))  # peak after bar 0
    assert net.turnover == 3 and net.exposure == 0.75 and net.hit_rate == pytest.approx(1 / 3)
    assert net.annual_return == pytest.approx(math.expm1(pnl.mean() * net.periods_per_year))


def test_the_spread_costs_half_of_itself_per_unit_of_position_change():
    record = one_window([1, -1, -1, 0], [0.01, -0.02, 0.03, 0.01])
    with_spread = score(record, Scoring(cost=1e-4, spread=4e-4, resamples=0)).net
    as_cost = score(record, Scoring(cost=3e-4, resamples=0)).net
    assert with_spread.log_return == pytest.approx(as_cost.log_return, rel=1e-12)
    assert with_spread.log_return == pytest.approx(0.01 + 0.02 - 0.03 - 3e-4 * 4, rel=1e-12)


def test_skewness_and_kurtosis_are_the_population_standardised_third_and_fourth_moments():
    x = FIXED_RETURNS
    z = (x - x.mean()) / x.std(ddof=0)
    assert sr.skewness(x) == pytest.approx(sum(v**3 for v in z) / 12, rel=1e-12)
    assert sr.kurtosis(x) == pytest.approx(sum(v**4 for v in z) / 12, rel=1e-12)  # not excess: no − 3
    # ddof = 1 in the standardisation moves both by more than 10 %.
    z1 = (x - x.mean()) / x.std(ddof=1)
    assert abs(np.mean(z1**4) / sr.kurtosis(x) - 1) > 0.1
    assert sr.skewness(np.full(5, 0.01)) == 0.0 and sr.kurtosis(np.full(5, 0.01)) == 3.0


def test_hac_standard_error_equals_the_gmm_formula_with_bartlett_weights():
    x = np.array([0.5, -0.2, 0.9, 0.1, -0.7, 0.4, 0.3, -0.1])
    mu, var = x.mean(), x.var()
    m = np.stack([x - mu, (x - mu) ** 2 - var])  # Lo's moment conditions, by hand below
    cov = sum(np.outer(m[:, t], m[:, t]) for t in range(8)) / 8
    lag1 = sum(np.outer(m[:, t], m[:, t - 1]) for t in range(1, 8)) / 8
    cov = cov + 0.5 * (lag1 + lag1.T)  # Bartlett weight 1 − 1/2 for one lag
    grad = np.array([1 / math.sqrt(var), -mu / (2 * var**1.5)])
    assert sr.hac_standard_error(x, lags=1) == pytest.approx(math.sqrt(grad @ cov @ grad / 8), rel=1e-12)


def test_hac_standard_error_grows_with_autocorrelation_and_matches_lo_without_it():
    rng = np.random.default_rng(0)
    iid = rng.normal(0.01, 1.0, 20_000)
    assert sr.hac_standard_error(iid) == pytest.approx(
        sr.lo_standard_error(sr.sharpe_ratio(iid), iid.size), rel=0.1
    )
    ar = np.empty_like(iid)
    ar[0] = iid[0]
    for t in range(1, ar.size):
        ar[t] = 0.5 * ar[t - 1] + iid[t]
    ratio = sr.hac_standard_error(ar, lags=30) / sr.lo_standard_error(sr.sharpe_ratio(ar), ar.size)
    assert 1.5 < ratio < 1.9  # the mean's long-run sd grows by sqrt((1 + φ) / (1 − φ)) = 1.73


def test_bootstrap_resamples_are_circular_blocks_cut_to_the_series_length():
    rng = np.random.default_rng(1)
    x = rng.normal(0.1, 1.0, 23)
    got = sr.block_bootstrap_sharpes(x, resamples=5, block=4, seed=9)
    starts = np.random.default_rng(9).integers(0, 23, size=(5, 6))  # ceil(23 / 4) blocks each
    for i in range(5):
        rows = np.concatenate([(s + np.arange(4)) % 23 for s in starts[i]])[:23]
        assert got[i] == pytest.approx(x[rows].mean() / x[rows].std(), rel=1e-9)


def test_the_bootstrap_interval_covers_a_known_sharpe_at_about_its_level():
    rng = np.random.default_rng(42)
    true_sharpe = 0.1
    covered = 0
    for i in range(200):
        x = rng.normal(true_sharpe, 1.0, 400)
        low, high = sr.bootstrap_interval(x, level=0.9, resamples=300, seed=i)
        covered += low <= true_sharpe <= high
    assert 160 <= covered <= 194, covered  # 80 % to 97 % of 200 intervals at level 90 %


def test_the_interval_is_reported_annualised_and_contains_the_estimate():
    rng = np.random.default_rng(3)
    record = one_window(np.ones(2000), rng.normal(2e-4, 1e-3, 2000))
    net = score(record, Scoring(cost=0.0, resamples=400)).net
    low, high = sr.bootstrap_interval(record.pnl(0.0), level=0.95, resamples=400, seed=0)
    root = math.sqrt(net.periods_per_year)
    assert (net.sharpe_ci_low, net.sharpe_ci_high) == pytest.approx((low * root, high * root), rel=1e-12)
    assert net.sharpe_ci_low < net.sharpe < net.sharpe_ci_high


def test_probabilistic_sharpe_ratio_equals_the_hand_computed_value():
    # SR 0.3 against 0.1 over 50 bars, skew −1, kurtosis 6:
    # 1 − (−1)(0.3) + (6 − 1)/4 · 0.09 = 1.4125; z = 0.2 · √49 / √1.4125 = 1.17797; Φ(z) = 0.88060.
    assert sr.probabilistic_sharpe_ratio(0.3, 0.1, 50, -1.0, 6.0) == pytest.approx(0.88060, abs=1e-4)
    # √T instead of √(T − 1) gives 0.88296, a + on the skew term 0.93981, excess kurtosis 0.88438.


def test_deflated_sharpe_ratio_reproduces_the_papers_example():
    # Bailey & López de Prado (2014), section 5: annual SR 2.5 and V[SR] 0.5 over 250-day years,
    # N = 100 trials, T = 1250 days, skew −3, kurtosis 10: SR0 = 0.1132 per day, DSR = 0.9004.
    assert sr.expected_max_sharpe(100, 0.5 / 250) == pytest.approx(0.1132, abs=5e-5)
    dsr = sr.deflated_sharpe_ratio(2.5 / math.sqrt(250), 100, 0.5 / 250, 1250, -3.0, 10.0)
    assert dsr == pytest.approx(0.9004, abs=5e-5)  # with √T in place of √(T − 1): 0.90049


def test_a_single_trial_is_not_deflated():
    assert sr.deflated_sharpe_ratio(0.05, 1, 1e-4, 500) == sr.probabilistic_sharpe_ratio(0.05, 0.0, 500)


def test_psr_against_buy_and_hold_uses_its_sharpe_on_the_same_bars():
    rng = np.random.default_rng(8)
    returns = rng.normal(1e-4, 1e-3, 3000)
    record = one_window(np.sign(rng.normal(size=3000)), returns)
    bench = score(one_window(np.ones(3000), returns), NO_BOOTSTRAP)
    net = score(record, NO_BOOTSTRAP, bench).net
    pnl = record.pnl(NO_BOOTSTRAP.cost_per_unit)
    want = sr.probabilistic_sharpe_ratio(
        sr.sharpe_ratio(pnl), bench.net.sharpe_per_period, 3000, sr.skewness(pnl), sr.kurtosis(pnl)
    )
    assert net.psr_benchmark == pytest.approx(want, rel=1e-12)
    assert net.benchmark_sharpe == pytest.approx(bench.net.sharpe, rel=1e-12)


# ---- the stitched record -------------------------------------------------------------------------
