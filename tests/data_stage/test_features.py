"""Specification of foxhunt.data.features: the 42 features, the 4 targets, TA-Lib agreement, no look-ahead."""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
import pytest
import talib
from hypothesis import given, settings
from hypothesis import strategies as st
from support.data_files import DATA, EURUSD, YNDX

from foxhunt.config import TARGET_HORIZONS
from foxhunt.data import features as F
from foxhunt.data import indicators as I
from foxhunt.data.bars import Bars, generate_sample_bars, read_bars

REAL_FILES = (EURUSD.name, YNDX.name)
TALIB_WARMUP = 1000  # seeding differs between libraries; after this many bars it has decayed away
RTOL = 1e-6


@functools.cache
def load(file_name: str) -> tuple[Bars, F.FeatureTable]:
    """A real bars file and its feature table, computed once per session."""
    bars = read_bars([str(DATA / file_name)])
    return bars, F.compute_features(bars)


@pytest.fixture(params=REAL_FILES)
def real(request) -> tuple[Bars, F.FeatureTable]:
    return load(request.param)


def column(table: F.FeatureTable, name: str) -> np.ndarray:
    return table.features[:, F.FEATURE_NAMES.index(name)]


def kept(values: np.ndarray) -> np.ndarray:
    """The rows of a full-length series that the table keeps."""
    return values[F.WARMUP_BARS : len(values) - F.LOOKAHEAD_BARS]


def price_atol(bars: Bars) -> float:
    # Indicators in price units cross zero (MACD) or decay towards it (ATR over flat bars),
    # where a relative test is meaningless. Float64 rounding of the recursions is ~1e-15 of
    # the price level; 1e-12 of it is far above that and far below any price tick.
    return 1e-12 * float(bars.close.max())


def assert_matches_talib(ours: np.ndarray, theirs: np.ndarray, atol: float) -> None:
    np.testing.assert_allclose(ours[TALIB_WARMUP:], theirs[TALIB_WARMUP:], rtol=RTOL, atol=atol)


# --- names, shape, order -------------------------------------------------------------------------


def test_feature_names_are_42_unique_names_in_design_order():
    names = F.FEATURE_NAMES
    assert len(names) == 42 and len(set(names)) == 42
    assert names[:10] == tuple(f"log_return_{k}" for k in (1, 2, 3, 5, 10, 15, 30, 60, 120, 240))
    assert names[10:14] == tuple(f"realized_vol_{w}" for w in (5, 15, 60, 240))
    assert names[14:17] == ("rsi_7", "rsi_14", "rsi_28")
    assert names[17:20] == ("macd_line", "macd_signal", "macd_hist")
    assert names[20:22] == ("atr_14", "atr_60")
    assert names[22:24] == ("bollinger_percent_b", "bollinger_bandwidth")
    assert names[24:26] == ("stoch_k", "stoch_d")
    assert names[26:31] == ("bar_close_location", "bar_range", "bar_body", "bar_upper_wick", "bar_lower_wick")
    assert names[31:34] == ("volume_z_20", "volume_z_60", "log_volume_ratio_240")
    assert names[34:37] == ("close_sma_20", "close_sma_60", "close_sma_240")
    assert names[37:41] == ("time_of_day_sin", "time_of_day_cos", "day_of_week_sin", "day_of_week_cos")
    assert names[41] == "log_minutes_since_prev"


def test_target_names_follow_the_configured_horizons():
    assert F.TARGET_NAMES == tuple(f"forward_log_return_{h}" for h in TARGET_HORIZONS)


def test_warmup_is_the_longest_window():
    assert F.WARMUP_BARS == 240 and F.LOOKAHEAD_BARS == max(TARGET_HORIZONS) == 60


def test_table_drops_warmup_and_lookahead_rows_and_keeps_timestamps_aligned(real):
    bars, table = real
    n = len(bars)
    assert len(table) == n - F.WARMUP_BARS - F.LOOKAHEAD_BARS
    assert table.features.shape == (len(table), 42) and table.targets.shape == (len(table), 4)
    assert table.features.dtype == np.float32 and table.targets.dtype == np.float32
    assert table.timestamp.dtype == np.int64
    assert table.features.flags.c_contiguous and table.targets.flags.c_contiguous
    np.testing.assert_array_equal(table.timestamp, kept(bars.timestamp))


