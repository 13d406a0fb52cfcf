"""The execution model: session spreads in points, slippage, next-open fills and financing, by hand."""

import math

import numpy as np
import pytest

from foxhunt.config import EvalConfig
from foxhunt.errors import ConfigError
from foxhunt.evaluate import execution
from foxhunt.evaluate.evaluation import Record, Scoring, fold_record, score
from foxhunt.evaluate.execution import ExecutionSettings

MINUTE = 60_000_000_000


def utc(text: str) -> int:
    return int(np.datetime64(text, "ns").astype(np.int64))


# 2024-01-01 is a Monday.
MON_IN = utc("2024-01-01T14:00")  # inside 13:30-20:00
MON_OUT = utc("2024-01-01T21:00")
SAT = utc("2024-01-06T14:00")  # inside the hours, but a Saturday


def record_of(positions, returns, timestamp) -> Record:
    return fold_record(0, 0, np.asarray(positions, float), np.asarray(timestamp), np.asarray(returns, float))


def test_a_points_spread_costs_half_of_it_over_the_close_and_widens_outside_the_session():
    # Closes all 100 (zero returns): half of 1 point = 0.005 in session, × 3 outside (Monday 21:00,
    # Saturday). Positions 1, −1, 0 from flat change 1, 2, 1: costs .005, .03, .015.
    # Catches: the full spread per change; a session that ignores the weekday; widening not applied.
    ts = np.array([MON_IN, MON_OUT, SAT])
    settings = ExecutionSettings(
        spread_points=1.0, first_close=100.0, session="13:30-20:00", off_session_factor=3
    )
    rows = execution.rows(settings, ts, np.zeros(3))
    np.testing.assert_allclose(rows.change_cost, [0.005, 0.015, 0.015])
    pnl = record_of([1, -1, 0], np.zeros(3), ts).pnl(0.0, rows)
    np.testing.assert_allclose(pnl, [-0.005, -0.03, -0.015])


def test_the_flat_spread_widens_outside_the_session_too():
    # Scoring's spread 2e-4 pays 1e-4 a unit; outside the session ×3 adds 0.5 × 2e-4 × 2 = 2e-4 a unit.
    ts = np.array([MON_IN, MON_OUT])
    rows = execution.rows(
        ExecutionSettings(session="13:30-20:00", off_session_factor=3), ts, np.zeros(2), spread=2e-4
    )
    np.testing.assert_allclose(rows.change_cost, [0.0, 2e-4])
    pnl = record_of([1, 0], np.zeros(2), ts).pnl(Scoring(cost=0.0, spread=2e-4).cost_per_unit, rows)
    np.testing.assert_allclose(pnl, [-1e-4, -3e-4])


def test_points_turn_into_returns_at_each_bars_close():
    # close 100, then 100 · 1.1 = 110: half of 2 points is 1/100 then 1/110.
    rows = execution.rows(
        ExecutionSettings(spread_points=2.0, first_close=100.0), np.array([0, MINUTE]), [math.log(1.1), 0]
    )
    np.testing.assert_allclose(rows.change_cost, [0.01, 1 / 110])


def test_slippage_is_paid_per_unit_of_change_in_every_session():
    ts = np.array([MON_IN, MON_OUT, SAT])
    rows = execution.rows(ExecutionSettings(slippage=5e-5), ts, np.zeros(3))
    np.testing.assert_allclose(record_of([1, -1, -1], np.zeros(3), ts).pnl(0.0, rows), [-5e-5, -1e-4, 0.0])


def test_a_next_open_fill_holds_the_previous_position_over_the_gap():
    # Closes 100, 102, 100 and opens 101 (bar 1), 101 (bar 2): r0 = ln(102/100), r1 = ln(100/102);
    # body_t = (close − open) / close. Long from bar 0: filled at bar 1's open, so bar 0 earns
    # ln(102/101) only; bar 1 holds long through the gap ln(101/102) and keeps long: ln(100/102).
    # Catches: filling at the decision close (ln 1.02); a gap from the wrong bar's body.
    r = np.array([math.log(1.02), math.log(100 / 102), 0.0])
    body = np.array([0.0, (102 - 101) / 102, (100 - 101) / 100])
    ts = np.arange(3) * MINUTE
    rows = execution.rows(ExecutionSettings(fill="next_open"), ts, r, body)
    np.testing.assert_allclose(rows.gap[:2], [math.log(1.01), math.log(101 / 102)])
    rec = fold_record(0, 0, np.array([1.0, 1.0]), ts, r)
    np.testing.assert_allclose(rec.gross_pnl(rows), [math.log(102 / 101), math.log(100 / 102)])
    # A reversal at bar 1: long over the gap, short after the open: ln(101/102) − ln(100/101).
    rev = fold_record(0, 0, np.array([1.0, -1.0]), ts, r)
    assert rev.gross_pnl(rows)[1] == pytest.approx(math.log(101 / 102) - math.log(100 / 101))


