"""Reading a run: the stitched record as trades, daily P&L and a monthly table.

**Trades.** A trade is a run of consecutive bars holding the same non-zero position. It opens at the bar
whose close takes the position (with next-open fills, the position is filled at the next bar's open) and
ends at the bar whose close leaves it (`exit`), or at the record's end or a gap in the rows, where it is
left open (`closed` false; the accounting charges no closing cost there). Its P&L after costs is the sum
of its bars' P&L with every cost split where it belongs: a bar where the position changes from p to q
pays cost × |p − q| = cost × (|p| + |q|) with positions in {−1, 0, 1}; |p| of it is the old trade's exit,
|q| the new trade's entry. With next-open fills the gap P&L of such a bar (p × gap) is the old trade's.
Financing is the trade's whose position is held over the rollover (with next-open fills, at a change,
the old trade's: `foxhunt.data.pnl`). So the trades' P&L sums to the record's net P&L with the
bars of no trade (flat, paying nothing) left out.

**Daily and monthly.** Net log P&L of the model summed by UTC calendar day and by month, its simple
return (exp − 1), beside buy-and-hold's on the same bars.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import numpy as np

from foxhunt import out_names

if TYPE_CHECKING:
    from foxhunt.evaluate.evaluation import Record, RunEvaluation
    from foxhunt.evaluate.execution import ExecutionRows

TRADES_FILE = out_names.TRADES
DAILY_FILE = out_names.DAILY
MONTHLY_FILE = out_names.MONTHLY
TRADE_COLUMNS = (
    "entry",
    "exit",
    "side",
    "bars_held",
    "pnl",
    "pnl_before_costs",
    "return",
    "closed",
    "fold",
)


def trade_table(
    record: Record, cost_per_unit: float, execution: ExecutionRows | None = None
) -> dict[str, np.ndarray]:
    """The trades of `record` as columns (TRADE_COLUMNS): entry and exit (int64 ns UTC), side (+1 long,
    −1 short), bars held, log P&L after and before costs, simple return, closed, the fold that opened it."""
    pos, ret = record.positions, record.returns
    prev = record.previous_positions
    n = pos.size
    gap = execution.gap[record.index] if execution is not None and execution.gap is not None else np.zeros(n)
    per_unit = np.full(n, float(cost_per_unit))
    if execution is not None:
        per_unit = per_unit + execution.change_cost[record.index]
    carry = execution.carry[record.index] if execution is not None else np.zeros(n)
    changed = pos != prev
    # Next-open fills: at a change the old position is still held over the bar's rollovers (data.pnl).
    old_carries = changed if execution is not None and execution.gap is not None else np.zeros(n, bool)
    opens = (pos != 0) & changed
    trade_of_bar = np.cumsum(opens) - 1  # the latest trade opened at or before each bar
    held = pos != 0
    n_trades = int(opens.sum())
    gross = np.zeros(n_trades)
    net = np.zeros(n_trades)
    # The new position's share of each bar: gross after the fill, its entry cost, its financing.
    new_gross = np.where(changed, pos * (ret - gap), pos * ret)  # unchanged: held over the gap too
    new_cost = np.where(opens, per_unit * np.abs(pos), 0.0) + np.where(old_carries, 0.0, carry * np.abs(pos))
    np.add.at(gross, trade_of_bar[held], new_gross[held])
    np.add.at(net, trade_of_bar[held], (new_gross - new_cost)[held])
    # The old position's share of a bar where it is left: its gap P&L and its exit cost.
    leaves = changed & (prev != 0)
    old_trade = trade_of_bar[leaves] - opens[leaves]  # the trade of the bar before
    old_gross = (prev * gap)[leaves]
    np.add.at(gross, old_trade, old_gross)
    old_cost = per_unit * np.abs(prev) + np.where(old_carries, carry * np.abs(prev), 0.0)
    np.add.at(net, old_trade, old_gross - old_cost[leaves])
    first = np.flatnonzero(opens)
    bars = np.bincount(trade_of_bar[held], minlength=n_trades)
    last = first + bars - 1
    closed = np.zeros(n_trades, dtype=bool)
    exit_bar = last.copy()
    left_at = np.flatnonzero(leaves)
    closed[old_trade] = True
    exit_bar[old_trade] = left_at
    return {
        "entry": record.timestamp[first],
        "exit": record.timestamp[exit_bar],
        "side": pos[first].astype(np.int8),
        "bars_held": bars.astype(np.int64),
        "pnl": net,
        "pnl_before_costs": gross,
        "return": np.expm1(net),
        "closed": closed,
        "fold": record.fold[first],
    }


def trades_parquet(table: dict[str, np.ndarray]) -> bytes:
    """The trade table as Parquet bytes: entry and exit as UTC timestamps."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {
        name: _arrow(values, pa.timestamp("ns", tz="UTC") if name in ("entry", "exit") else None)
        for name, values in table.items()
    }
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue()