def test_too_few_bars_is_an_error_that_says_how_many_are_needed():
    with pytest.raises(ValueError, match="need more than 300"):
        F.compute_features(generate_sample_bars(300))


# --- TA-Lib agreement (float64 indicator functions) ----------------------------------------------


@pytest.mark.parametrize("period", F.RSI_PERIODS)
def test_rsi_matches_talib(real, period):
    bars, _ = real
    # 0..100 scale; 1e-9 points is far below any meaningful RSI difference and above rounding.
    assert_matches_talib(I.rsi(bars.close, period), talib.RSI(bars.close, period), atol=1e-9)


def test_macd_line_signal_and_histogram_match_talib(real):
    bars, _ = real
    theirs = talib.MACD(bars.close, 12, 26, 9)
    for ours, reference in zip(I.macd(bars.close, 12, 26, 9), theirs, strict=True):
        assert_matches_talib(ours, reference, atol=price_atol(bars))


@pytest.mark.parametrize("period", F.ATR_PERIODS)
def test_atr_matches_talib(real, period):
    bars, _ = real
    ours = I.atr(bars.high, bars.low, bars.close, period)
    assert_matches_talib(ours, talib.ATR(bars.high, bars.low, bars.close, period), atol=price_atol(bars))


def test_bollinger_percent_b_and_bandwidth_match_talib_population_std(real):
    bars, _ = real
    upper, middle, lower = talib.BBANDS(bars.close, 20, 2.0, 2.0, 0)
    percent_b, bandwidth = I.bollinger(bars.close, 20, 2.0)
    moving = (upper - lower) > 0
    moving[:TALIB_WARMUP] = False
    with np.errstate(divide="ignore", invalid="ignore"):  # flat windows, masked out below
        reference_b = (bars.close - lower) / (upper - lower)
    np.testing.assert_allclose(percent_b[moving], reference_b[moving], rtol=RTOL, atol=1e-9)
    np.testing.assert_allclose(bandwidth[moving], ((upper - lower) / middle)[moving], rtol=RTOL, atol=1e-12)


def test_bollinger_flat_window_gives_half_percent_b_and_zero_bandwidth(real):
    bars, _ = real
    upper, _, lower = talib.BBANDS(bars.close, 20, 2.0, 2.0, 0)
    percent_b, bandwidth = I.bollinger(bars.close, 20, 2.0)
    flat = upper == lower
    flat[:TALIB_WARMUP] = False
    assert np.all(percent_b[flat] == 0.5) and np.all(bandwidth[flat] == 0.0)


def test_stochastic_matches_talib_stochf_14_3_where_the_range_is_nonzero(real):
    bars, _ = real
    k, d = I.stochastic(bars.high, bars.low, bars.close, 14, 3)
    ref_k, ref_d = talib.STOCHF(bars.high, bars.low, bars.close, 14, 3, 0)
    span = talib.MAX(bars.high, 14) - talib.MIN(bars.low, 14)
    moving_k = span > 0
    moving_d = moving_k & np.roll(moving_k, 1) & np.roll(moving_k, 2)
    for mask in (moving_k, moving_d):
        mask[:TALIB_WARMUP] = False
    # 0..100 scale, as for RSI.
    np.testing.assert_allclose(k[moving_k], ref_k[moving_k], rtol=RTOL, atol=1e-9)
    np.testing.assert_allclose(d[moving_d], ref_d[moving_d], rtol=RTOL, atol=1e-9)
    flat = ~(span > 0)
    flat[:TALIB_WARMUP] = False
    assert np.all(k[flat] == 50.0)


# --- hand-computed values: defaults, seeds and the first defined bar ------------------------------


def test_rsi_of_a_steady_rise_is_100_from_bar_period_and_undefined_before():
    rsi = I.rsi(100.0 + np.arange(20.0), 14)
    assert np.isnan(rsi[:14]).all()
    assert np.all(rsi[14:] == 100.0)


