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
* ATR: Wilder smoothing of the true range, seeded with the mean of the true ranges of bars
  1..`period` (bar 0 has no previous close; TA-Lib's `ATR`).
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
from foxhunt.data.indicators import atr, bollinger, macd, price_moves, rolling_sum, rsi, stochastic

RETURN_LAGS = (1, 2, 3, 5, 10, 15, 30, 60, 120, 240)
VOLATILITY_WINDOWS = (5, 15, 60, 240)
RSI_PERIODS = (7, 14, 28)
MACD_PERIODS = (12, 26, 9)
ATR_PERIODS = (14, 60)
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


@dataclass(frozen=True)
class FeatureTable:
    """Features and targets for the kept rows; `features[i]` and `targets[i]` belong to `timestamp[i]`."""

    timestamp: np.ndarray  # int64 ns UTC, (n,)
    features: np.ndarray  # float32, (n, len(FEATURE_NAMES)), C-contiguous
    targets: np.ndarray  # float32, (n, len(TARGET_NAMES)), C-contiguous

    def __len__(self) -> int:
        return len(self.timestamp)


class _Columns:
    """The (features, rows) buffer the features are written into, one contiguous row per feature.

    Writing a column of the (rows, 42) table directly would stride through all of it once per
    feature; rows of a (42, rows) buffer are written whole and transposed once at the end.
    """

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi
        self.by_feature = np.empty((len(FEATURE_NAMES), hi - lo), dtype=np.float32)
        self._next = iter(range(len(FEATURE_NAMES)))

    def put(self, values: np.ndarray) -> None:
        """The next feature, from a full-length array (its kept rows are taken here)."""
        self.put_kept(values[self.lo : self.hi])

    def put_kept(self, values: np.ndarray) -> None:
        """The next feature, from an array of the kept rows only."""
        self.by_feature[next(self._next)] = values

    def all_written(self) -> bool:
        """Whether every feature row has been written."""
        return next(self._next, None) is None


def _price_features(cols: _Columns, bars: Bars, log_close: np.ndarray, say: Callable[[str], None]) -> None:
    """Log returns, realized volatility, RSI, MACD, ATR, Bollinger and stochastic, in FEATURE_NAMES order."""
    n, lo, hi = len(bars), cols.lo, cols.hi
    close, high, low = bars.close, bars.high, bars.low
    for lag in RETURN_LAGS:
        cols.put_kept(log_close[lo:hi] - log_close[lo - lag : hi - lag])
    say("realized volatility")
    squared = np.zeros(n)
    np.subtract(log_close[1:], log_close[:-1], out=squared[1:])
    squared *= squared
    for window in VOLATILITY_WINDOWS:
        cols.put(np.sqrt(rolling_sum(squared, window) / window))
    del squared  # freed before the next indicators: a full-length float64 array each
    say("RSI")
    moves = price_moves(close)
    for period in RSI_PERIODS:
        cols.put(rsi(close, period, moves))
    del moves
    say("MACD")
    for values in macd(close, *MACD_PERIODS):
        values /= close
        cols.put(values)
    say("ATR")
    for period in ATR_PERIODS:
        cols.put(atr(high, low, close, period) / close)
    say("Bollinger")
    for values in bollinger(close):
        cols.put(values)
    say("stochastic")
    for values in stochastic(high, low, close):
        cols.put(values)


def _bar_features(cols: _Columns, bars: Bars, say: Callable[[str], None]) -> None:
    """Bar shape, volume and the close against its moving averages, in FEATURE_NAMES order."""
    n = len(bars)
    close, high, low, open_, volume = bars.close, bars.high, bars.low, bars.open, bars.volume
    say("bar shape")
    span = high - low
    location = np.full(n, 0.5)
    np.divide(close - low, span, out=location, where=span > 0)
    cols.put(location)
    cols.put(span / close)
    cols.put((close - open_) / close)
    cols.put((high - np.maximum(open_, close)) / close)
    cols.put((np.minimum(open_, close) - low) / close)
    del span, location
    say("volume")
    volume_squared = volume * volume
    for window in VOLUME_Z_WINDOWS:
        mean = rolling_sum(volume, window) / window
        var = rolling_sum(volume_squared, window) / window - mean * mean
        z = np.zeros(n)
        np.divide(volume - mean, np.sqrt(var), out=z, where=var > _VOLUME_VAR_FLOOR * mean * mean)
        cols.put(z)
    del volume_squared
    mean = rolling_sum(volume, VOLUME_MEAN_WINDOW) / VOLUME_MEAN_WINDOW
    cols.put(np.log((volume + 1.0) / (mean + 1.0)))
    say("moving averages")
    for window in SMA_WINDOWS:
        cols.put(close / (rolling_sum(close, window) / window) - 1.0)


def _calendar_features(cols: _Columns, timestamp: np.ndarray) -> None:
    """Time of day and day of week as angles, and log(1 + minutes since the previous bar)."""
    lo, hi = cols.lo, cols.hi
    stamps = timestamp[lo:hi]
    days = stamps // NS_PER_DAY
    day_angle = (stamps - days * NS_PER_DAY) * (2.0 * np.pi / NS_PER_DAY)
    cols.put_kept(np.sin(day_angle))
    cols.put_kept(np.cos(day_angle))
    del day_angle
    weekday = (days + 3) % 7  # 1970-01-01 was a Thursday; Monday = 0
    week_angle = (2.0 * np.pi / 7.0) * np.arange(7)
    cols.put_kept(np.sin(week_angle)[weekday])
    cols.put_kept(np.cos(week_angle)[weekday])
    gap_minutes = (stamps - timestamp[lo - 1 : hi - 1]) / NS_PER_MINUTE
    cols.put_kept(np.log1p(gap_minutes))


def _targets(log_close: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Forward log returns over each of TARGET_HORIZONS, for the kept rows."""
    targets = np.empty((hi - lo, len(TARGET_HORIZONS)), dtype=np.float32)
    for j, horizon in enumerate(TARGET_HORIZONS):
        targets[:, j] = log_close[lo + horizon : hi + horizon] - log_close[lo:hi]
    return targets


def _transposed(by_feature: np.ndarray) -> np.ndarray:
    """The (rows, features) table of a (features, rows) buffer, a cache-sized block of rows at a time."""
    rows = by_feature.shape[1]
    features = np.empty((rows, by_feature.shape[0]), dtype=np.float32)
    block = 1 << 14  # rows per transposed block: its source and target stay in cache
    for start in range(0, rows, block):
        features[start : start + block] = by_feature[:, start : start + block].T
    return features


def feature_bars(bars: Bars) -> tuple[int, int]:
    """The bars that get a feature row, `lo` to `hi` (exclusive): BarsError naming the bars when none do."""
    n = len(bars)
    lo, hi = WARMUP_BARS, n - LOOKAHEAD_BARS
    if hi <= lo:
        raise BarsError(
            f"{bars.source}: {n} bars give no feature rows: need more than {WARMUP_BARS + LOOKAHEAD_BARS} "
            f"({WARMUP_BARS} of warm-up, {LOOKAHEAD_BARS} for the targets)"
        )
    return lo, hi


def compute_features(bars: Bars, progress: Callable[[str], None] | None = None) -> FeatureTable:
    """Compute the feature table of `bars` (see the module docstring for every definition).

    `progress`, if given, is called with a short message as each stage starts. Raises
    BarsError (a ValueError, exit 2) naming the bars when there are too few for a single row.
    """
    lo, hi = feature_bars(bars)
    say = progress or (lambda _message: None)
    cols = _Columns(lo, hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        say("log returns")
        log_close = np.log(bars.close)
        _price_features(cols, bars, log_close, say)
        _bar_features(cols, bars, say)
        say("calendar")
        _calendar_features(cols, bars.timestamp)
    assert cols.all_written(), "every feature column is written exactly once"

    say("targets")
    targets = _targets(log_close, lo, hi)
    say("transpose")
    features = _transposed(cols.by_feature)
    return FeatureTable(timestamp=bars.timestamp[lo:hi].copy(), features=features, targets=targets)
