"""The execution model of a run's evaluation: what trading a record's positions costs, bar by bar.

Fixed for a run (the `eval` config section), never a searched setting. Beyond the flat cost and spread
of `Scoring` (log-return units: 1e-4 = 1 bp), per loaded row:

* **Spread in price points** (`spread_points`): an index CFD's quote. Half of it per unit of position
  change, as a log cost of half-spread / close. An fxcache holds no price level, so the closes come from
  `first_close` (the close of the first loaded bar) and the 1-bar targets: close_t = first_close ·
  exp(Σ_{s<t} r_s) (rows are consecutive bars, so the targets chain exactly).
* **Session schedule** (`session` "HH:MM-HH:MM", Monday to Friday, on the clock of `session_zone`, an
  IANA time zone, default UTC): outside it every spread (the points one and `Scoring.spread`) is
  `off_session_factor` times wider. The hours and weekdays are the instrument's local ones, so with
  `session_zone America/New_York` a 09:30-16:00 session is 14:30-21:00 UTC in winter and 13:30-20:00 UTC
  in summer: it follows New York's daylight-saving changes. A session that wraps midnight
  ("22:00-06:00") is allowed.
* **Slippage** (`slippage`, log-return units): paid per unit of position change, in every session.
* **Fills at the next bar's open** (`fill = next_open`): a position decided at bar t's close is filled
  at bar t+1's open; over the gap from t's close to t+1's open the previous position is still held:
  P&L_t = prev_t · gap_t + p_t · (r_t − gap_t), gap_t = log(open_{t+1} / close_t) = r_t + log(1 − body_{t+1})
  with body = (close − open) / close (the feature `bar_body`). The change is paid at the fill bar's
  spread. The last loaded row has no next bar: its gap is 0.
* **Overnight financing** (`financing`, a yearly rate): rate / 365 on |position| for each daily rollover,
  17:00 New York (`ROLLOVER_LOCAL`, `ROLLOVER_ZONE`: 22:00 UTC in winter, 21:00 UTC in summer), as a log
  cost. Row t carries the rollovers in (ts_t, ts_{t+1}] (timestamps are bar opens): those after bar t's
  close and no later than bar t+1's open. The position held over them is p_t with close fills and the
  previous one with next-open fills (p_t is filled at bar t+1's open, after them): `foxhunt.data.pnl`
  says which position pays, for the evaluation and the tail selection alike.

`rows(...)` turns the settings into per-row arrays once per run (`ExecutionRows`); `Record.pnl` and
`Record.gross_pnl` apply them through `foxhunt.data.pnl`.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

import numpy as np

from foxhunt.config.execution import ExecutionSettings, session_minutes
from foxhunt.data.pnl import ExecutionRows

ROLLOVER_ZONE = "America/New_York"  # the daily financing rollover: 5 pm New York, on New York's clock
ROLLOVER_LOCAL = time(17, 0)
NS_PER_SECOND = 1_000_000_000
NS_PER_MINUTE = 60 * NS_PER_SECOND
NS_PER_DAY = 1440 * NS_PER_MINUTE
SECONDS_PER_DAY = 86_400


def _offset_seconds(zone: ZoneInfo, second: int) -> int:
    """`zone`'s UTC offset at the UTC instant `second` (seconds since the epoch)."""
    offset = datetime.fromtimestamp(second, zone).utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0


