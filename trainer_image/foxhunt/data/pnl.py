"""The P&L of held positions under the run's execution model: ONE definition, for the evaluation (numpy
arrays on the host, `evaluate.records.Record.pnl`) and for the training tail's selection score (torch
tensors on the trainer's device, `train.policy.policy_pnl`). The functions use only arithmetic and
`abs`, so the same lines run on either kind of array. It sits in the data stage, below both readers
(imports point downstream), and imports nothing: the evaluation stays free of torch.

Per bar t (position p_t decided at bar t's close, q_t the position held before it, r_t the 1-bar log
return from close_t to close_{t+1}):

* close fills: P&L_t = p_t · r_t − c_t · |p_t − q_t| − f_t · |p_t|
* next-open fills: P&L_t = q_t · g_t + p_t · (r_t − g_t) − c_t · |p_t − q_t| − f_t · |q_t|,
  g_t = log(open_{t+1} / close_t): q_t is held from close_t to open_{t+1}, p_t from there on.

c_t is the flat cost per unit of change plus the execution model's per-row change cost, f_t the
financing of the rollovers in (ts_t, ts_{t+1}] (`evaluate.execution.rollovers`).

Which position pays f_t. Bars are stamped by their open: bar t trades in [ts_t, ts_t + one bar), and its
close is the last trade before ts_t + one bar. A rollover instant R lies on the bars' grid (17:00 New
York, a whole minute) and finances the position held through the last trade before R. A rollover in
(ts_t, ts_{t+1}] comes after bar t's close (ts_t + one bar ≤ R) and no later than bar t+1's opening
trade (a trade stamped R is after the rollover). Between those two trades

* close fills hold p_t (filled at close_t): p_t pays;
* next-open fills still hold q_t (p_t is filled at open_{t+1}): q_t pays, and p_t from the next
  rollover on.

So a position changed at the close that ends on a rollover, or just before a break that holds one (an
index CFD's daily break), pays the old position's financing with next-open fills and the new one's
with close fills.

The execution rows are the per-row arrays of `evaluate.execution.rows` (None: the flat cost alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Array = Any  # a numpy array or a torch tensor: the formulas below are written for both


@dataclass(frozen=True, eq=False)
class ExecutionRows:
    """Per loaded row, what the execution model adds (log-return units). Compared and hashed by identity:
    one object per run, so a `Scoring` that carries it is still a cheap dictionary key."""

    change_cost: Array  # per unit of position change, beyond Scoring.cost_per_unit
    carry: Array  # per unit of |position| held over the rollovers in (t, t+1] (financing)
    gap: Array | None  # log(open_{t+1} / close_t) when fills are at the next bar's open

    def take(self, rows: Array) -> ExecutionRows:
        """The arrays at `rows` (an index array or a slice): one entry per bar of a record."""
        return ExecutionRows(
            change_cost=self.change_cost[rows],
            carry=self.carry[rows],
            gap=None if self.gap is None else self.gap[rows],
        )


def gross_pnl(positions: Array, previous: Array, returns: Array, gap: Array | None = None) -> Array:
    """Per-bar log P&L before costs; with next-open fills (`gap` given) the previous position holds over
    the gap from the decision close to the next open."""
    if gap is None:
        return positions * returns
    return previous * gap + positions * (returns - gap)


def held_over_rollover(positions: Array, previous: Array, bars: ExecutionRows) -> Array:
    """The position that pays bar t's financing: p_t with close fills, q_t (still held until the next
    bar's open) with next-open fills."""
    return positions if bars.gap is None else previous


def net_pnl(
    positions: Array,
    previous: Array,
    returns: Array,
    cost_per_unit: float,
    bars: ExecutionRows | None = None,
    changes: Array | None = None,
) -> Array:
    """Per-bar log P&L after `cost_per_unit` per unit of position change and, with `bars` (the execution
    rows at the record's bars, `ExecutionRows.take`), its per-bar change costs, fills and financing;
    `changes`: |positions − previous|, when already computed."""
    changes = abs(positions - previous) if changes is None else changes
    if bars is None:
        return positions * returns - cost_per_unit * changes
    gross = gross_pnl(positions, previous, returns, bars.gap)
    per_unit = cost_per_unit + bars.change_cost
    return gross - per_unit * changes - bars.carry * abs(held_over_rollover(positions, previous, bars))
