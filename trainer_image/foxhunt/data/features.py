"""Bars → the 42 float32 features and 4 float32 targets of DESIGN's data contract.

Every feature at row t is computed from bars 0..t only; targets look forward and are
the only thing that does. All arithmetic is vectorized float64 (recursive filters run in
`scipy.signal.lfilter`, rolling sums as chunked cumulative sums or as a loop over the
few lags of a short window, never a loop over bars); results are stored as float32.

Indicator conventions follow TA-Lib where it has the indicator:

* RSI: Wilder smoothing of gains and losses, seeded with their simple mean over the first
  `period` changes (TA-Lib's `RSI`); scale 0..100.
* MACD 12/26/9: EMAs with k = 2 / (period + 1), seeded with the first value (TA-Lib seeds
  with a simple mean; the difference has decayed below 1e-30 after 1,000 bars).
* ATR: Wilder smoothing of the true range, seeded with the mean of the first `period`
  true ranges (TA-Lib's `ATR`).
* Bollinger 20/2: simple mean and population standard deviation (ddof=0);
  %B = (close − lower) / (upper − lower), bandwidth = (upper − lower) / middle.
* Stochastic: TA-Lib's `STOCHF(fastk_period=14, fastd_period=3, fastd_matype=SMA)`:
  %K = 100 · (close − lowest low 14) / (highest high 14 − lowest low 14), %D = SMA 3 of %K.

Defined values where a formula would divide by zero (zero volume on every EURUSD bar,
flat bars with high == low, windows without any movement):

* RSI = 50 when the window had neither gains nor losses (TA-Lib gives 0).
* Bollinger %B = 0.5 and bandwidth = 0 when the 20 closes are all equal.
* Stochastic %K = 50 when highest high == lowest low over 14 bars (TA-Lib gives 0);
  %D is the mean of those %K values.
* (close − low) / (high − low) = 0.5 for a flat bar.
* Volume z-score = 0 when the window's variance is at most 1e-9 · mean² (constant volume,
  zero volume included; the floor sits far above the rounding noise of the rolling sums).
* Volume ratio = log((volume + 1) / (mean volume over 240 + 1)), so 0 for zero volume.
* Realized volatility = sqrt(mean of squared 1-bar log returns), 0 over a flat window.

Time features come from the UTC timestamp: time of day as an angle over 24 h, day of week
(Monday = 0) as an angle over 7 days. The gap feature is log(1 + minutes since the
previous bar).

Rows: the first `WARMUP_BARS` rows (before the longest window, 240 bars, is full) and the
last `max(TARGET_HORIZONS)` rows (no full target) are dropped, so a table has
n − WARMUP_BARS − max(TARGET_HORIZONS) rows and row i describes bar i + WARMUP_BARS.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from foxhunt.config import TARGET_HORIZONS
from foxhunt.data.bars import NS_PER_DAY, NS_PER_MINUTE, Bars, BarsError

RETURN_LAGS = (1, 2, 3, 5, 10, 15, 30, 60, 120, 240)
VOLATILITY_WINDOWS = (5, 15, 60, 240)
RSI_PERIODS = (7, 14, 28)
MACD_PERIODS = (12, 26, 9)
ATR_PERIODS = (14, 60)
BOLLINGER_PERIOD, BOLLINGER_DEVIATIONS = 20, 2.0
STOCH_K_PERIOD, STOCH_D_PERIOD = 14, 3
VOLUME_Z_WINDOWS = (20, 60)
VOLUME_MEAN_WINDOW = 240
SMA_WINDOWS = (20, 60, 240)

FEATURE_NAMES: tuple[str, ...] = (
    *(f"log_return_{k}" for k in RETURN_LAGS),
    *(f"realized_vol_{w}" for w in VOLATILITY_WINDOWS),
    *(f"rsi_{p}" for p in RSI_PERIODS),
    "macd_line",
    "macd_signal",
    "macd_hist",
    *(f"atr_{p}" for p in ATR_PERIODS),
    "bollinger_percent_b",
    "bollinger_bandwidth",
    "stoch_k",
    "stoch_d",
    "bar_close_location",
    "bar_range",
    "bar_body",
    "bar_upper_wick",
    "bar_lower_wick",
    *(f"volume_z_{w}" for w in VOLUME_Z_WINDOWS),
    f"log_volume_ratio_{VOLUME_MEAN_WINDOW}",
    *(f"close_sma_{w}" for w in SMA_WINDOWS),
    "time_of_day_sin",
    "time_of_day_cos",
    "day_of_week_sin",
    "day_of_week_cos",
    "log_minutes_since_prev",
)
TARGET_NAMES: tuple[str, ...] = tuple(f"forward_log_return_{h}" for h in TARGET_HORIZONS)

WARMUP_BARS = max(*RETURN_LAGS, *VOLATILITY_WINDOWS, VOLUME_MEAN_WINDOW, *SMA_WINDOWS)
LOOKAHEAD_BARS = max(TARGET_HORIZONS)

_VOLUME_VAR_FLOOR = 1e-9  # relative to mean²: below it a window's volume counts as constant
_CUMSUM_CHUNK = 16_384  # rows per cumulative-sum chunk; bounds the sums' magnitude, hence their rounding


@dataclass(frozen=True)
class FeatureTable:
    """Features and targets for the kept rows; `features[i]` and `targets[i]` belong to `timestamp[i]`."""

    timestamp: np.ndarray  # int64 ns UTC, (n,)
    features: np.ndarray  # float32, (n, len(FEATURE_NAMES)), C-contiguous
    targets: np.ndarray  # float32, (n, len(TARGET_NAMES)), C-contiguous

    def __len__(self) -> int:
        return len(self.timestamp)


# ---------------------------------------------------------------------------------------------
# Rolling-window building blocks. Each returns a full-length float64 array whose entry t
# covers bars t − window + 1 .. t; entries before the window is full are NaN.


def rolling_sum(x: np.ndarray, window: int) -> np.ndarray:
    """Sum of x over the trailing `window` bars, from cumulative sums restarted every chunk.

    A cumulative sum over millions of bars grows until its rounding swamps a short
    window's sum; restarting it per chunk (with the window's history) keeps the error at
    the size of the chunk's sum. A window of non-negative values that are all zero sums to
    exactly zero.
    """
    n = len(x)
    out = np.full(n, np.nan)
    for start in range(window - 1, n, _CUMSUM_CHUNK):
        stop = min(start + _CUMSUM_CHUNK, n)
        sums = np.empty(stop - start + window)
        sums[0] = 0.0
        np.cumsum(x[start - window + 1 : stop], out=sums[1:])
        np.subtract(sums[window:], sums[: stop - start], out=out[start:stop])
    return out


def _trailing_extreme(x: np.ndarray, window: int, ufunc: np.ufunc) -> np.ndarray:
    out = np.full(len(x), np.nan)
    acc = out[window - 1 :]
    acc[:] = x[window - 1 :]
    for lag in range(1, window):
        ufunc(acc, x[window - 1 - lag : len(x) - lag], out=acc)
    return out


def _wilder_average(x: np.ndarray, period: int) -> np.ndarray:
    """Wilder's smoothing of x[1:], seeded at index `period` with the mean of x[1..period] (TA-Lib's way)."""
    out = np.full(len(x), np.nan)
    if len(x) <= period:
        return out
    seed = x[1 : period + 1].mean()
    decay = (period - 1) / period
    out[period] = seed
    if len(x) > period + 1:
        from scipy.signal import lfilter  # here, not at the top: a run that only reads features skips scipy

        out[period + 1 :] = lfilter([1.0 / period], [1.0, -decay], x[period + 1 :], zi=[decay * seed])[0]
    return out


def ema(x: np.ndarray, period: int) -> np.ndarray:
    """Exponential moving average with k = 2 / (period + 1), seeded with the first value."""
    from scipy.signal import lfilter  # here, not at the top: a run that only reads features skips scipy

    k = 2.0 / (period + 1)
    return lfilter([k], [1.0, -(1.0 - k)], x, zi=[(1.0 - k) * x[0]])[0]


# ---------------------------------------------------------------------------------------------
# Indicators in float64, full length, NaN before their first defined bar (as TA-Lib returns them).


def price_moves(close: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-bar gain and loss of close (both ≥ 0; zero on the first bar)."""
    change = np.empty_like(close)
    change[0] = 0.0
    np.subtract(close[1:], close[:-1], out=change[1:])
    return np.maximum(change, 0.0), np.maximum(-change, 0.0)


