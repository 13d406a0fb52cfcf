"""Several instruments in one run: the flat layout, folds cut by calendar date, per-instrument norm stats.

The instruments' arrays are concatenated in one array each (timestamps, features, targets), instrument
``i`` holding rows ``[offsets[i], offsets[i + 1])`` (`UniverseIndex`). A universe fold is one pair of
calendar windows, the windows `foxhunt.data.folds.fold_windows` gives for the span from the first bar
of any instrument to the last bar of any. Inside those windows each instrument's rows are found exactly
as one instrument's are (binary search, the purge in that instrument's bars, the minimum rows), so an
instrument's fold is an ordinary `FoldRange` in its own rows. An instrument without `min_train_rows`
training rows or `min_val_rows` validation rows in a window (a holiday, a later listing, an outage) takes
no part in that fold; a fold is kept while at least one instrument takes part.

A transition is a row ``t`` and the next state at ``t + 1``. Row ``t`` starts a valid transition only
when ``t + 1`` lies in the same instrument and the same window: the last row of each instrument's range
starts none, so no transition reads the next state across a boundary between instruments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from foxhunt.config import NS_PER_DAY, FoldConfig
from foxhunt.data.folds import (
    FoldRange,
    FoldWindows,
    as_timestamps,
    candidate_rows,
    difficulty,
    fold_windows,
)
from foxhunt.errors import BadInput

# A feature whose training rows barely vary divides by 1, as one instrument's norm stats do
# (train/device_data.py): centred at 0, not blown up.
MIN_STD = 1e-8


@dataclass(frozen=True)
class UniverseIndex:
    """Where each instrument's rows lie in the concatenated arrays: ``[offsets[i], offsets[i + 1])``."""

    names: tuple[str, ...]
    offsets: np.ndarray  # (K + 1,) int64, offsets[0] == 0, offsets[K] == all rows

    def __len__(self) -> int:
        return len(self.names)

    @property
    def n_rows(self) -> int:
        """Rows of all instruments together."""
        return int(self.offsets[-1])

    def rows(self, instrument: int) -> slice:
        """Instrument `instrument`'s rows in the concatenated arrays."""
        return slice(int(self.offsets[instrument]), int(self.offsets[instrument + 1]))


def universe_index(names: Sequence[str], lengths: Sequence[int]) -> UniverseIndex:
    """The layout of instruments `names` with `lengths` rows, concatenated in this order."""
    if len(names) != len(lengths):
        raise ValueError(f"{len(names)} names but {len(lengths)} lengths")
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise BadInput(f"instrument {name!r} given twice (instruments {seen[name]} and {i})")
        seen[name] = i
    if any(n < 0 for n in lengths):
        raise ValueError(f"negative row count in {list(lengths)}")
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lengths, dtype=np.int64), out=offsets[1:])
    return UniverseIndex(tuple(names), offsets)


def instrument_ids(index: UniverseIndex) -> np.ndarray:
    """Each row's instrument (int32, one per row of the concatenated arrays)."""
    return np.repeat(np.arange(len(index), dtype=np.int32), np.diff(index.offsets))


@dataclass(frozen=True)
class UniverseFold:
    """One fold of a universe: its calendar windows and each instrument's rows in them.

    `ranges[i]` is instrument ``i``'s fold in its own rows (`fold` numbered like this fold), or None
    when the instrument takes no part in it.
    """

    fold: int
    train_window: tuple[int, int]  # ns, end-exclusive
    val_window: tuple[int, int]  # ns, end-exclusive
    ranges: tuple[FoldRange | None, ...]

    @property
    def members(self) -> tuple[int, ...]:
        """The instruments that take part."""
        return tuple(i for i, r in enumerate(self.ranges) if r is not None)


def _checked(timestamps: Sequence[np.ndarray], names: Sequence[str]) -> list[np.ndarray]:
    checked = []
    for name, ts in zip(names, timestamps, strict=True):
        try:
            checked.append(as_timestamps(ts))
        except BadInput as exc:
            raise BadInput(f"instrument {name}: {exc}") from exc
    return checked


def universe_folds(
    timestamps: Sequence[np.ndarray],
    config: FoldConfig,
    *,
    names: Sequence[str] | None = None,
    close_returns: Sequence[np.ndarray | None] | None = None,
) -> list[UniverseFold]:
    """Walk-forward folds cut by calendar date across instruments with `timestamps` (int64 ns each).

    The windows and rules are `generate_walk_forward_indices`'s over the universe's whole span; the
    module docstring says who takes part. `close_returns[i]` sets instrument ``i``'s difficulty
    scores. No bars at all, or no fold in which any instrument fits, is BadInput.
    """
    names = [f"instrument {i}" for i in range(len(timestamps))] if names is None else list(names)
    series = _checked(timestamps, names)
    returns = list(close_returns) if close_returns is not None else [None] * len(series)
    present = [ts for ts in series if len(ts)]
    if not present:
        raise BadInput(f"no bars in any of the {len(series)} instruments")
    t0, t_last = min(int(ts[0]) for ts in present), max(int(ts[-1]) for ts in present)
    windows = fold_windows(t0, t_last, config)
    rows = [candidate_rows(ts, windows, config) for ts in series]
    kept = np.flatnonzero(np.any([r[4] for r in rows], axis=0)) if rows else np.array([], np.int64)
    if config.max_folds > 0:
        kept = kept[: config.max_folds]
    if len(kept) == 0:
        raise BadInput(
            f"no fold fits in any instrument: the universe spans {(t_last - t0) / NS_PER_DAY:.2f} days; each "
            f"fold needs {config.train_days:g} training days holding at least {config.min_train_rows} rows "
            f"of one instrument after a purge of {config.purge_bars} bars, then {config.val_days:g} "
            f"validation days holding at least {config.min_val_rows}"
        )
    return [_fold(number, k, windows, rows, returns) for number, k in enumerate(kept.tolist())]


