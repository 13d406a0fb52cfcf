"""The rolling windows and TA-Lib-style indicators `features` is built from, in float64.

Each returns a full-length array, NaN before its first defined bar (as TA-Lib returns them); the
conventions and the values defined where a formula would divide by zero are listed in
`foxhunt.data.features`' docstring.
"""

from __future__ import annotations

import numpy as np

BOLLINGER_PERIOD, BOLLINGER_DEVIATIONS = 20, 2.0
STOCH_K_PERIOD, STOCH_D_PERIOD = 14, 3

_CUMSUM_CHUNK = 16_384  # rows per cumulative-sum chunk; bounds the sums' magnitude, hence their rounding


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
