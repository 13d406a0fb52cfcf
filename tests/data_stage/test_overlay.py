"""The sample's news process laid over real bars (`foxhunt.data.overlay`): where it plants what, and what
it leaves alone."""

from functools import cache

import numpy as np
import pytest
from support.data_files import EURUSD, YNDX

from foxhunt.data.bars import Bars, generate_sample_bars, read_bars, validate_bars
from foxhunt.data.overlay import SIGMA_CLIP_QUANTILE, plant_overlay, robust_sigma
from foxhunt.data.sample import (
    NEWS_BARS,
    NEWS_JUMP_SIGMAS,
    NEWS_VOLUME_FACTOR,
    SAMPLE_NEWS_DRIFT,
    SAMPLE_NEWS_RATE,
    SAMPLE_SIGMA,
)

SLICES = {"eurusd": EURUSD, "yndx": YNDX}


@cache
def real(name: str) -> Bars:
    return read_bars([str(SLICES[name])])


@pytest.mark.parametrize("name", sorted(SLICES))
@pytest.mark.parametrize("drift_multiple", [0.0, 1.0, 50.0])
def test_the_overlaid_real_bars_keep_every_rule_of_the_bars_contract(name, drift_multiple):
    bars = plant_overlay(real(name), drift_multiple=drift_multiple, seed=4, news_rate=0.02).bars
    validate_bars(bars, name)  # positive prices, high ≥ max(open, close), low ≤ min(open, close), ...
    assert np.all(bars.high >= np.maximum(bars.open, bars.close))
    assert np.all(bars.low <= np.minimum(bars.open, bars.close))
    np.testing.assert_array_equal(bars.timestamp, real(name).timestamp)


@pytest.mark.parametrize("name", sorted(SLICES))
def test_each_bar_keeps_its_own_shape_and_moves_by_the_planted_return(name):
    plain = real(name)
    planted = plant_overlay(plain, drift_multiple=3.0, seed=1)
    bars = planted.bars
    for column in ("open", "high", "low"):  # shifted by the same factor as the bar's close
        np.testing.assert_allclose(getattr(bars, column) / bars.close, getattr(plain, column) / plain.close)
    gained = np.diff(np.log(bars.close)) - np.diff(np.log(plain.close))
    np.testing.assert_allclose(gained, planted.added[1:], atol=1e-12)


