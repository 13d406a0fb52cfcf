"""Out-of-sample records: the bars a policy traded, in time order, per fold and stitched.

A **record** is a run of bars in time order: the position held at each bar (−1, 0, 1, held from the
bar's close to the next one's) and the bar's 1-bar forward log return (target column 0). A bar's
gross P&L is position × return; net P&L subtracts `config.trading_cost(cost, spread)` per unit of
|Δposition|; a segment after a gap is entered from flat, adjacent segments pay the actual handover. Stitching and annualisation
follow the conventions in `foxhunt.evaluate.evaluation`.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from foxhunt.config import NS_PER_YEAR
from foxhunt.data.pnl import ExecutionRows, gross_pnl, net_pnl

_YEAR_NS = NS_PER_YEAR
# Whether `host_arrays` stacks CPU tensors too. On the CPU nothing moves, so it reads each tensor where it
# lies: a stack would copy it once more, on threads a busy machine stalls. bench/host_syncs.py turns it on
# to count the copies a GPU makes; tests turn it on to run the GPU's path on the CPU.
STACK_ON_CPU = False


def host_array(values, dtype=np.float64) -> np.ndarray:
    """A numpy copy of a numpy array or a torch tensor on any device (one transfer)."""
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=dtype)


def host_arrays(values: Sequence, dtype=np.float64) -> list[np.ndarray]:
    """`host_array` of each value; the torch tensors of one device, shape and dtype stacked and copied at
    once (on a GPU one transfer and one wait for the device, not one per tensor; see `STACK_ON_CPU`)."""
    out: list = [None] * len(values)
    groups: dict[tuple, list[int]] = {}
    for i, value in enumerate(values):
        if hasattr(value, "detach") and (STACK_ON_CPU or value.device.type != "cpu"):
            groups.setdefault((value.device, tuple(value.shape), value.dtype), []).append(i)
        else:
            out[i] = host_array(value, dtype)
    for members in groups.values():
        import torch  # a tensor was given: torch is loaded

        stacked = host_array(torch.stack([values[i].detach() for i in members]), dtype=None)
        for i, row in zip(members, stacked, strict=True):
            out[i] = np.asarray(row, dtype=dtype)
    return out


@dataclass(frozen=True)
class Record:
    """Bars traded out of sample, in time order; all arrays have one entry per bar."""

    index: np.ndarray  # int64: the bar's row in the loaded arrays
    timestamp: np.ndarray  # int64 ns UTC
    positions: np.ndarray  # float64 in {−1, 0, 1}
    returns: np.ndarray  # float64: the bar's 1-bar forward log return
    fold: np.ndarray  # int64: the fold whose model traded the bar
    bars_per_year: float  # the instrument's, over the whole loaded data (`bars_per_year`)

    def __len__(self) -> int:
        return len(self.index)

    @property
    def segment_starts(self) -> np.ndarray:
        """True at the first bar of each fold's segment: there the position is entered from flat."""
        starts = np.ones(len(self), dtype=bool)
        starts[1:] = self.fold[1:] != self.fold[:-1]
        return starts

    @cached_property
    def previous_positions(self) -> np.ndarray:
        """The position held before each bar: flat at the record's first bar and after a gap, else the
        bar before's (a segment on the row after the previous one's last takes over its position). Computed
        once per record (the changes and both P&L series read it) and read-only."""
        previous = np.empty_like(self.positions)
        previous[1:] = self.positions[:-1]
        from_flat = self.segment_starts.copy()
        from_flat[1:] &= self.index[1:] != self.index[:-1] + 1
        previous[from_flat] = 0.0
        previous.setflags(write=False)
        return previous

    @cached_property
    def position_changes(self) -> np.ndarray:
        """|Δposition| per bar from `previous_positions` (the handover pays the actual change); computed once
        per record (the net P&L and both turnovers read it) and read-only."""
        changes = np.abs(self.positions - self.previous_positions)
        changes.setflags(write=False)
        return changes

    def gross_pnl(self, execution: ExecutionRows | None = None) -> np.ndarray:
        """Per-bar log P&L before costs; with next-open fills the previous position holds over the gap
        (`data.pnl.gross_pnl`)."""
        if execution is None or execution.gap is None:
            return self.positions * self.returns
        return gross_pnl(self.positions, self.previous_positions, self.returns, execution.gap[self.index])

    def pnl(self, cost_per_unit: float, execution: ExecutionRows | None = None) -> np.ndarray:
        """Per-bar log P&L after `cost_per_unit` per unit of position change and the execution model's
        per-bar costs (session spreads, slippage, financing on the position held over each rollover) when
        given (`data.pnl.net_pnl`, the tail selection's definition too)."""
        bars = None if execution is None else execution.take(self.index)
        return net_pnl(
            self.positions, self.previous_positions, self.returns, cost_per_unit, bars, self.position_changes
        )

    def periods_per_year(self) -> float:
        """The instrument's bars per year over the whole data (the same for every window of it)."""
        return self.bars_per_year