def _fold(
    number: int,
    k: int,
    windows: FoldWindows,
    rows: list[tuple[np.ndarray, ...]],
    returns: Sequence[np.ndarray | None],
) -> UniverseFold:
    """Candidate `k` as fold `number`: each instrument's FoldRange, or None where it does not fit."""
    ranges: list[FoldRange | None] = []
    for (train_start, train_end, val_start, val_end, fits), r in zip(rows, returns, strict=True):
        if not fits[k]:
            ranges.append(None)
            continue
        train = slice(int(train_start[k]), int(train_end[k]))
        val = slice(int(val_start[k]), int(val_end[k]))
        score = difficulty(None if r is None else np.asarray(r), train, val)
        ranges.append(FoldRange(number, train.start, train.stop, val.start, val.stop, score))
    train_window = (int(windows.train_start[k]), int(windows.train_end[k]))
    val_window = (int(windows.train_end[k]), int(windows.val_end[k]))
    return UniverseFold(number, train_window, val_window, tuple(ranges))


def instruments_in_no_fold(folds: Sequence[UniverseFold], names: Sequence[str]) -> list[str]:
    """The instruments that take part in none of `folds` (a run goes on without them, and says so)."""
    used = {i for fold in folds for i in fold.members}
    return [name for i, name in enumerate(names) if i not in used]


@dataclass(frozen=True)
class Spans:
    """Ranges of rows in the concatenated arrays, one per instrument taking part, end-exclusive."""

    instrument: np.ndarray  # (m,) int64
    start: np.ndarray  # (m,) int64
    end: np.ndarray  # (m,) int64

    @property
    def rows(self) -> int:
        """Rows in all the spans."""
        return int(np.sum(self.end - self.start))


def fold_spans(index: UniverseIndex, fold: UniverseFold, part: str = "train") -> Spans:
    """A fold's training (`part="train"`) or validation (`"val"`) rows as spans of the concatenated arrays."""
    if part not in ("train", "val"):
        raise ValueError(f"part {part!r}: expected train or val")
    if len(fold.ranges) != len(index):
        raise ValueError(f"fold {fold.fold} has {len(fold.ranges)} instruments, the index {len(index)}")
    members = np.array(fold.members, dtype=np.int64)
    local = np.array(
        [
            (r.train_start, r.train_end) if part == "train" else (r.val_start, r.val_end)
            for r in fold.ranges
            if r
        ],
        dtype=np.int64,
    ).reshape(-1, 2)
    base = index.offsets[members]
    return Spans(members, base + local[:, 0], base + local[:, 1])


def transition_rows(spans: Spans) -> np.ndarray:
    """Rows ``t`` (int64, increasing) whose next state ``t + 1`` lies in the same span: each span's last
    row starts no transition, so none crosses from one instrument (or window) to another."""
    if len(spans.start) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(
        [
            np.arange(s, e - 1, dtype=np.int64)
            for s, e in zip(spans.start.tolist(), spans.end.tolist(), strict=True)
        ]
    )


def transition_mask(n_rows: int, spans: Spans) -> np.ndarray:
    """A bool per row of the concatenated arrays: True where a valid transition starts (`transition_rows`)."""
    mask = np.zeros(n_rows, dtype=bool)
    mask[transition_rows(spans)] = True
    return mask


def universe_norm_stats(
    features: np.ndarray, index: UniverseIndex, fold: UniverseFold
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and std (population, float32, shape (K, F)) of each instrument's features over its training
    rows in `fold`; std below `MIN_STD` is 1. Instruments that take no part get mean 0 and std 1."""
    if features.ndim != 2 or len(features) != index.n_rows:
        raise ValueError(f"features shape {features.shape}, the index has {index.n_rows} rows")
    mean = np.zeros((len(index), features.shape[1]), dtype=np.float64)
    std = np.ones_like(mean)
    spans = fold_spans(index, fold, "train")
    for i, s, e in zip(spans.instrument.tolist(), spans.start.tolist(), spans.end.tolist(), strict=True):
        # float64 accumulation: a float32 mean over a million rows drifts in the sixth digit.
        rows = features[s:e].astype(np.float64)
        mean[i] = rows.mean(axis=0)
        std[i] = rows.std(axis=0)
    std = np.where(std > MIN_STD, std, 1.0)
    return mean.astype(np.float32), std.astype(np.float32)


def return_correlations(
    timestamps: Sequence[np.ndarray], returns: Sequence[np.ndarray], before_ns: int
) -> np.ndarray:
    """(K, K) Pearson correlations of the instruments' 1-bar returns on the minutes they share before
    `before_ns` (a pair with fewer than 3 shared finite bars, or a constant one: 0); ones on the diagonal."""
    k = len(timestamps)
    out = np.eye(k)
    cut = [np.asarray(t, dtype=np.int64) < before_ns for t in timestamps]
    for i in range(k):
        for j in range(i + 1, k):
            _, a, b = np.intersect1d(timestamps[i][cut[i]], timestamps[j][cut[j]], return_indices=True)
            x = np.asarray(returns[i], dtype=np.float64)[cut[i]][a]
            y = np.asarray(returns[j], dtype=np.float64)[cut[j]][b]
            finite = np.isfinite(x) & np.isfinite(y)
            x, y = x[finite], y[finite]
            if len(x) >= 3 and x.std() > 0 and y.std() > 0:
                out[i, j] = out[j, i] = float(np.corrcoef(x, y)[0, 1])
    return out