def test_a_next_open_fill_pays_the_fill_bars_spread():
    ts = np.array([utc("2024-01-01T19:59"), utc("2024-01-01T20:00")])
    settings = ExecutionSettings(
        spread_points=1.0, first_close=100.0, session="13:30-20:00", off_session_factor=2, fill="next_open"
    )
    rows = execution.rows(settings, ts, np.zeros(2), np.zeros(2))
    assert rows.change_cost[0] == pytest.approx(0.01)  # decided in session, filled at 20:00 outside it


def test_financing_is_charged_per_rollover_held():
    # 0.0365 a year = 1e-4 a night. Rows: 21:59 → 22:00 crosses one rollover; Friday 21:59 → Monday
    # 00:00 crosses three (Friday, Saturday, Sunday 22:00); the last row has no next bar.
    ts = np.array(
        [utc("2024-01-01T21:59"), utc("2024-01-01T22:00"), utc("2024-01-05T21:59"), utc("2024-01-08T00:00")]
    )
    rows = execution.rows(ExecutionSettings(financing=0.0365), np.array([ts[0], ts[1]]), np.zeros(2))
    np.testing.assert_allclose(rows.carry, [1e-4, 0.0])
    assert execution.rollovers(np.array([ts[2], ts[3]])).tolist() == [3, 0]
    assert execution.rollovers(np.array([ts[1], ts[1] + MINUTE])).tolist() == [0, 0]  # 22:00 → 22:01: none
    short = record_of([-1, -1], np.zeros(2), ts[:2]).pnl(0.0, rows)
    np.testing.assert_allclose(short, [-1e-4, 0.0])  # |position|: a short pays as a long does


def test_the_session_trades_monday_to_friday_and_widens_on_saturday_and_sunday():
    # One bar at 14:00 UTC on each day of the week of Monday 2024-01-01, inside the hours "08:00-20:00"
    # (inside them on any clock within six hours of UTC). Closes 100: half a point is 0.005, ×3 outside.
    # Catches: the weekday rule shifted by a day (Sunday to Thursday, or Tuesday to Saturday, trading).
    week = np.array([utc(f"2024-01-0{day}T14:00") for day in range(1, 8)])
    settings = ExecutionSettings(
        spread_points=1.0, first_close=100.0, session="08:00-20:00", off_session_factor=3
    )
    rows = execution.rows(settings, week, np.zeros(7))
    np.testing.assert_allclose(rows.change_cost, [0.005] * 5 + [0.015] * 2)


def test_a_session_that_wraps_midnight():
    ts = np.array([utc("2024-01-02T23:00"), utc("2024-01-02T05:59"), utc("2024-01-02T06:00")])
    assert execution.in_session(ts, "22:00-06:00").tolist() == [True, True, False]


def test_plain_settings_add_nothing_and_gross_stays_before_costs():
    assert execution.rows(ExecutionSettings(session="13:30-20:00"), np.array([MON_IN]), np.zeros(1)) is None
    ts = np.array([MON_IN, MON_OUT])
    rows = execution.rows(ExecutionSettings(slippage=1e-3), ts, np.array([1e-3, 1e-3]))
    got = score(record_of([1, 1], [1e-3, 1e-3], ts), Scoring(cost=0.0, resamples=0, execution=rows))
    assert got.gross.log_return == pytest.approx(2e-3) and got.net.log_return == pytest.approx(1e-3)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"session": "25:00-20:00"}, "HH:MM"),
        ({"session": "13:30-13:30"}, "same minute"),
        ({"spread_points": 1.0}, "first_close"),
        ({"off_session_factor": 0.5}, "off_session_factor"),
        ({"fill": "vwap"}, "fill"),
    ],
)
def test_bad_execution_settings_are_config_errors_naming_the_setting(fields, problem):
    with pytest.raises(ConfigError, match=problem):
        EvalConfig(**fields)
