"""The execution model of a run's evaluation: what trading a record's positions costs, bar by bar.

Fixed for a run (the `eval` config section), never a searched setting. Beyond the flat cost and spread
of `Scoring` (log-return units: 1e-4 = 1 bp), per loaded row:

* **Spread in price points** (`spread_points`): an index CFD's quote. Half of it per unit of position
  change, as a log cost of half-spread / close. An fxcache holds no price level, so the closes come from
  `first_close` (the close of the first loaded bar) and the 1-bar targets: close_t = first_close ·
  exp(Σ_{s<t} r_s) (rows are consecutive bars, so the targets chain exactly).
* **Session schedule** (`session` "HH:MM-HH:MM", UTC, Monday to Friday): outside it every spread (the
  points one and `Scoring.spread`) is `off_session_factor` times wider. A session that wraps midnight
  ("22:00-06:00") is allowed; no daylight-saving shift is applied.
* **Slippage** (`slippage`, log-return units): paid per unit of position change, in every session.
* **Fills at the next bar's open** (`fill = next_open`): a position decided at bar t's close is filled
  at bar t+1's open; over the gap from t's close to t+1's open the previous position is still held:
  P&L_t = prev_t · gap_t + p_t · (r_t − gap_t), gap_t = log(open_{t+1} / close_t) = r_t + log(1 − body_{t+1})
  with body = (close − open) / close (the feature `bar_body`). The change is paid at the fill bar's
  spread. The last loaded row has no next bar: its gap is 0.
* **Overnight financing** (`financing`, a yearly rate): |position| · rate / 365 for each daily rollover
  (`ROLLOVER_UTC`) that falls in (t, t+1] while the position is held, as a log cost.

`rows(...)` turns the settings into per-row arrays once per run (`ExecutionRows`); `Record.pnl` and
`Record.gross_pnl` apply them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from foxhunt.config.execution import ExecutionSettings, session_minutes

ROLLOVER_UTC = 22 * 60  # minutes after midnight UTC of the daily financing rollover (5 pm New York)
NS_PER_MINUTE = 60_000_000_000
NS_PER_DAY = 1440 * NS_PER_MINUTE


def in_session(timestamp: np.ndarray, session: str) -> np.ndarray:
    """True for bars inside the main session: Monday to Friday, start ≤ minute of day < end (UTC)."""
    ts = np.asarray(timestamp, dtype=np.int64)
    bounds = session_minutes(session)
    if bounds is None:
        return np.ones(ts.shape, dtype=bool)
    start, end = bounds
    days = ts // NS_PER_DAY
    minute = (ts - days * NS_PER_DAY) // NS_PER_MINUTE
    weekday = (days + 3) % 7 < 5  # Monday 0 … Friday 4
    inside = (minute >= start) & (minute < end) if start < end else (minute >= start) | (minute < end)
    return weekday & inside


def closes(first_close: float, returns: np.ndarray) -> np.ndarray:
    """Every loaded row's close from the first one and the 1-bar log returns: c_t = c_0 · exp(Σ_{s<t} r_s)."""
    r = np.asarray(returns, dtype=np.float64)
    return first_close * np.exp(np.concatenate([[0.0], np.cumsum(r[:-1])]))


def rollovers(timestamp: np.ndarray) -> np.ndarray:
    """Per row t: the daily rollovers in (t, t+1] (0 for the last row, whose next bar is unknown)."""
    ts = np.asarray(timestamp, dtype=np.int64)
    shifted = ts - ROLLOVER_UTC * NS_PER_MINUTE  # a rollover is a midnight of the shifted clock
    day = np.floor_divide(shifted, NS_PER_DAY)  # rollovers in (t, t+1]: one at t+1 itself counts
    out = np.zeros(ts.shape, dtype=np.int64)
    out[:-1] = day[1:] - day[:-1]
    return out


@dataclass(frozen=True, eq=False)
class ExecutionRows:
    """Per loaded row, what the execution model adds (log-return units). Compared and hashed by identity:
    one object per run, so a `Scoring` that carries it is still a cheap dictionary key."""

    change_cost: np.ndarray  # per unit of position change, beyond Scoring.cost_per_unit
    carry: np.ndarray  # per unit of |position| held over the bar (financing)
    gap: np.ndarray | None  # log(open_{t+1} / close_t) when fills are at the next bar's open


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
    widen = np.where(in_session(ts, settings.session), 1.0, settings.off_session_factor)
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
