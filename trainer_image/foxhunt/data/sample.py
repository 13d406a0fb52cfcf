"""The planted signal of the generated sample bars: returns, and what of them a model could know.

Each 1-bar log return is

    r[t] = ar_coef · r[t − 1] + drift[t] + jump[t] + sigma · ε[t],   ε ~ N(0, 1) i.i.d.

* News: each bar is a news bar with probability `news_rate`, with a random direction s = ±1.
  A news bar moves by `jump[t] = s · news_jump · sigma` (not predictable: it is the news) and
  carries `NEWS_VOLUME_FACTOR` times the usual volume; the next `news_bars` bars drift by
  `s · news_drift` each (overlapping news add up). The drift is the planted signal.
* `ar_coef` adds a next-bar autocorrelation (0 by default; the old sample data used 0.3).
* `signal=False` (`foxhunt pipeline --sample-signal off`) sets the drift and the autocorrelation to
  zero and keeps everything else (the same noise, news bars, jumps and volume): bars that look the
  same to the features with nothing predictable in them, for "does no harm" runs.

What the 42 features see of the drift: a news bar's 10σ jump dominates the realised volatility over
60 bars (its square is 100/60 of the window's usual sum of squares) for exactly the 60 bars that the
drift lasts, and its sign dominates the 15-, 30- and 60-bar returns over the same bars. So the drift
is visible through generic features (returns and realised volatility over standard windows), not
only to a model told when news happened. Earlier settings (a 4σ jump, 30 bars of 0.2 bp) hid it: a
linear fit of the drift on the features explained 6% of its variance.

With the defaults (sigma 4 bp per minute, a news bar every 250 minutes on average, 0.3 bp per bar
for 60 bars), on the default `foxhunt pipeline` windows (3 folds of 20 days, 1 bp per unit of
position change) the generator oracle, which holds sign(expected next return), earns an annualised
Sharpe of about 15 after costs, and the feature oracle (`foxhunt.evaluate.supervised`: the best of ridge and
an MLP on the features, fitted on each training slice) about 8; buy-and-hold is noise around 0 and
the sign of the last return loses heavily (`bench/data.py oracle` measures them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SAMPLE_SIGMA = 4e-4  # per-minute noise volatility, log-return units (4 bp)
SAMPLE_AR_COEF = 0.0
SAMPLE_NEWS_RATE = 1.0 / 250.0  # news bars per bar
SAMPLE_NEWS_DRIFT = 3e-5  # drift per bar after a news bar (0.3 bp)
NEWS_BARS = (
    60  # bars of drift after a news bar: the longest target horizon, and the 60-bar volatility's window
)
NEWS_JUMP_SIGMAS = 10.0  # a news bar's own move, in units of sigma
NEWS_VOLUME_FACTOR = float(np.exp(2.0))  # a news bar's volume relative to an ordinary bar's


@dataclass(frozen=True)
class PlantedReturns:
    """1-bar log returns of the sample bars and the part of each that was knowable one bar ahead."""

    returns: np.ndarray  # r[t]: log(close t / close t − 1); the first bar's is over its open
    expected: np.ndarray  # E[r[t] | bars up to t − 1]: ar_coef · r[t − 1] + drift[t]
    news: np.ndarray  # bool: the news bars


def planted_returns(
    n_bars: int,
    rng: np.random.Generator,
    news_rng: np.random.Generator,
    *,
    ar_coef: float = SAMPLE_AR_COEF,
    sigma: float = SAMPLE_SIGMA,
    news_rate: float = SAMPLE_NEWS_RATE,
    news_drift: float = SAMPLE_NEWS_DRIFT,
    news_bars: int = NEWS_BARS,
    news_jump: float = NEWS_JUMP_SIGMAS,
    signal: bool = True,
) -> PlantedReturns:
    """Draw the returns: the noise from `rng` (first draw), the news from `news_rng`; with
    `signal=False` no drift and no autocorrelation (the same draws otherwise)."""
    from scipy.signal import lfilter

    if not signal:
        ar_coef, news_drift = 0.0, 0.0

    noise = rng.standard_normal(n_bars) * sigma
    news = news_rng.random(n_bars) < news_rate
    direction = np.where(news_rng.random(n_bars) < 0.5, -1.0, 1.0) * news
    # drift[t] sums the directions of the news bars t − NEWS_BARS .. t − 1.
    drift = np.zeros(n_bars)
    drift[1:] = np.convolve(direction, np.ones(news_bars))[: n_bars - 1] * news_drift
    returns = lfilter([1.0], [1.0, -ar_coef], noise + drift + direction * news_jump * sigma)
    expected = drift.copy()
    expected[1:] += ar_coef * returns[:-1]
    return PlantedReturns(returns=returns, expected=expected, news=news)


def sample_returns(n_bars: int, seed: int = 0, **params) -> PlantedReturns:
    """The planted returns exactly as `generate_sample_bars(n_bars, seed, **params)` draws them."""
    return planted_returns(n_bars, np.random.default_rng(seed), np.random.default_rng((seed, 1)), **params)


def fx_minutes(n_bars: int, start: str = "2024-01-01T00:00:00") -> np.ndarray:
    """`n_bars` minute timestamps (int64 ns UTC) from `start`, weekdays only: spot FX's 24x5 calendar."""
    t0 = np.datetime64(start, "m")
    minutes = np.arange(int(n_bars * 1.5) + 10_080, dtype=np.int64)  # 5/7 of it are weekdays: enough
    stamps = t0 + minutes.astype("timedelta64[m]")
    weekday = (stamps.astype("datetime64[D]").astype(np.int64) + 3) % 7  # 0 = Monday
    return stamps[weekday < 5][:n_bars].astype("datetime64[ns]").astype(np.int64)