def rsi(close: np.ndarray, period: int, moves: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Wilder RSI on a 0..100 scale; 50 where the window saw neither gains nor losses.

    `moves` is `price_moves(close)`, passed in when several periods share it.
    """
    gain, loss = moves if moves is not None else price_moves(close)
    avg_gain = _wilder_average(gain, period)
    total = _wilder_average(loss, period)
    total += avg_gain
    out = np.full_like(close, 50.0)
    avg_gain *= 100.0
    np.divide(avg_gain, total, out=out, where=total > 0)
    out[:period] = np.nan
    return out


def macd(
    close: np.ndarray, fast: int = 12, slow: int = 26, signal: int = 9
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MACD line (EMA fast − EMA slow), its signal EMA and the histogram, in price units."""
    line = ema(close, fast)
    line -= ema(close, slow)
    signal_line = ema(line, signal)
    return line, signal_line, line - signal_line


def true_range(high: np.ndarray, low: np.ndarray, close: np.ndarray) -> np.ndarray:
    """max(high − low, |high − previous close|, |low − previous close|); high − low on the first bar."""
    out = high - low
    prev = close[:-1]
    np.maximum(out[1:], np.abs(high[1:] - prev), out=out[1:])
    np.maximum(out[1:], np.abs(low[1:] - prev), out=out[1:])
    return out


def atr(high: np.ndarray, low: np.ndarray, close: np.ndarray, period: int) -> np.ndarray:
    """Average true range with Wilder smoothing, in price units."""
    return _wilder_average(true_range(high, low, close), period)


def bollinger(
    close: np.ndarray, period: int = BOLLINGER_PERIOD, deviations: float = BOLLINGER_DEVIATIONS
) -> tuple[np.ndarray, np.ndarray]:
    """Bollinger %B and bandwidth (population std); %B 0.5 and bandwidth 0 over a flat window."""
    n = len(close)
    percent_b = np.full(n, np.nan)
    bandwidth = np.full(n, np.nan)
    if n < period:
        return percent_b, bandwidth
    # Deviations from the window's last close are exact and small, so the variance formula
    # E[d²] − E[d]² loses nothing to cancellation, and a flat window gives exactly zero.
    current = close[period - 1 :]
    s1 = np.zeros(n - period + 1)
    s2 = np.zeros(n - period + 1)
    d = np.empty(n - period + 1)
    for lag in range(1, period):
        np.subtract(close[period - 1 - lag : n - lag], current, out=d)
        s1 += d
        d *= d
        s2 += d
    mean_d = s1 / period
    var = s2 / period - mean_d * mean_d
    np.maximum(var, 0.0, out=var)
    width = 2.0 * deviations * np.sqrt(var)
    pb = np.full(n - period + 1, 0.5)
    np.divide(-mean_d, width, out=pb, where=width > 0)
    pb[width > 0] += 0.5
    percent_b[period - 1 :] = pb
    bandwidth[period - 1 :] = width / (current + mean_d)
    return percent_b, bandwidth


def stochastic(
    high: np.ndarray,
    low: np.ndarray,
    close: np.ndarray,
    k_period: int = STOCH_K_PERIOD,
    d_period: int = STOCH_D_PERIOD,
) -> tuple[np.ndarray, np.ndarray]:
    """Fast stochastic %K and %D (SMA of %K) on 0..100; %K 50 where the range is zero."""
    highest = _trailing_extreme(high, k_period, np.maximum)
    lowest = _trailing_extreme(low, k_period, np.minimum)
    span = highest - lowest
    k = np.full_like(close, 50.0)
    np.divide(100.0 * (close - lowest), span, out=k, where=span > 0)
    k[: k_period - 1] = np.nan
    d = np.full_like(close, np.nan)
    first = k_period + d_period - 2
    d[first:] = k[first:]
    for lag in range(1, d_period):
        d[first:] += k[first - lag : len(k) - lag]
    d[first:] /= d_period
    return k, d


# ---------------------------------------------------------------------------------------------


def compute_features(bars: Bars, progress: Callable[[str], None] | None = None) -> FeatureTable:
    """Compute the feature table of `bars` (see the module docstring for every definition).

    `progress`, if given, is called with a short message as each stage starts. Raises
    BarsError (a ValueError, exit 2) naming the bars when there are too few for a single row.
    """
    n = len(bars)
    lo, hi = WARMUP_BARS, n - LOOKAHEAD_BARS
    if hi <= lo:
        raise BarsError(
            f"{bars.source}: {n} bars give no feature rows: need more than {WARMUP_BARS + LOOKAHEAD_BARS} "
            f"({WARMUP_BARS} of warm-up, {LOOKAHEAD_BARS} for the targets)"
        )
    say = progress or (lambda _message: None)
    close, high, low, open_ = bars.close, bars.high, bars.low, bars.open
    volume = bars.volume

    # Features are written one per contiguous row of a (42, rows) buffer and transposed at
    # the end: writing a column of the (rows, 42) table directly would stride through
    # all of it once per feature.
    by_feature = np.empty((len(FEATURE_NAMES), hi - lo), dtype=np.float32)
    column = iter(range(len(FEATURE_NAMES)))

    def put(values: np.ndarray) -> None:
        by_feature[next(column)] = values[lo:hi]

    with np.errstate(divide="ignore", invalid="ignore"):
        say("log returns")
        log_close = np.log(close)
        for lag in RETURN_LAGS:
            by_feature[next(column)] = log_close[lo:hi] - log_close[lo - lag : hi - lag]

        say("realized volatility")
        squared = np.zeros(n)
        np.subtract(log_close[1:], log_close[:-1], out=squared[1:])
        squared *= squared
        for window in VOLATILITY_WINDOWS:
            put(np.sqrt(rolling_sum(squared, window) / window))
        del squared

        say("RSI")
        moves = price_moves(close)
        for period in RSI_PERIODS:
            put(rsi(close, period, moves))
        del moves

        say("MACD")
        for values in macd(close, *MACD_PERIODS):
            values /= close
            put(values)

        say("ATR")
        for period in ATR_PERIODS:
            put(atr(high, low, close, period) / close)

        say("Bollinger")
        for values in bollinger(close):
            put(values)

        say("stochastic")
        for values in stochastic(high, low, close):
            put(values)

        say("bar shape")
        span = high - low
        location = np.full(n, 0.5)
        np.divide(close - low, span, out=location, where=span > 0)
        put(location)
        put(span / close)
        put((close - open_) / close)
        put((high - np.maximum(open_, close)) / close)
        put((np.minimum(open_, close) - low) / close)
        del span, location

        say("volume")
        volume_squared = volume * volume
        for window in VOLUME_Z_WINDOWS:
            mean = rolling_sum(volume, window) / window
            var = rolling_sum(volume_squared, window) / window - mean * mean
            z = np.zeros(n)
            np.divide(volume - mean, np.sqrt(var), out=z, where=var > _VOLUME_VAR_FLOOR * mean * mean)
            put(z)
        del volume_squared
        mean = rolling_sum(volume, VOLUME_MEAN_WINDOW) / VOLUME_MEAN_WINDOW
        put(np.log((volume + 1.0) / (mean + 1.0)))

        say("moving averages")
        for window in SMA_WINDOWS:
            put(close / (rolling_sum(close, window) / window) - 1.0)

        say("calendar")
        stamps = bars.timestamp[lo:hi]
        days = stamps // NS_PER_DAY
        day_angle = (stamps - days * NS_PER_DAY) * (2.0 * np.pi / NS_PER_DAY)
        by_feature[next(column)] = np.sin(day_angle)
        by_feature[next(column)] = np.cos(day_angle)
        del day_angle
        weekday = (days + 3) % 7  # 1970-01-01 was a Thursday; Monday = 0
        week_angle = (2.0 * np.pi / 7.0) * np.arange(7)
        by_feature[next(column)] = np.sin(week_angle)[weekday]
        by_feature[next(column)] = np.cos(week_angle)[weekday]
        gap_minutes = (stamps - bars.timestamp[lo - 1 : hi - 1]) / NS_PER_MINUTE
        by_feature[next(column)] = np.log1p(gap_minutes)
    assert next(column, None) is None, "every feature column is written exactly once"

    say("targets")
    targets = np.empty((hi - lo, len(TARGET_HORIZONS)), dtype=np.float32)
    for j, horizon in enumerate(TARGET_HORIZONS):
        targets[:, j] = log_close[lo + horizon : hi + horizon] - log_close[lo:hi]

    say("transpose")
    features = np.empty((hi - lo, len(FEATURE_NAMES)), dtype=np.float32)
    block = 1 << 14  # rows per transposed block: its source and target stay in cache
    for start in range(0, hi - lo, block):
        features[start : start + block] = by_feature[:, start : start + block].T
    return FeatureTable(timestamp=bars.timestamp[lo:hi].copy(), features=features, targets=targets)