def test_rsi_and_atr_of_only_period_bars_are_undefined():
    close = 100.0 + np.arange(14.0)
    assert np.isnan(I.rsi(close, 14)).all()
    assert np.isnan(I.atr(close + 1.0, close - 1.0, close, 14)).all()


def test_atr_seed_is_the_mean_true_range_of_bars_1_to_period_not_bar_0():
    high = np.array([110.0, 101.0, 101.0, 101.0])
    low = np.array([90.0, 99.0, 99.0, 99.0])
    close = np.full(4, 100.0)
    atr = I.atr(high, low, close, 3)  # true ranges 20, 2, 2, 2: bar 0's wide range is left out
    assert np.isnan(atr[:3]).all()
    assert atr[3] == pytest.approx(2.0)


def test_bollinger_defaults_to_20_closes_and_2_population_deviations():
    close = np.append(np.full(24, 100.0), 120.0)
    percent_b, bandwidth = I.bollinger(close)
    # The last 20 closes: 19 × 100 and 120, so mean 101, population variance (19·1 + 19²) / 20 = 19.
    width = 2 * 2.0 * np.sqrt(19.0)
    assert percent_b[-1] == pytest.approx(0.5 + (120.0 - 101.0) / width)
    assert bandwidth[-1] == pytest.approx(width / 101.0)


def test_bollinger_is_first_defined_on_the_20th_close():
    percent_b, bandwidth = I.bollinger(100.0 + np.arange(20.0))
    assert np.isnan(percent_b[:19]).all() and np.isnan(bandwidth[:19]).all()
    assert np.isfinite(percent_b[19]) and np.isfinite(bandwidth[19])


def test_stochastic_defaults_to_a_14_bar_range_and_a_3_bar_d():
    high, low, close = np.full(20, 110.0), np.full(20, 90.0), np.full(20, 100.0)
    low[6] = 80.0  # inside the 14-bar window of bars 17..19, outside the 13-bar window of bar 19
    close[17:] = (92.0, 100.0, 108.0)
    k, d = I.stochastic(high, low, close)
    # %K over the range 80..110: (92 − 80) / 30, (100 − 80) / 30, (108 − 80) / 30.
    assert k[-1] == pytest.approx(100.0 * 28.0 / 30.0)
    assert d[-1] == pytest.approx(100.0 * (12.0 + 20.0 + 28.0) / 90.0)


def test_stochastic_k_is_first_defined_on_bar_13_and_d_on_bar_15():
    close = 100.0 + np.arange(20.0)
    k, d = I.stochastic(close + 1.0, close - 1.0, close, 14, 3)
    assert np.isnan(k[:13]).all() and np.isfinite(k[13:]).all()
    assert np.isnan(d[:15]).all() and np.isfinite(d[15:]).all()


# --- the float32 table holds the float64 indicators ---------------------------------------------


def test_table_columns_equal_the_float64_indicators_to_float32_precision(real):
    bars, table = real
    c, h, lo = bars.close, bars.high, bars.low
    line, signal, hist = I.macd(c)
    percent_b, bandwidth = I.bollinger(c)
    k, d = I.stochastic(h, lo, c)
    expected = {
        "rsi_7": I.rsi(c, 7),
        "rsi_14": I.rsi(c, 14),
        "rsi_28": I.rsi(c, 28),
        "macd_line": line / c,
        "macd_signal": signal / c,
        "macd_hist": hist / c,
        "atr_14": I.atr(h, lo, c, 14) / c,
        "atr_60": I.atr(h, lo, c, 60) / c,
        "bollinger_percent_b": percent_b,
        "bollinger_bandwidth": bandwidth,
        "stoch_k": k,
        "stoch_d": d,
    }
    for name, values in expected.items():
        np.testing.assert_allclose(column(table, name), kept(values), rtol=2.0**-23, atol=1e-30, err_msg=name)