# An exchange's yearly closures (month-day), observed on whichever weekday they fall: enough to put holes
# in a calendar that an FX calendar does not have.
EXCHANGE_HOLIDAYS = ("01-01", "05-01", "12-24", "12-25", "12-26", "12-31")


def session_minutes(
    first_ns: int,
    last_ns: int,
    *,
    open_utc: str = "08:00",
    close_utc: str = "16:30",
    holidays: tuple[str, ...] = EXCHANGE_HOLIDAYS,
    extra_closed: tuple[str, ...] = (),
) -> np.ndarray:
    """Minute timestamps (int64 ns UTC) in `[first_ns, last_ns]` of an exchange's sessions.

    Weekdays from `open_utc` (inclusive) to `close_utc` (exclusive), less the yearly `holidays`
    ("MM-DD") and the dates in `extra_closed` ("YYYY-MM-DD"): one session a day, nights, weekends and
    holidays closed, unlike FX's 24x5.
    """
    open_m, close_m = (int(t[:2]) * 60 + int(t[3:]) for t in (open_utc, close_utc))
    if not 0 <= open_m < close_m <= 1440:
        raise ValueError(f"session {open_utc}-{close_utc}: expected open before close within one UTC day")
    first_day = np.datetime64(int(first_ns), "ns").astype("datetime64[D]")
    last_day = np.datetime64(int(last_ns), "ns").astype("datetime64[D]")
    days = np.arange(first_day, last_day + 1)
    weekday = (days.astype(np.int64) + 3) % 7
    month_day = np.array([str(d)[5:] for d in days])
    closed = np.isin(month_day, holidays) | np.isin(days, np.array(extra_closed, dtype="datetime64[D]"))
    days = days[(weekday < 5) & ~closed]
    day_ns = days.astype("datetime64[ns]").astype(np.int64)
    offsets = (open_m + np.arange(close_m - open_m, dtype=np.int64)) * 60_000_000_000
    stamps = (day_ns[:, None] + offsets[None, :]).reshape(-1)
    return stamps[(stamps >= first_ns) & (stamps <= last_ns)]