def bars_per_year(timestamp: np.ndarray) -> float:
    """Bars per year of the whole loaded data: (rows − 1) / span in years; 1 when no time passes."""
    if len(timestamp) < 2:
        return 1.0
    span_ns = float(int(timestamp[-1]) - int(timestamp[0]))
    return (len(timestamp) - 1) / (span_ns / _YEAR_NS) if span_ns > 0 else 1.0


def fold_record(fold: int, start: int, positions, timestamp: np.ndarray, returns) -> Record:
    """The record of one fold's window: `positions` held from row `start` on; `timestamp` and `returns`
    are the whole loaded columns (the annualisation is the whole data's)."""
    held = host_array(positions)
    window = host_array(returns[start : start + held.size])
    return _window_record(fold, start, held, timestamp, window, bars_per_year(timestamp))


def window_records(
    fold: int, start: int, positions: Mapping[str, Any], timestamp: np.ndarray, returns
) -> dict[str, Record]:
    """`fold_record` of each policy's positions (by name) over one window; what a device holds, the positions
    and the window's returns, copied to the host at once (`host_arrays`)."""
    lengths = {len(p) for p in positions.values()}
    if len(lengths) != 1:  # windows of several lengths: each its own returns
        return {name: fold_record(fold, start, p, timestamp, returns) for name, p in positions.items()}
    n = lengths.pop()
    *held, window = host_arrays([*positions.values(), returns[start : start + n]])
    per_year = bars_per_year(timestamp)
    index, stamps, folds = _window_rows(fold, start, n, timestamp)  # shared: records only read them
    return {
        name: Record(
            index=index, timestamp=stamps, positions=h, returns=window, fold=folds, bars_per_year=per_year
        )
        for name, h in zip(positions, held, strict=True)
    }


def _window_record(
    fold: int, start: int, held: np.ndarray, timestamp: np.ndarray, returns: np.ndarray, per_year: float
) -> Record:
    index, stamps, folds = _window_rows(fold, start, held.size, timestamp)
    return Record(
        index=index, timestamp=stamps, positions=held, returns=returns, fold=folds, bars_per_year=per_year
    )


def _window_rows(fold: int, start: int, n: int, timestamp: np.ndarray) -> tuple[np.ndarray, ...]:
    """A window's row indices, timestamps and fold column, read-only."""
    rows = (
        np.arange(start, start + n, dtype=np.int64),
        np.asarray(timestamp[start : start + n], dtype=np.int64),
        np.full(n, fold, dtype=np.int64),
    )
    for column in rows:
        column.setflags(write=False)
    return rows


def stitch(records: Sequence[Record]) -> Record:
    """One record in time order from the folds' records; a bar goes to the latest-started window holding it."""
    if not records:
        raise ValueError("no records to stitch")
    return _taken(records, _owners(records))


