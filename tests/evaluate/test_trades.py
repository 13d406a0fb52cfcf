"""Reading a run: trades with their costs split where they belong, daily and monthly tables."""

import io
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
from support.fresh_process import loaded_after

from foxhunt.evaluate import execution
from foxhunt.evaluate.evaluation import fold_record, stitch
from foxhunt.evaluate.execution import ExecutionSettings
from foxhunt.evaluate.trades import period_table, trade_table, trades_parquet

MINUTE = 60_000_000_000
T0 = int(np.datetime64("2024-01-31T23:57", "ns").astype(np.int64))
POSITIONS = np.array([0, 1, 1, -1, -1, 0, 1], dtype=float)
RETURNS = np.array([0.01, 0.02, -0.01, 0.03, -0.02, 0.01, 0.005])
TS = T0 + np.arange(7) * MINUTE


def test_trades_by_hand():
    # Long on bars 1-2: gross .02 − .01 = .01, entry .001 (bar 1) and exit .001 (bar 3): .008.
    # Short on bars 3-4: gross −.03 + .02 = −.01, entry .001 (bar 3) and exit .001 (bar 5): −.012.
    # Long on bar 6, open at the end: .005 − .001 = .004.
    # Catches: a reversal's whole cost on one trade; the exit cost dropped; the exit at the last held bar.
    got = trade_table(fold_record(0, 0, POSITIONS, TS, RETURNS), 0.001)
    np.testing.assert_allclose(got["pnl"], [0.008, -0.012, 0.004], atol=1e-15)
    np.testing.assert_allclose(got["pnl_before_costs"], [0.01, -0.01, 0.005], atol=1e-15)
    assert got["side"].tolist() == [1, -1, 1] and got["bars_held"].tolist() == [2, 2, 1]
    assert got["entry"].tolist() == TS[[1, 3, 6]].tolist() and got["exit"].tolist() == TS[[3, 5, 6]].tolist()
    assert got["closed"].tolist() == [True, True, False]
    np.testing.assert_allclose(got["return"], np.expm1([0.008, -0.012, 0.004]))


def test_the_trades_sum_to_the_records_net_pnl_under_the_execution_model():
    rng = np.random.default_rng(3)
    n = 500
    ts = T0 + np.arange(n) * 7 * MINUTE
    r = rng.normal(0, 1e-3, n)
    settings = ExecutionSettings(
        spread_points=0.5,
        first_close=4000.0,
        session="13:30-20:00",
        off_session_factor=3,
        slippage=1e-5,
        fill="next_open",
        financing=0.05,
    )
    rows = execution.rows(settings, ts, r, rng.uniform(-1e-3, 1e-3, n))
    record = fold_record(0, 0, rng.integers(-1, 2, n).astype(float), ts, r)
    got = trade_table(record, 2e-4, rows)
    assert got["pnl"].sum() == pytest.approx(record.pnl(2e-4, rows).sum(), rel=1e-12)
    assert got["pnl_before_costs"].sum() == pytest.approx(record.gross_pnl(rows).sum(), rel=1e-12)


def test_with_next_open_fills_the_trade_left_at_a_rollover_pays_its_financing():
    # 2024-01-01 (EST): bar 21:59 closes at the 22:00 UTC rollover, the next opens at 23:00. A reversal decided
    # at 21:59: with next-open fills the long is still held over the rollover (1e-4); the short fills at
    # 23:00 and pays nothing. With close fills the short pays it. Catches: financing on the new trade.
    ts = np.array(
        [
            np.datetime64(t, "ns").astype(np.int64)
            for t in ("2024-01-01T21:58", "2024-01-01T21:59", "2024-01-01T23:00")
        ]
    )
    record = fold_record(0, 0, np.array([1.0, -1.0, -1.0]), ts, np.zeros(3))
    for fill, long_pays, short_pays in (("next_open", 1e-4, 0.0), ("close", 0.0, 1e-4)):
        rows = execution.rows(ExecutionSettings(financing=0.0365, fill=fill), ts, np.zeros(3), np.zeros(3))
        np.testing.assert_allclose(
            trade_table(record, 0.0, rows)["pnl"], [-long_pays, -short_pays], atol=1e-15
        )


def test_a_position_handed_over_between_folds_is_one_trade():
    early = fold_record(0, 0, np.ones(3), TS, RETURNS)
    late = fold_record(1, 3, np.ones(4), TS, RETURNS)
    got = trade_table(stitch([early, late]), 0.001)
    assert got["bars_held"].tolist() == [7] and got["fold"].tolist() == [0]
    assert got["pnl"][0] == pytest.approx(RETURNS.sum() - 0.001)


