"""Walk-forward fold ranges: index arithmetic over the loaded timestamps, never copies of rows.

A fold is found from calendar boundaries measured from the first timestamp. Days convert to whole
nanoseconds as ``round(days * NS_PER_DAY)``. For fold candidate ``k``:

* rolling:   training window ``[t0 + k*step, t0 + k*step + train)``
* expanding: training window ``[t0, t0 + k*step + train)``
* both:      validation window ``[training window end, training window end + val)``

Boundaries become indices with ``numpy.searchsorted(timestamps, boundary, side="left")`` only, so a
fold is five integers into arrays that already live on the device. The last ``purge_bars`` rows of
the training window are dropped, which leaves ``train_end + purge_bars == val_start``: with the
default purge (the longest target horizon) no training row's forward-return target reaches a
validation bar.

Candidates are tried while the validation window *starts* at or before the last timestamp. The last
one may therefore run past the end of the data; it is kept when its truncated validation window still
holds ``min_val_rows`` rows, because dropping it would leave the newest data never validated. Any
candidate with fewer than ``min_train_rows`` training rows (after the purge) or ``min_val_rows``
validation rows is skipped; later candidates are still tried, since a gap in the data (a holiday,
an outage) can starve one fold and not the next. Kept folds are numbered 0, 1, ... and at most
``max_folds`` are kept when it is positive.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from foxhunt.config import FoldConfig
from foxhunt.data.bars import NS_PER_DAY
from foxhunt.errors import BadInput


@dataclass(frozen=True)
class FoldRange:
    """One fold as end-exclusive row indices into the loaded arrays."""

    fold: int
    train_start: int
    train_end: int
    val_start: int
    val_end: int
    difficulty_score: float

    @property
    def train_rows(self) -> int:
        return self.train_end - self.train_start

    @property
    def val_rows(self) -> int:
        return self.val_end - self.val_start

    @property
    def train_slice(self) -> slice:
        return slice(self.train_start, self.train_end)

    @property
    def val_slice(self) -> slice:
        return slice(self.val_start, self.val_end)

    def to_dict(self) -> dict:
        """The fields as plain Python numbers, ready for JSON."""
        return asdict(self)


def days_to_ns(days: float) -> int:
    """A length in days as whole nanoseconds, the unit of the timestamps."""
    return round(days * NS_PER_DAY)


def as_timestamps(timestamps: np.ndarray) -> np.ndarray:
    """`timestamps` as a 1-D int64-ns array, checked strictly increasing (BadInput otherwise)."""
    ts = np.asarray(timestamps)
    if ts.dtype.kind == "M":
        ts = ts.astype("datetime64[ns]").view(np.int64)
    if ts.ndim != 1 or ts.dtype.kind not in "iu":
        raise BadInput(f"timestamps must be a 1-D integer array of ns, got shape {ts.shape} {ts.dtype}")
    if len(ts) > 1 and not bool(np.all(ts[1:] > ts[:-1])):
        bad = int(np.argmin(ts[1:] > ts[:-1])) + 1
        raise BadInput(f"timestamps must be strictly increasing; row {bad} is not after row {bad - 1}")
    return ts


def _realized_vol(returns: np.ndarray) -> float:
    """Per-bar realized volatility: the root mean square of 1-bar log returns (no demeaning)."""
    if len(returns) == 0:
        return 0.0
    # One pass over the view, no temporary array of squares; float64 accumulation, because a float32
    # dot over a million minute returns drifts in the sixth digit.
    return math.sqrt(float(np.einsum("i,i->", returns, returns, dtype=np.float64)) / len(returns))


def difficulty(close_returns: np.ndarray | None, train: slice, val: slice) -> float:
    """Validation over training realized volatility of 1-bar returns; 1.0 without returns or train vol.

    Above 1 the fold validates in a rougher market than it trained on, below 1 a calmer one.
    """
    if close_returns is None:
        return 1.0
    train_vol = _realized_vol(close_returns[train])
    if train_vol == 0.0:
        return 1.0
    return _realized_vol(close_returns[val]) / train_vol


@dataclass(frozen=True)
class FoldWindows:
    """The candidate folds as calendar windows (int64 ns, end-exclusive), before any row is counted.

    Candidate ``k`` trains on ``[train_start[k], train_end[k])`` and validates on
    ``[train_end[k], val_end[k])``; which candidates become folds depends on the rows inside them.
    """

    train_start: np.ndarray
    train_end: np.ndarray
    val_end: np.ndarray

    def __len__(self) -> int:
        return len(self.train_end)


def fold_windows(t0: int, t_last: int, config: FoldConfig) -> FoldWindows:
    """The candidate windows of data spanning ``[t0, t_last]`` (ns), by the rules of the module docstring.

    A validation window longer than the whole span is BadInput. The same windows serve one instrument
    (its first and last bar) and a universe (the first and last bar of any instrument).
    """
    train_ns, val_ns, step_ns = (
        days_to_ns(d) for d in (config.train_days, config.val_days, config.step_days)
    )
    # Candidates whose validation window starts at or before the last bar; Python ints, so huge
    # lengths cannot overflow int64 before they are compared.
    n_candidates = (t_last - t0 - train_ns) // step_ns + 1 if t_last - t0 >= train_ns else 0
    if val_ns > t_last - t0 + 1:
        # A validation window longer than all the data: said, not cut silently at the data's end.
        raise BadInput(
            f"val_days {config.val_days:g} is longer than the data, which spans "
            f"{(t_last - t0) / NS_PER_DAY:.2f} days ({np.datetime64(t0, 'ns')} to {np.datetime64(t_last, 'ns')})"
        )
    # Lengths beyond the data span only matter when no (or one) candidate exists; capping them there
    # changes no boundary that is used and keeps the int64 arithmetic below in range.
    train_ns, step_ns = min(train_ns, t_last - t0 + 1), min(step_ns, t_last - t0 + 1)
    offsets = np.arange(n_candidates, dtype=np.int64) * step_ns
    train_window_end = t0 + offsets + train_ns
    train_window_start = t0 + offsets if config.mode == "rolling" else np.full(n_candidates, t0, np.int64)
    # No bar lies past t_last, so capping the validation length there changes no index but keeps
    # a huge val_days from overflowing int64.
    val_window_end = train_window_end + min(val_ns, t_last + 1 - t0)
    return FoldWindows(train_window_start, train_window_end, val_window_end)


def _checked_returns(close_returns: np.ndarray | None, n: int) -> np.ndarray | None:
    """`close_returns` as an array of one value per timestamp, or None."""
    if close_returns is None:
        return None
    close_returns = np.asarray(close_returns)
    if close_returns.shape != (n,):
        raise ValueError(f"close_returns must have shape ({n},) like timestamps, got {close_returns.shape}")
    return close_returns


def candidate_rows(ts: np.ndarray, windows: FoldWindows, config: FoldConfig) -> tuple[np.ndarray, ...]:
    """Every candidate window's (train_start, train_end, val_start, val_end) rows in `ts`, as index arrays,
    and whether it fits: at least `min_train_rows` training rows after the purge and `min_val_rows`
    validation rows (one instrument's folds, and each instrument's part in a universe's)."""
    train_start = np.searchsorted(ts, windows.train_start, side="left")
    val_start = np.searchsorted(ts, windows.train_end, side="left")
    val_end = np.searchsorted(ts, windows.val_end, side="left")
    train_end = val_start - config.purge_bars
    fits = (train_end - train_start >= config.min_train_rows) & (val_end - val_start >= config.min_val_rows)
    return train_start, train_end, val_start, val_end, fits


def _no_fold_fits(ts: np.ndarray, config: FoldConfig) -> BadInput:
    """The error that says no fold fits, with the data's span and what one fold needs."""
    t0, t_last = int(ts[0]), int(ts[-1])
    span_days = (t_last - t0) / NS_PER_DAY
    return BadInput(
        f"no fold fits: the data span {span_days:.2f} days ({len(ts)} rows, "
        f"{np.datetime64(t0, 'ns')} to {np.datetime64(t_last, 'ns')}); each fold needs "
        f"{config.train_days:g} training days holding at least {config.min_train_rows} rows after "
        f"a purge of {config.purge_bars} bars, then validation ({config.val_days:g} days) holding at "
        f"least {config.min_val_rows} rows"
    )


def generate_walk_forward_indices(
    timestamps: np.ndarray,
    config: FoldConfig,
    *,
    close_returns: np.ndarray | None = None,
) -> list[FoldRange]:
    """Walk-forward folds over `timestamps` (int64 ns, strictly increasing) as row-index ranges.

    `close_returns`, when given, is the 1-bar log-return series aligned with `timestamps` (e.g. the
    first target column) and sets each fold's `difficulty_score`. The rules are in the module
    docstring. The config checked itself when it was built (FoldConfig); timestamps that are not
    strictly increasing, or data in which no fold fits, are BadInput (a ValueError).
    """
    ts = as_timestamps(timestamps)
    n = len(ts)
    close_returns = _checked_returns(close_returns, n)
    needed_rows = config.min_train_rows + config.purge_bars + config.min_val_rows
    if n < needed_rows:
        raise BadInput(
            f"too few timestamps: {n} rows, but one fold needs at least {needed_rows} "
            f"(min_train_rows {config.min_train_rows} + purge_bars {config.purge_bars} "
            f"+ min_val_rows {config.min_val_rows})"
        )
    windows = fold_windows(int(ts[0]), int(ts[-1]), config)
    train_start, train_end, val_start, val_end, fits = candidate_rows(ts, windows, config)
    kept = np.flatnonzero(fits)
    if config.max_folds > 0:
        kept = kept[: config.max_folds]
    if len(kept) == 0:
        raise _no_fold_fits(ts, config)

    folds = []
    for number, k in enumerate(kept.tolist()):
        train = slice(int(train_start[k]), int(train_end[k]))
        val = slice(int(val_start[k]), int(val_end[k]))
        folds.append(
            FoldRange(
                fold=number,
                train_start=train.start,
                train_end=train.stop,
                val_start=val.start,
                val_end=val.stop,
                difficulty_score=difficulty(close_returns, train, val),
            )
        )
    return folds