def utc_offsets(timestamp: np.ndarray, zone: str) -> np.ndarray:
    """Per timestamp (ns UTC), `zone`'s UTC offset then, in ns: local time = timestamp + offset.

    The offset is read at every UTC midnight of the span; a day whose two ends differ holds one change
    (real zones change a few times a year), found to the second by bisection."""
    ts = np.asarray(timestamp, dtype=np.int64)
    if zone == "UTC" or ts.size == 0:
        return np.zeros(ts.shape, dtype=np.int64)
    tz = ZoneInfo(zone)
    midnights = [int(d) * SECONDS_PER_DAY for d in range(ts.min() // NS_PER_DAY, ts.max() // NS_PER_DAY + 2)]
    offsets = [_offset_seconds(tz, s) for s in midnights]
    changes, values = [], [offsets[0]]
    for day, (before, after) in enumerate(zip(offsets[:-1], offsets[1:], strict=True)):
        if before == after:
            continue
        low, high = midnights[day], midnights[day + 1]  # the offset is `before` at low, `after` at high
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (mid, high) if _offset_seconds(tz, mid) == before else (low, mid)
        changes.append(high * NS_PER_SECOND)
        values.append(after)
    at = np.searchsorted(np.asarray(changes, dtype=np.int64), ts, side="right")
    return np.asarray(values, dtype=np.int64)[at] * NS_PER_SECOND


def in_session(timestamp: np.ndarray, session: str, zone: str = "UTC") -> np.ndarray:
    """True for bars inside the main session: Monday to Friday, start ≤ minute of day < end, both read
    on `zone`'s clock (an IANA name: the session follows its daylight-saving changes)."""
    ts = np.asarray(timestamp, dtype=np.int64)
    bounds = session_minutes(session)
    if bounds is None:
        return np.ones(ts.shape, dtype=bool)
    start, end = bounds
    local = ts + utc_offsets(ts, zone)
    days = local // NS_PER_DAY
    minute = (local - days * NS_PER_DAY) // NS_PER_MINUTE
    weekday = (days + 3) % 7 < 5  # Monday 0 … Friday 4
    inside = (minute >= start) & (minute < end) if start < end else (minute >= start) | (minute < end)
    return weekday & inside


def rollover_instants(first: int, last: int) -> np.ndarray:
    """The daily rollovers (ns UTC), 17:00 New York every calendar day, from before `first` to after
    `last` (ns UTC)."""
    tz = ZoneInfo(ROLLOVER_ZONE)
    day = datetime.fromtimestamp(first // NS_PER_SECOND, tz).date() - timedelta(days=1)
    end = datetime.fromtimestamp(last // NS_PER_SECOND, tz).date() + timedelta(days=1)
    out = []
    while day <= end:
        out.append(int(datetime.combine(day, ROLLOVER_LOCAL, tz).timestamp()) * NS_PER_SECOND)
        day += timedelta(days=1)
    return np.asarray(out, dtype=np.int64)


def closes(first_close: float, returns: np.ndarray) -> np.ndarray:
    """Every loaded row's close from the first one and the 1-bar log returns: c_t = c_0 · exp(Σ_{s<t} r_s)."""
    r = np.asarray(returns, dtype=np.float64)
    return first_close * np.exp(np.concatenate([[0.0], np.cumsum(r[:-1])]))


def rollovers(timestamp: np.ndarray) -> np.ndarray:
    """Per row t: the daily rollovers in (ts_t, ts_{t+1}] (0 for the last row, whose next bar is unknown)."""
    ts = np.asarray(timestamp, dtype=np.int64)
    out = np.zeros(ts.shape, dtype=np.int64)
    if ts.size < 2:
        return out
    instants = rollover_instants(int(ts[0]), int(ts[-1]))
    passed = np.searchsorted(instants, ts, side="right")  # rollovers at or before each timestamp
    out[:-1] = passed[1:] - passed[:-1]
    return out


def rows(
    settings: ExecutionSettings,
    timestamp: np.ndarray,
    returns: np.ndarray,
    bar_body: np.ndarray | None = None,
    spread: float = 0.0,
) -> ExecutionRows | None:
    """The per-row arrays of `settings` over the whole loaded data; None when they change nothing.

    `returns` is the 1-bar target column, `bar_body` the feature (close − open) / close (needed for
    next-open fills), `spread` the run's flat spread in log units (widened outside the session too).
    """
    if settings.is_plain:
        return None
    ts = np.asarray(timestamp, dtype=np.int64)
    r = np.asarray(returns, dtype=np.float64)
    half = np.zeros(ts.size)
    if settings.spread_points > 0:
        half += 0.5 * settings.spread_points / closes(settings.first_close, r)
    widen = np.where(
        in_session(ts, settings.session, settings.session_zone), 1.0, settings.off_session_factor
    )
    # The flat spread is paid by Scoring.cost_per_unit already: only its widening is added here.
    change = half * widen + 0.5 * spread * (widen - 1.0) + settings.slippage
    gap = None
    if settings.fill == "next_open":
        if bar_body is None:
            raise ValueError("fills at the next open need the bar_body feature")
        body = np.asarray(bar_body, dtype=np.float64)
        gap = np.zeros(ts.size)
        gap[:-1] = r[:-1] + np.log1p(-body[1:])
        change = np.append(change[1:], change[-1])  # paid at the fill bar's spread
    carry = rollovers(ts) * (settings.financing / 365.0)
    return ExecutionRows(change_cost=change, carry=carry, gap=gap)