def test_trades_parquet_has_utc_times_and_every_column():
    table = pq.read_table(
        io.BytesIO(trades_parquet(trade_table(fold_record(0, 0, POSITIONS, TS, RETURNS), 0.0)))
    )
    assert table.column_names == [
        "entry",
        "exit",
        "side",
        "bars_held",
        "pnl",
        "pnl_before_costs",
        "return",
        "closed",
        "fold",
    ]
    assert str(table.schema.field("entry").type) == "timestamp[ns, tz=UTC]"
    assert table.num_rows == 3


def test_daily_and_monthly_tables_sum_by_utc_day_and_month():
    # Bars from 2024-01-31 23:57 to 2024-02-01 00:03: three in January, four in February.
    record = fold_record(0, 0, POSITIONS, TS, RETURNS)
    pnl = record.pnl(0.0)
    daily = period_table(record, pnl, RETURNS, "D").splitlines()
    assert daily[0] == "day,bars,log_pnl,return,buy_and_hold_log_pnl,buy_and_hold_return"
    jan, feb = (line.split(",") for line in daily[1:])
    assert jan[:2] == ["2024-01-31", "3"] and feb[:2] == ["2024-02-01", "4"]
    assert float(jan[2]) == pytest.approx(pnl[:3].sum()) and float(feb[4]) == pytest.approx(RETURNS[3:].sum())
    assert float(feb[3]) == pytest.approx(math.expm1(pnl[3:].sum()))
    monthly = period_table(record, pnl, RETURNS, "M").splitlines()
    assert [line.split(",")[0] for line in monthly[1:]] == ["2024-01", "2024-02"]


def test_trades_parquet_holds_every_value_and_numpys_types():
    n = 11  # booleans pack to bits: more than one byte, not a multiple of 8
    table = {
        "entry": np.arange(n, dtype=np.int64) * 60_000_000_000,
        "exit": np.arange(n, dtype=np.int64) * 60_000_000_000 + 1,
        "side": np.where(np.arange(n) % 2 == 0, 1, -1).astype(np.int8),
        "pnl": np.linspace(-1e-3, 2e-3, n),
        "closed": np.arange(n) % 3 != 1,
        "fold": np.arange(n, dtype=np.int64) // 4,
    }
    got = pq.read_table(io.BytesIO(trades_parquet(table)))
    for name in ("side", "pnl", "closed", "fold"):
        assert got.column(name).to_pylist() == table[name].tolist(), name
    assert got.column("entry").cast("int64").to_pylist() == table["entry"].tolist()
    types = {f.name: str(f.type) for f in got.schema}
    assert types == {
        "entry": "timestamp[ns, tz=UTC]",
        "exit": "timestamp[ns, tz=UTC]",
        "side": "int8",
        "pnl": "double",
        "closed": "bool",
        "fold": "int64",
    }


def test_writing_the_trades_imports_no_pandas():
    code = (
        "import numpy as np; from foxhunt.evaluate.trades import trades_parquet; "
        "trades_parquet({'entry': np.arange(3), 'closed': np.ones(3, bool), 'pnl': np.zeros(3)})"
    )
    assert loaded_after(code, ["pandas", "pyarrow"]) == ["pyarrow"]


def test_the_daily_buy_and_hold_return_compounds_buy_and_holds_own_log_pnl():
    # January's three bars: buy-and-hold earns .01 + .02 − .01 = .02 (the model, flat on bar 0, .01).
    record = fold_record(0, 0, POSITIONS, TS, RETURNS)
    jan = period_table(record, record.pnl(0.0), RETURNS, "D").splitlines()[1].split(",")
    assert float(jan[4]) == pytest.approx(0.02) and float(jan[5]) == pytest.approx(math.expm1(0.02))


def test_a_record_late_in_the_data_pays_the_execution_costs_of_its_own_rows():
    # Monday 2024-01-01, closes 100: rows 0-1 in the 13:30-20:00 session (half a point .005), row 2 at 21:00
    # outside it (×3: .015) and before the 22:00 UTC rollover (1e-4 a night). A long on rows 2-3 pays .015
    # to enter and 1e-4 held over the rollover. Catches: the rows' costs read from row 0, not the record's.
    stamps = ("2024-01-01T14:00", "2024-01-01T14:01", "2024-01-01T21:00", "2024-01-01T22:30")
    ts = np.array([np.datetime64(t, "ns").astype(np.int64) for t in stamps])
    settings = ExecutionSettings(
        spread_points=1.0, first_close=100.0, session="13:30-20:00", off_session_factor=3, financing=0.0365
    )
    rows = execution.rows(settings, ts, np.zeros(4))
    got = trade_table(fold_record(0, 2, np.ones(2), ts, np.zeros(4)), 0.0, rows)
    np.testing.assert_allclose(got["pnl"], [-0.0151], rtol=1e-12)
    assert got["pnl_before_costs"].tolist() == [0.0]
