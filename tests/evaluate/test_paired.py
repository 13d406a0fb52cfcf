"""The paired comparison of two P&L streams on the same bars, and alpha, beta, information ratio.

Each test names the plausible mistake it catches.
"""

import math

import numpy as np
import pytest

from foxhunt.evaluate import paired
from foxhunt.evaluate.sharpe import bootstrap_interval, default_block


def direct_paired_draws(a, b, resamples, block, seed):
    """The same resamples materialised bar by bar: the rng's block starts, wrapped rows, Sharpe of each."""
    n = a.size
    n_blocks = -(-n // block)
    starts = np.random.default_rng(seed).integers(0, n, size=(resamples, n_blocks))
    out = []
    for row in starts:
        rows = np.concatenate([(s + np.arange(block)) % n for s in row])[:n]
        out.append(a[rows].mean() / a[rows].std() - b[rows].mean() / b[rows].std())
    return np.array(out)


def test_the_bootstrap_draws_the_same_bars_for_both_streams():
    # Catches: independent resamples per stream, or blocks that do not wrap at the end.
    rng = np.random.default_rng(1)
    a, b = rng.normal(1e-4, 1e-3, 97), rng.normal(0, 1e-3, 97)
    got = paired.paired_bootstrap_differences(a, b, resamples=50, block=7, seed=3)
    np.testing.assert_allclose(got, direct_paired_draws(a, b, 50, 7, 3), rtol=1e-9)


def test_the_default_block_is_the_cube_root_rule():
    # Catches: a default block other than sharpe.default_block (round(T^(1/3))).
    rng = np.random.default_rng(2)
    a, b = rng.normal(0, 1, 1000), rng.normal(0, 1, 1000)
    got = paired.paired_bootstrap_differences(a, b, resamples=20, seed=4)
    np.testing.assert_allclose(got, direct_paired_draws(a, b, 20, default_block(1000), 4), rtol=1e-9)


def test_a_stream_close_to_its_baseline_has_a_narrow_paired_interval():
    # Catches: judging the difference by one stream's own interval (ignores the streams' correlation).
    rng = np.random.default_rng(3)
    market = rng.normal(0, 1e-3, 2000)
    model = market + rng.normal(0, 1e-5, 2000)
    test = paired.sharpe_difference(model, market, resamples=300)
    own_low, own_high = bootstrap_interval(model, resamples=300)
    assert test.ci_high - test.ci_low < 0.05 * (own_high - own_low)


def test_the_interval_and_p_value_of_a_hand_sized_case():
    # Catches: quantiles at the wrong levels; a p-value that is not the centred two-sided share.
    rng = np.random.default_rng(4)
    a, b = rng.normal(2e-4, 1e-3, 300), rng.normal(0, 1e-3, 300)
    draws = direct_paired_draws(a, b, 400, default_block(300), 9)
    diff = a.mean() / a.std() - b.mean() / b.std()
    test = paired.sharpe_difference(a, b, resamples=400, level=0.9, seed=9)
    assert test.difference == pytest.approx(diff, rel=1e-12)
    assert test.ci_low == pytest.approx(np.quantile(draws, 0.05), rel=1e-9)
    assert test.ci_high == pytest.approx(np.quantile(draws, 0.95), rel=1e-9)
    assert test.p_value == pytest.approx(np.mean(np.abs(draws - diff) >= abs(diff)))


def test_the_p_value_is_the_centred_two_sided_share_of_resampled_differences():
    # Model [1, 3]: Sharpe 2; baseline [1, −1]: Sharpe 0; difference 2. Six resampled differences
    # (−0.5, 1, 2.5, 3, 4.5, 5): three lie at least 2 from the estimate (−0.5, 4.5, 5), so p = 3/6.
    # Catches: the uncentred one-sided share (differences ≤ 0: 1/6), the centred one-sided one (2/6);
    # the hand-sized case above has p = 0 under every rule, so it cannot tell them apart.
    model, baseline = np.array([1.0, 3.0]), np.array([1.0, -1.0])
    draws = np.array([-0.5, 1.0, 2.5, 3.0, 4.5, 5.0])
    above = paired.sharpe_difference(model, baseline, resamples=6, draws=(draws, np.zeros(6)))
    below = paired.sharpe_difference(baseline, model, resamples=6, draws=(np.zeros(6), draws))
    assert (above.difference, below.difference) == (2.0, -2.0)
    assert above.p_value == below.p_value == 0.5


def test_the_verdict_follows_the_interval():
    # Catches: a verdict from the point difference alone.
    rng = np.random.default_rng(5)
    market = rng.normal(0, 1e-3, 3000)
    assert paired.sharpe_difference(market, -market, resamples=200).verdict == paired.NO_CLEAR_DIFFERENCE
    drift = market + 2e-4
    assert paired.sharpe_difference(drift, market, resamples=200).verdict == paired.ABOVE
    assert paired.sharpe_difference(market, drift, resamples=200).verdict == paired.BELOW
    assert paired.sharpe_difference(drift, market, resamples=0).verdict == paired.NOT_TESTED


def test_two_noise_strategies_differ_at_about_the_nominal_rate():
    # Catches: the unpaired rule (the baseline's point Sharpe outside the model's interval) rejects
    # about 19% of the time here; an interval too narrow or too wide moves the rate off 5%.
    rng = np.random.default_rng(6)
    sims, rejected = 300, 0
    for i in range(sims):
        market = rng.normal(0, 1e-3, 1000)
        a = rng.choice([-1.0, 0.0, 1.0], 1000) * market
        b = rng.choice([-1.0, 0.0, 1.0], 1000) * market
        rejected += (
            paired.sharpe_difference(a, b, resamples=300, seed=i).verdict != paired.NO_CLEAR_DIFFERENCE
        )
    assert 0.02 <= rejected / sims <= 0.10


def test_streams_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="same bars"):
        paired.sharpe_difference(np.zeros(5), np.zeros(6))


# ---- alpha, beta, information ratio ---------------------------------------------------------------
def test_alpha_beta_and_information_ratio_by_hand():
    # m = [.02, -.01, .03, 0], b = [.01, -.01, .02, 0]: means .01 and .005; deviations of b
    # (.005, -.015, .015, -.005), of m (.01, -.02, .02, -.01); cov = .0007 / 4, var(b) = .0005 / 4,
    # beta = 1.4; alpha = (.01 − 1.4 × .005) × 100 = .3; active (.01, 0, .01, 0): mean .005,
    # std .005, IR = 1 × √100 = 10.
    # Catches: cov with ddof 1 over var with ddof 0 (beta 1.87); IR as alpha over residual risk.
    got = paired.relative_to(np.array([0.02, -0.01, 0.03, 0.0]), np.array([0.01, -0.01, 0.02, 0.0]), 100.0)
    assert got.beta == pytest.approx(1.4)
    assert got.alpha == pytest.approx(0.3)
    assert got.information_ratio == pytest.approx(10.0)


def test_a_stream_equal_to_its_benchmark_has_beta_one_and_no_alpha():
    rng = np.random.default_rng(7)
    market = rng.normal(1e-4, 1e-3, 500)
    got = paired.relative_to(market, market, 525_960.0)
    assert got.beta == pytest.approx(1.0) and got.alpha == pytest.approx(0.0, abs=1e-12)
    assert got.information_ratio == 0.0
    assert math.isfinite(paired.relative_to(market, np.zeros(500), 1.0).alpha)