def _arrow(values: np.ndarray, arrow_type=None):
    """A null-free numpy column as an Arrow array (of `arrow_type`, default numpy's own type), built on its
    buffer: `pyarrow.array` imports pandas on its first call (0.2–0.3 s at a run's end, for nothing)."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:  # Arrow packs booleans to bits, least significant first
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, data])
    arrow_type = pa.from_numpy_dtype(values.dtype) if arrow_type is None else arrow_type
    return pa.Array.from_buffers(arrow_type, len(values), [None, pa.py_buffer(values)])


def _by_period(timestamp: np.ndarray, pnl: np.ndarray, unit: str) -> tuple[np.ndarray, np.ndarray]:
    periods = np.asarray(timestamp, dtype=np.int64).astype("datetime64[ns]").astype(f"datetime64[{unit}]")
    keys, inverse = np.unique(periods, return_inverse=True)
    return keys, np.bincount(inverse, weights=pnl, minlength=keys.size)


def period_table(record: Record, model_pnl: np.ndarray, benchmark_pnl: np.ndarray, unit: str) -> str:
    """CSV of log P&L and simple return per UTC day (`unit` "D") or month ("M"), model and buy-and-hold."""
    keys, model = _by_period(record.timestamp, model_pnl, unit)
    _, bench = _by_period(record.timestamp, benchmark_pnl, unit)
    _, bars = _by_period(record.timestamp, np.ones(model_pnl.size), unit)
    head = "day" if unit == "D" else "month"
    lines = [f"{head},bars,log_pnl,return,buy_and_hold_log_pnl,buy_and_hold_return"]
    for key, count, m, b in zip(keys, bars, model, bench, strict=True):
        lines.append(f"{key},{int(count)},{m:.10g},{np.expm1(m):.10g},{b:.10g},{np.expm1(b):.10g}")
    return "\n".join(lines) + "\n"


def run_tables(run: RunEvaluation) -> dict[str, bytes]:
    """`trades.parquet`, `daily.csv` and `monthly.csv` of the stitched model record, net of the run's costs."""
    from foxhunt.evaluate.evaluation import BUY_AND_HOLD, MODEL

    return record_tables(run.records[MODEL], run.records[BUY_AND_HOLD], run.cost_per_unit, run.execution)


def record_tables(
    record: Record, benchmark: Record, cost_per_unit: float, execution: ExecutionRows | None = None
) -> dict[str, bytes]:
    """`trades.parquet`, `daily.csv` and `monthly.csv` of a model record, beside buy-and-hold's `benchmark`
    on the same bars, net of `cost_per_unit` and the execution model's costs."""
    model = record.pnl(cost_per_unit, execution)
    bench = benchmark.pnl(cost_per_unit, execution)
    return {
        TRADES_FILE: trades_parquet(trade_table(record, cost_per_unit, execution)),
        DAILY_FILE: period_table(record, model, bench, "D").encode(),
        MONTHLY_FILE: period_table(record, model, bench, "M").encode(),
    }