def test_simple_features_follow_their_definitions(real):
    bars, table = real
    c, o, h, lo = (kept(x) for x in (bars.close, bars.open, bars.high, bars.low))
    log_close = np.log(bars.close)
    t = np.arange(F.WARMUP_BARS, len(bars) - F.LOOKAHEAD_BARS)
    expected = {
        "log_return_1": log_close[t] - log_close[t - 1],
        "log_return_240": log_close[t] - log_close[t - 240],
        "bar_range": (h - lo) / c,
        "bar_body": (c - o) / c,
        "bar_upper_wick": (h - np.maximum(o, c)) / c,
        "bar_lower_wick": (np.minimum(o, c) - lo) / c,
        "close_sma_20": c / np.convolve(bars.close, np.ones(20) / 20, "valid")[t - 19] - 1,
        "log_minutes_since_prev": np.log1p((bars.timestamp[t] - bars.timestamp[t - 1]) / 60e9),
    }
    for name, values in expected.items():
        # 1e-9 absolute: close/SMA − 1 differs from the convolution by SMA rounding (~1e-13).
        np.testing.assert_allclose(column(table, name), values, rtol=1e-6, atol=1e-9, err_msg=name)


def test_calendar_features_use_the_utc_clock_and_monday_zero_week():
    bars = generate_sample_bars(2000, start="2024-01-01T00:00:00")  # a Monday
    table = F.compute_features(bars)
    stamp = bars.timestamp[F.WARMUP_BARS : -F.LOOKAHEAD_BARS].astype("datetime64[ns]")
    minute_of_day = (stamp - stamp.astype("datetime64[D]")).astype("timedelta64[m]").astype(float)
    weekday = (stamp.astype("datetime64[D]").astype(np.int64) + 3) % 7
    np.testing.assert_allclose(
        column(table, "time_of_day_sin"), np.sin(2 * np.pi * minute_of_day / 1440), atol=1e-6
    )
    np.testing.assert_allclose(
        column(table, "time_of_day_cos"), np.cos(2 * np.pi * minute_of_day / 1440), atol=1e-6
    )
    np.testing.assert_allclose(column(table, "day_of_week_sin"), np.sin(2 * np.pi * weekday / 7), atol=1e-6)
    np.testing.assert_allclose(column(table, "day_of_week_cos"), np.cos(2 * np.pi * weekday / 7), atol=1e-6)
    assert column(table, "day_of_week_sin")[0] == 0.0  # bar 240 is Monday 04:00


# --- targets -------------------------------------------------------------------------------------


def test_targets_are_forward_log_returns_of_close(real):
    bars, table = real
    t = np.arange(F.WARMUP_BARS, len(bars) - F.LOOKAHEAD_BARS)
    for j, horizon in enumerate(TARGET_HORIZONS):
        expected = np.log(bars.close[t + horizon] / bars.close[t])
        np.testing.assert_allclose(table.targets[:, j], expected, rtol=1e-6, atol=1e-12)


# --- no look-ahead -------------------------------------------------------------------------------

SMALL = generate_sample_bars(1500, seed=7)
SMALL_TABLE = F.compute_features(SMALL)


def perturb_after(bars: Bars, t: int, scale: np.ndarray, volume: np.ndarray, delay_ns: int) -> Bars:
    """Bars with every bar after t changed: prices scaled, volume replaced, later timestamps delayed."""
    later = slice(t + 1, None)
    prices = {}
    for name in ("open", "high", "low", "close"):
        values = getattr(bars, name).copy()
        values[later] *= scale
        prices[name] = values
    new_volume = bars.volume.copy()
    new_volume[later] = volume
    stamps = bars.timestamp.copy()
    stamps[later] += delay_ns
    return replace(bars, timestamp=stamps, volume=new_volume, **prices)


@settings(max_examples=40, deadline=None)
@given(
    t=st.integers(F.WARMUP_BARS, len(SMALL) - F.LOOKAHEAD_BARS - 2),
    seed=st.integers(0, 2**32 - 1),
    delay_minutes=st.integers(0, 5000),
)
def test_changing_later_bars_leaves_earlier_feature_rows_bit_identical(t, seed, delay_minutes):
    rng = np.random.default_rng(seed)
    later = len(SMALL) - t - 1
    # A per-bar factor away from 1 guarantees bar t + 1 really changes.
    scale = np.exp(rng.choice([-1.0, 1.0], later) * rng.uniform(0.001, 0.05, later))
    volume = np.floor(rng.lognormal(3.0, 2.0, later))
    changed = F.compute_features(perturb_after(SMALL, t, scale, volume, delay_minutes * 60_000_000_000))
    row = t - F.WARMUP_BARS
    np.testing.assert_array_equal(changed.features[: row + 1], SMALL_TABLE.features[: row + 1])
    # The test can fail: the first changed bar's own row does move.
    assert not np.array_equal(changed.features[row + 1], SMALL_TABLE.features[row + 1])


