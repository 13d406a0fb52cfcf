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


def test_with_next_open_fills_a_rollover_is_financed_on_the_position_held_over_it():
    # 0.0365 a year = 1e-4 a night. Monday 2024-01-01 (New York on EST: the rollover is 22:00 UTC). The bar
    # stamped 21:59 closes at the rollover; the next bar opens at 23:00, after a break. Row 1 carries the
    # rollover, (21:59, 23:00]. A position changed at row 1's close: with close fills it is filled before the
    # rollover and pays it; with next-open fills it fills at 23:00, after it, so the OLD position pays.
    # Catches: financing the decided position under next-open fills (the old long would go free).
    ts = np.array([utc("2024-01-01T21:58"), utc("2024-01-01T21:59"), utc("2024-01-01T23:00")])
    close = execution.rows(ExecutionSettings(financing=0.0365), ts, np.zeros(3))
    next_open = execution.rows(
        ExecutionSettings(financing=0.0365, fill="next_open"), ts, np.zeros(3), np.zeros(3)
    )
    np.testing.assert_allclose(next_open.carry, [0.0, 1e-4, 0.0])
    leave = record_of([1, 0, 0], np.zeros(3), ts)  # long, then flat decided at the rollover bar
    enter = record_of([0, 1, 1], np.zeros(3), ts)  # flat, then long decided at the rollover bar
    np.testing.assert_allclose(leave.pnl(0.0, close), [0.0, 0.0, 0.0])
    np.testing.assert_allclose(enter.pnl(0.0, close), [0.0, -1e-4, 0.0])
    np.testing.assert_allclose(leave.pnl(0.0, next_open), [0.0, -1e-4, 0.0])
    np.testing.assert_allclose(enter.pnl(0.0, next_open), [0.0, 0.0, 0.0])


def test_the_rollover_is_5_pm_new_york_so_it_moves_an_hour_in_utc_with_daylight_saving():
    # New York on EDT from 2019-03-10: 17:00 there is 21:00 UTC on Monday 2019-03-11, 22:00 UTC on Friday
    # 2019-03-08. Catches: a rollover fixed at 22:00 UTC all year.
    def crossed(start: str, end: str) -> int:
        return int(execution.rollovers(np.array([utc(start), utc(end)]))[0])

    assert crossed("2019-03-08T21:59", "2019-03-08T22:00") == 1
    assert crossed("2019-03-08T20:59", "2019-03-08T21:00") == 0
    assert crossed("2019-03-11T20:59", "2019-03-11T21:00") == 1
    assert crossed("2019-03-11T21:59", "2019-03-11T22:00") == 0
    assert crossed("2019-11-01T20:59", "2019-11-01T21:00") == 1  # still EDT: back to 22:00 from 2019-11-03
    assert crossed("2019-11-04T21:59", "2019-11-04T22:00") == 1


def test_utc_offsets_change_at_the_zones_own_transition_instant():
    # New York: 02:00 EST on 2019-03-10 (07:00 UTC) becomes 03:00 EDT; 02:00 EDT on 2019-11-03 (06:00 UTC)
    # becomes 01:00 EST.
    hour = 60 * MINUTE
    ts = np.array(
        [utc(t) for t in ("2019-03-10T06:59", "2019-03-10T07:00", "2019-11-03T05:59", "2019-11-03T06:00")]
    )
    got = execution.utc_offsets(ts, "America/New_York")
    assert (got // hour).tolist() == [-5, -4, -4, -5]
    assert execution.utc_offsets(ts, "UTC").tolist() == [0, 0, 0, 0]


# A New York cash session across both 2019 changes: (UTC time, in session?). 09:30-16:00 New York is
# 14:30-21:00 UTC on EST (before 2019-03-10, from 2019-11-03) and 13:30-20:00 UTC on EDT.
NEW_YORK_2019 = [
    ("2019-03-08T14:29", False),  # Friday, EST: 09:29 there
    ("2019-03-08T14:30", True),
    ("2019-03-08T20:59", True),  # 15:59
    ("2019-03-11T13:29", False),  # Monday, EDT: 09:29 there
    ("2019-03-11T13:30", True),  # the opening moved an hour earlier in UTC
    ("2019-03-11T19:59", True),
    ("2019-03-11T20:00", False),  # 16:00: closed, an hour earlier in UTC
    ("2019-11-01T13:30", True),  # Friday, still EDT
    ("2019-11-04T13:30", False),  # Monday, EST again: 08:30 there
    ("2019-11-04T14:30", True),
    ("2019-11-04T20:59", True),
]


def test_a_session_in_new_york_time_moves_an_hour_in_utc_across_daylight_saving():
    # Catches: the session read in UTC (13:30 on Monday 2019-03-11 would be outside a 09:30 session
    # read as UTC, and one fixed UTC window cannot hold both Fridays' openings).
    ts = np.array([utc(t) for t, _ in NEW_YORK_2019])
    got = execution.in_session(ts, "09:30-16:00", "America/New_York")
    assert got.tolist() == [inside for _, inside in NEW_YORK_2019]


def test_the_session_weekdays_are_the_zones_own():
    # Sunday 2019-03-10 23:30 UTC is Monday 08:30 in Tokyo: inside a Tokyo 08:00-15:00 session; Friday
    # 2019-03-08 23:30 UTC is Saturday there: outside. Catches: the weekday taken from the UTC date.
    ts = np.array([utc("2019-03-10T23:30"), utc("2019-03-08T23:30")])
    assert execution.in_session(ts, "08:00-15:00", "Asia/Tokyo").tolist() == [True, False]


def test_the_session_zone_reaches_the_spreads():
    # 14:00 UTC: 09:00 New York on Friday 2019-03-08 (outside, ×3), 10:00 on Monday 2019-03-11 (inside).
    ts = np.array([utc("2019-03-08T14:00"), utc("2019-03-11T14:00")])
    settings = ExecutionSettings(
        spread_points=1.0,
        first_close=100.0,
        session="09:30-16:00",
        session_zone="America/New_York",
        off_session_factor=3,
    )
    np.testing.assert_allclose(execution.rows(settings, ts, np.zeros(2)).change_cost, [0.015, 0.005])


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
        ({"session": "24:00-20:00"}, "HH:MM"),
        ({"session": "13:60-20:00"}, "HH:MM"),
        ({"session": "+9:05-20:00"}, "HH:MM"),
        ({"session": "9:30-16:00"}, "HH:MM"),
        ({"session": "1_3:00-20:00"}, "HH:MM"),
        ({"session": "\u0661\u0663:30-20:00"}, "HH:MM"),
        ({"session": "13:30-13:30"}, "same minute"),
        ({"spread_points": 1.0}, "first_close"),
        ({"off_session_factor": 0.5}, "off_session_factor"),
        ({"fill": "vwap"}, "fill"),
        ({"session_zone": "Mars/Olympus_Mons"}, "session_zone"),
        ({"session_zone": "-05:00"}, "session_zone"),
        ({"session_zone": "/etc/localtime"}, "session_zone"),
    ],
)
def test_bad_execution_settings_are_config_errors_naming_the_setting(fields, problem):
    with pytest.raises(ConfigError, match=problem):
        EvalConfig(**fields)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"off_session_factor": 0.5}, "off_session_factor"),
        ({"spread_points": 1.0, "first_close": 0.0}, "first_close"),
        ({"first_close": -1.0}, "first_close"),
    ],
)
def test_the_execution_settings_refuse_bad_values_on_their_own(fields, named):
    with pytest.raises(ValueError, match=named):
        ExecutionSettings(**fields)