def test_the_drift_lasts_the_news_bars_after_each_news_bar_and_the_jump_lands_on_it():
    planted = plant_overlay(real("eurusd"), drift_multiple=1.0, seed=2)
    n = len(planted.news)
    drift, jump = np.zeros(n), np.zeros(n)
    for k in np.flatnonzero(planted.news):  # written out bar by bar: an offset of one bar fails
        jump[k] += planted.direction[k] * NEWS_JUMP_SIGMAS * planted.sigma
        drift[k + 1 : k + 1 + NEWS_BARS] += planted.direction[k] * planted.drift
    assert planted.news.sum() > 100
    np.testing.assert_allclose(planted.expected, drift, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(planted.added, drift + jump, rtol=1e-9, atol=1e-15)


def test_news_come_at_the_sample_rate_in_both_directions():
    planted = plant_overlay(real("eurusd"), drift_multiple=1.0, seed=0)
    n = len(planted.news)
    assert abs(planted.news.sum() - n * SAMPLE_NEWS_RATE) < 4 * np.sqrt(n * SAMPLE_NEWS_RATE)
    assert set(np.unique(planted.direction[planted.news])) == {-1.0, 1.0}
    assert np.all(planted.direction[~planted.news] == 0.0)


def test_drift_zero_plants_the_same_news_and_nothing_knowable():
    with_drift = plant_overlay(real("yndx"), drift_multiple=1.0, seed=3)
    twin = plant_overlay(real("yndx"), drift_multiple=0.0, seed=3)
    np.testing.assert_array_equal(twin.news, with_drift.news)
    np.testing.assert_array_equal(twin.direction, with_drift.direction)
    np.testing.assert_array_equal(twin.bars.volume, with_drift.bars.volume)
    assert np.all(twin.expected == 0.0)
    np.testing.assert_allclose(twin.added, twin.direction * NEWS_JUMP_SIGMAS * twin.sigma)


def test_the_drift_scales_with_the_bars_noise_as_the_samples_does_with_its_own():
    bars = real("eurusd")
    one = plant_overlay(bars, drift_multiple=1.0, seed=0, sigma=SAMPLE_SIGMA)
    assert one.drift == pytest.approx(SAMPLE_NEWS_DRIFT)  # 1x at the sample's noise: the sample's drift
    assert plant_overlay(bars, drift_multiple=0.5, seed=0, sigma=2 * SAMPLE_SIGMA).drift == pytest.approx(
        SAMPLE_NEWS_DRIFT
    )
    auto = plant_overlay(bars, drift_multiple=1.0, seed=0)
    assert auto.drift / auto.sigma == pytest.approx(SAMPLE_NEWS_DRIFT / SAMPLE_SIGMA)


def test_robust_sigma_reads_the_samples_noise_through_its_news_jumps():
    # The sample's own bars: 4 bp Gaussian noise plus 10-sigma news jumps on 0.4% of bars.
    sample = generate_sample_bars(100_000, seed=5, signal=False)
    assert robust_sigma(sample) == pytest.approx(SAMPLE_SIGMA, rel=0.03)
    returns = np.diff(np.log(sample.close))
    assert returns.std() > 1.15 * SAMPLE_SIGMA  # what a plain std would have said


def test_robust_sigma_counts_quiet_bars_rather_than_reading_zero_noise():
    returns = np.diff(np.log(real("yndx").close))
    assert np.median(np.abs(returns)) == 0.0  # most YNDX minutes do not move: a median says "no noise"
    clip = np.quantile(np.abs(returns), SIGMA_CLIP_QUANTILE)
    expected = np.sqrt(np.mean(np.clip(returns, -clip, clip) ** 2))
    assert robust_sigma(real("yndx")) == pytest.approx(expected)
    assert 0.0 < robust_sigma(real("yndx")) < returns.std()


def test_volume_is_multiplied_on_the_news_bars_only():
    plain = real("yndx")
    planted = plant_overlay(plain, drift_multiple=1.0, seed=6)
    news = planted.news
    np.testing.assert_allclose(planted.bars.volume[news], plain.volume[news] * NEWS_VOLUME_FACTOR)
    np.testing.assert_array_equal(planted.bars.volume[~news], plain.volume[~news])


def test_the_same_seed_plants_the_same_overlay_and_another_seed_another():
    a = plant_overlay(real("eurusd"), drift_multiple=1.0, seed=7).bars
    b = plant_overlay(real("eurusd"), drift_multiple=1.0, seed=7).bars
    c = plant_overlay(real("eurusd"), drift_multiple=1.0, seed=8).bars
    for column in ("open", "high", "low", "close", "volume"):
        np.testing.assert_array_equal(getattr(a, column), getattr(b, column))
    assert a.content_hash == b.content_hash
    assert not np.array_equal(a.close, c.close)


def test_the_overlay_is_named_in_the_source_and_hash_so_no_cache_takes_it_for_the_plain_bars():
    plain = real("eurusd")
    hashes = {plain.content_hash}
    for drift, seed in ((1.0, 0), (0.0, 0), (1.0, 1), (0.5, 0)):
        bars = plant_overlay(plain, drift_multiple=drift, seed=seed).bars
        assert bars.source.startswith(plain.source) and f"overlay(drift={drift!r}x,seed={seed}" in bars.source
        hashes.add(bars.content_hash)
    assert len(hashes) == 5


@pytest.mark.parametrize("drift_multiple", [-1.0, float("nan"), float("inf")])
def test_a_drift_multiple_below_zero_or_not_finite_is_refused(drift_multiple):
    with pytest.raises(ValueError, match="drift_multiple"):
        plant_overlay(real("eurusd"), drift_multiple=drift_multiple, seed=0)