# --- zero volume and flat bars -------------------------------------------------------------------


def test_real_files_give_only_finite_features_and_targets(real):
    _, table = real
    assert np.isfinite(table.features).all() and np.isfinite(table.targets).all()


def test_zero_volume_on_every_eurusd_bar_gives_zero_volume_features():
    bars, table = load(EURUSD.name)
    assert np.all(bars.volume == 0)
    for name in ("volume_z_20", "volume_z_60", "log_volume_ratio_240"):
        assert np.all(column(table, name) == 0.0), name


def test_flat_bars_have_close_location_one_half(real):
    bars, table = real
    flat = kept(bars.high) == kept(bars.low)
    assert np.all(column(table, "bar_close_location")[flat] == 0.5)


def flat_bars(n: int, price: float = 100.0) -> Bars:
    stamps = np.datetime64("2024-01-01T00:00", "ns").astype(np.int64) + np.arange(n) * 60_000_000_000
    prices = np.full(n, price)
    return Bars(stamps, prices, prices, prices, prices, np.zeros(n))


def test_all_flat_zero_volume_bars_give_the_documented_values():
    table = F.compute_features(flat_bars(1000))
    assert np.isfinite(table.features).all()
    documented = {name: 0.0 for name in F.FEATURE_NAMES if not name.startswith(("time_", "day_"))}
    documented.update(
        {
            "rsi_7": 50.0,
            "rsi_14": 50.0,
            "rsi_28": 50.0,
            "bollinger_percent_b": 0.5,
            "stoch_k": 50.0,
            "stoch_d": 50.0,
            "bar_close_location": 0.5,
            "log_minutes_since_prev": np.float32(np.log(2.0)),
        }
    )
    for name, value in documented.items():
        assert np.all(column(table, name) == value), name


def test_constant_nonzero_volume_gives_zero_z_score():
    bars = generate_sample_bars(3000, seed=3)
    bars = replace(bars, volume=np.full(len(bars), 1234.0))
    table = F.compute_features(bars)
    assert np.all(column(table, "volume_z_20") == 0.0) and np.all(column(table, "volume_z_60") == 0.0)
    # The 240-bar mean comes from rolling sums, so it may sit an ulp off 1234.
    np.testing.assert_allclose(column(table, "log_volume_ratio_240"), 0.0, atol=1e-12)


def test_volume_z_floor_sits_at_1e_minus_9_of_the_mean_squared():
    # One bar of volume v + 1 closing a window of v: variance (1/w)(1 − 1/w), z = sqrt(w − 1).
    # Relative to mean², that variance is about 5e-9 at v = 3000 (a z-score) and 5e-10 at v = 10000 (zero).
    for base, scale in ((3000.0, 1.0), (10000.0, 0.0)):
        bars = flat_bars(400)
        volume = np.full(400, base)
        volume[300] += 1.0
        table = F.compute_features(replace(bars, volume=volume))
        row = 300 - F.WARMUP_BARS
        for window in F.VOLUME_Z_WINDOWS:
            got = column(table, f"volume_z_{window}")[row]
            assert got == pytest.approx(scale * np.sqrt(window - 1.0), rel=1e-5), (base, window)


def test_rolling_sum_equals_the_window_sum_across_chunk_boundaries():
    values = np.random.default_rng(0).lognormal(0.0, 2.0, 3 * I._CUMSUM_CHUNK + 77)
    expected = np.lib.stride_tricks.sliding_window_view(values, 240).sum(axis=1)
    ours = I.rolling_sum(values, 240)
    assert np.isnan(ours[:239]).all()
    np.testing.assert_allclose(ours[239:], expected, rtol=1e-12)