def stitch_policies(by_policy: Mapping[str, Sequence[Record]]) -> dict[str, Record]:
    """`stitch` of each policy's fold records. A policy whose windows lie on the first policy's very rows,
    timestamps, returns and folds (`window_records` shares them) shares its stitched columns: the sort and
    the takes over every bar are done once, and only the positions per policy."""
    names = list(by_policy)
    reference = by_policy[names[0]]
    if not reference:
        raise ValueError("no records to stitch")
    keep = _owners(reference)
    first = _taken(reference, keep)
    out = {names[0]: first}
    for name in names[1:]:
        records = by_policy[name]
        if _same_windows(records, reference):
            out[name] = replace(first, positions=np.concatenate([r.positions for r in records])[keep])
        else:
            out[name] = stitch(records)
    return out


def _taken(records: Sequence[Record], keep: np.ndarray) -> Record:
    """The stitched record: each column of the windows' concatenation at the entries `keep` (`_owners`)."""

    def take(field: str) -> np.ndarray:
        return np.concatenate([getattr(r, field) for r in records])[keep]

    return Record(
        bars_per_year=records[0].bars_per_year,
        index=take("index"),
        timestamp=take("timestamp"),
        positions=take("positions"),
        returns=take("returns"),
        fold=take("fold"),
    )


def _owners(records: Sequence[Record]) -> np.ndarray:
    """For each stitched bar, its entry in the windows' concatenation: sorted by row, then window start,
    then fold, the last entry of each row (the latest-started window's) owns it."""
    rows = np.concatenate([r.index for r in records])
    window_start = np.concatenate([np.full(len(r), r.index[0] if len(r) else 0) for r in records])
    fold = np.concatenate([r.fold for r in records])
    order = np.lexsort((fold, window_start, rows))
    return order[np.append(rows[order][1:] != rows[order][:-1], True)]


def _same_windows(records: Sequence[Record], reference: Sequence[Record]) -> bool:
    """Whether `records` lie on the very arrays of `reference`'s windows (rows, timestamps, returns, folds)."""
    fields = ("index", "timestamp", "returns", "fold")
    return len(records) == len(reference) and all(
        getattr(r, f) is getattr(ref, f) for r, ref in zip(records, reference, strict=True) for f in fields
    )


def record_key(record: Record) -> tuple:
    """What identifies a record within one dataset: its length, its rows, a digest of its positions, and
    its segments (where each fold's share starts, and the fold).

    A record's rows increase strictly (a fold's window, or `stitch`'s sorted unique rows), so a record of
    consecutive rows is named by its first and last row; only a record with gaps digests its rows (1.5 MB
    at a 185,000-bar window: most of the key's cost)."""
    digest = hashlib.blake2b(digest_size=16)
    n = len(record)
    consecutive = n == 0 or int(record.index[-1]) - int(record.index[0]) == n - 1
    if consecutive:
        rows: tuple = (int(record.index[0]), int(record.index[-1])) if n else ()
    else:
        digest.update(np.ascontiguousarray(record.index).data)
        rows = ("digest",)
    digest.update(record.positions.astype(np.int8).data)  # positions are −1, 0 or 1
    starts = np.flatnonzero(record.segment_starts)
    return n, rows, digest.digest(), tuple(starts.tolist()), tuple(record.fold[starts].tolist())


# ---- a fold's positions on disk (fold_N/positions.npy) ----------------------------------------------
def positions_bytes(positions) -> bytes:
    """A fold's validation positions as an int8 `.npy` file (one byte per bar)."""
    buf = io.BytesIO()
    np.save(buf, host_array(positions).astype(np.int8), allow_pickle=False)
    return buf.getvalue()


def positions_from_bytes(data: bytes) -> np.ndarray:
    """Positions (float64, −1/0/1) from what `positions_bytes` wrote."""
    return np.load(io.BytesIO(data), allow_pickle=False).astype(np.float64)
