"""The fxcache(s) on the device: uploaded once per run through pinned staging, read by every fold.

A universe of K instruments is their arrays concatenated (instrument ``i`` at rows ``[offsets[i],
offsets[i + 1])``, `foxhunt.data.universe.UniverseIndex`) with a per-row instrument id; one instrument
is K = 1. A fold is learnt as a set of spans, one per instrument taking part (`FoldWindow`): a device
tensor of the transition start rows (each span's last row starts none, so no next state is read across
instruments) through which the learning step's uniform draw is mapped, and (K, F) norm stats, each
instrument's over its own learning rows. With K = 1 the row tensor is ``arange(train_start, learn_end - 1)``
and the stats broadcast as one (F,) row: the same integers and the same float operations as a single
range, so the figures are bit for bit those of one range.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from foxhunt.config import DQNConfig
from foxhunt.data.folds import FoldRange
from foxhunt.data.pnl import ExecutionRows
from foxhunt.data.universe import UniverseIndex, instrument_ids, universe_index

# Rows per batched forward pass in collection and evaluation: bounds activation memory, and on a
# GPU a larger chunk means fewer launches.
_CHUNK_ROWS = {"cpu": 1 << 18, "cuda": 1 << 20}


def resolve_device(name: str = "auto") -> torch.device:
    """`auto` → CUDA when present, else CPU; `cuda` without a GPU is a ValueError."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name != "cpu" and not name.startswith("cuda"):
        raise ValueError(f"--device {name}: expected auto, cpu or cuda")
    if name != "cpu" and not torch.cuda.is_available():
        raise ValueError(f"--device {name}: no CUDA device is available")
    return torch.device(name)


def synchronize(device: torch.device) -> None:
    """Wait for queued device work, so wall-clock phase timings are honest."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def chunk_rows(device: torch.device) -> int:
    """Rows per batched forward pass over a range of bars on `device`."""
    return _CHUNK_ROWS.get(device.type, _CHUNK_ROWS["cuda"])


ONE_INSTRUMENT = "instrument"  # the name of a run's only instrument where none is given


@dataclass
class DeviceData:
    """The whole fxcache (or a universe's, concatenated) on the device, uploaded once per run; folds are
    index ranges (spans) into it. `index` says where each instrument's rows lie, `instrument` is each
    row's instrument (int32, on the device; all zeros for one instrument)."""

    features: torch.Tensor  # (n, 42) float32
    targets: torch.Tensor  # (n, 4) float32
    timestamp: np.ndarray  # (n,) int64 ns, stays on the host (fold boundaries, annualization)
    uploaded_bytes: int = 0
    index: UniverseIndex | None = None  # None: one instrument over every row
    instrument: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.index is None:
            self.index = universe_index((ONE_INSTRUMENT,), (self.features.shape[0],))
        if self.index.n_rows != self.features.shape[0]:
            raise ValueError(
                f"the index holds {self.index.n_rows} rows, the features {self.features.shape[0]}"
            )
        if self.instrument is None and len(self.index) == 1:  # on the device: no host copy for one
            self.instrument = torch.zeros(self.index.n_rows, dtype=torch.int32, device=self.features.device)
        elif self.instrument is None:
            self.instrument = torch.from_numpy(instrument_ids(self.index)).to(self.features.device)

    @property
    def instruments(self) -> int:
        """K, the instruments loaded (1 for an ordinary run)."""
        return len(self.universe)

    @property
    def universe(self) -> UniverseIndex:
        """Where each instrument's rows lie (never None after construction)."""
        assert self.index is not None  # set by __post_init__
        return self.index


def to_device(
    features: np.ndarray,
    targets: np.ndarray,
    timestamp: np.ndarray,
    device: torch.device,
    index: UniverseIndex | None = None,
) -> DeviceData:
    """Put the arrays on the device once: zero-copy on CPU, pinned staging + async copies on CUDA."""
    if device.type == "cpu":
        with warnings.catch_warnings():
            # A read-only memory map is fine: nothing writes to features or targets.
            warnings.simplefilter("ignore", UserWarning)
            feats = torch.from_numpy(features)
            targs = torch.from_numpy(targets)
        uploaded = 0
    else:
        feats = _upload(features, device)
        targs = _upload(targets, device)
        uploaded = features.nbytes + targets.nbytes
    synchronize(device)
    return DeviceData(feats, targs, timestamp, uploaded, index)


def universe_to_device(
    names: list[str], arrays: list[tuple[np.ndarray, np.ndarray, np.ndarray]], device: torch.device
) -> DeviceData:
    """Instruments `names` with (features, targets, timestamp) `arrays` on the device once, concatenated
    in this order: on CUDA each uploaded into its slice of one device array (no host concatenation); on
    the CPU concatenated once on the host. One instrument is `to_device`'s upload exactly."""
    index = universe_index(names, [len(a[2]) for a in arrays])
    if len(arrays) == 1:
        return to_device(*arrays[0], device, index)
    timestamp = np.concatenate([a[2] for a in arrays])
    if device.type == "cpu":
        feats = torch.from_numpy(np.concatenate([a[0] for a in arrays]))
        targs = torch.from_numpy(np.concatenate([a[1] for a in arrays]))
        return DeviceData(feats, targs, timestamp, 0, index)
    parts, staging = [], _Staging.new((64 << 20) // 4)
    for column in (0, 1):
        out = torch.empty((index.n_rows, arrays[0][column].shape[1]), dtype=torch.float32, device=device)
        for i, a in enumerate(arrays):
            _upload(a[column], device, out=out[index.rows(i)], staging=staging)
        parts.append(out)
    synchronize(device)
    uploaded = sum(a[0].nbytes + a[1].nbytes for a in arrays)
    return DeviceData(parts[0], parts[1], timestamp, uploaded, index)


def execution_on_device(rows: ExecutionRows | None, device: torch.device) -> ExecutionRows | None:
    """The evaluation's execution rows (host arrays over the whole loaded data) on `device`, in float64,
    uploaded once per run like the fxcache: 16 bytes a row (24 with next-open fills)."""
    if rows is None:
        return None

    def put(values) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(values, dtype=np.float64)).to(device)

    return ExecutionRows(
        change_cost=put(rows.change_cost),
        carry=put(rows.carry),
        gap=None if rows.gap is None else put(rows.gap),
    )


@dataclass
class _Staging:
    """Two pinned host buffers and the events of the copies that last read them, reused by every upload
    of a load (pinning memory costs milliseconds per buffer: once per load, not once per array)."""

    buffers: list[torch.Tensor]
    done: list

    @classmethod
    def new(cls, chunk: int) -> _Staging:
        buffers = [torch.empty(chunk, dtype=torch.float32, pin_memory=True) for _ in range(2)]
        return cls(buffers, [torch.cuda.Event(), torch.cuda.Event()])


def _upload(
    array: np.ndarray,
    device: torch.device,
    chunk_bytes: int = 64 << 20,
    out: torch.Tensor | None = None,
    staging: _Staging | None = None,
) -> torch.Tensor:
    """Copy a host array to the device through two pinned staging buffers (copy and DMA overlap), into
    `out` (a contiguous device slice of the array's shape) when given, through `staging` when given."""
    if out is None:
        out = torch.empty(array.shape, dtype=torch.float32, device=device)
    flat_src = array.reshape(-1)
    flat_dst = out.view(-1)
    chunk = max(1, chunk_bytes // array.itemsize)
    stage = staging if staging is not None else _Staging.new(chunk)
    chunk = min(chunk, stage.buffers[0].numel())
    stream = torch.cuda.current_stream(device)
    for i, lo in enumerate(range(0, flat_src.size, chunk)):
        hi = min(lo + chunk, flat_src.size)
        buf, ev = stage.buffers[i % 2], stage.done[i % 2]
        ev.synchronize()  # the DMA that last read this buffer has finished
        buf[: hi - lo].numpy()[:] = flat_src[lo:hi]
        flat_dst[lo:hi].copy_(buf[: hi - lo], non_blocking=True)
        ev.record(stream)
    return out


@dataclass(frozen=True)
class SpanPart:
    """One instrument's part of a fold: its `FoldRange` in the loaded arrays' rows and the end of the rows
    learnt from (`learn_end`: the training slice's end, or its head's when a tail is held back)."""

    instrument: int
    fold_range: FoldRange
    learn_end: int

    @property
    def learn_rows(self) -> int:
        """Rows collection and the learning step read in this instrument."""
        return self.learn_end - self.fold_range.train_start


class FoldWindow:
    """The fold a trainer works on, in fixed device buffers a captured step reads, refilled in place.

    `rows[:n_valid]` are the fold's transition start rows (each instrument's learning rows but its last,
    span after span), `left[i]` the transitions from index i to its span's end (the most bars a held
    action may run: never into another instrument), `means`/`stds` (K, F) each instrument's norm stats
    over its learning rows. The host keeps the fold's `parts` (one `SpanPart` per instrument taking part);
    `fold`, `learn_end`, `mean` and `std` are the FOCUSED part's (`focus`): what validation, the tail
    score and the diagnostics read, one instrument at a time. One instrument: one part, always focused.
    """

    def __init__(self, data: DeviceData, capacity: int) -> None:
        device, n_features = data.features.device, data.features.shape[1]
        self.data, self.capacity = data, capacity  # capacity: the replay's rows (the largest fold's)
        self.instruments = data.instruments
        self.means = torch.zeros(self.instruments, n_features, device=device)
        self.stds = torch.ones(self.instruments, n_features, device=device)
        self.rows = torch.zeros(max(1, capacity), dtype=torch.long, device=device)
        self.left = torch.ones(max(1, capacity), dtype=torch.long, device=device)
        self.n_valid = torch.ones((), dtype=torch.long, device=device)
        self.parts: tuple[SpanPart, ...] = ()
        self.focused = 0  # index into `parts`

    @property
    def fold_range(self) -> FoldRange | None:
        """The focused instrument's fold range, None before a fold is set."""
        return self.parts[self.focused].fold_range if self.parts else None

    @property
    def fold(self) -> FoldRange:
        """The fold worked on (the focused instrument's range; a RuntimeError before `set_fold_range`)."""
        if not self.parts:
            raise RuntimeError("no fold: call set_fold_range first")
        return self.parts[self.focused].fold_range

    @property
    def learn_end(self) -> int:
        """End of the focused instrument's rows learnt from: its training slice's, or its head's (selection)."""
        return self.parts[self.focused].learn_end if self.parts else 0

    @property
    def mean(self) -> torch.Tensor:
        """The focused instrument's norm-stat means (F,): a view of `means`, written in place."""
        return self.means[self.parts[self.focused].instrument if self.parts else 0]

    @property
    def std(self) -> torch.Tensor:
        """The focused instrument's norm-stat standard deviations (F,): a view of `stds`."""
        return self.stds[self.parts[self.focused].instrument if self.parts else 0]

    def focus(self, instrument: int) -> None:
        """Point `fold`, `learn_end`, `mean` and `std` at `instrument`'s part (a ValueError when it takes none)."""
        for i, part in enumerate(self.parts):
            if part.instrument == instrument:
                self.focused = i
                return
        raise ValueError(f"instrument {instrument} takes no part in this fold")

    @property
    def members(self) -> tuple[int, ...]:
        """The instruments taking part in the fold, in span order."""
        return tuple(p.instrument for p in self.parts)

    def set_fold_range(self, fold_range: FoldRange, learn_end: int | None = None) -> None:
        """Point at a one-instrument fold: indices only, nothing is copied. `learn_end` (default: the training
        slice's end) ends the rows collection and the learning step read; the rest of the slice is held back."""
        self.set_parts([SpanPart(0, fold_range, fold_range.train_end if learn_end is None else learn_end)])

    def set_parts(self, parts: list[SpanPart]) -> None:
        """Point at a fold made of `parts` (one per instrument taking part, rows of the loaded arrays):
        the transition rows and span lengths refilled in place; the first part focused."""
        if not parts:
            raise ValueError("a fold needs at least one instrument")
        index = self.data.universe
        for part in parts:
            fr, rows = part.fold_range, index.rows(part.instrument)
            if fr.train_end + 1 > self.data.features.shape[0] or not rows.start <= fr.train_start:
                raise ValueError(f"fold {fr.fold}: train rows {fr.train_start}..{fr.train_end} past the data")
            if fr.train_end > rows.stop:
                raise ValueError(f"fold {fr.fold}: training rows cross instrument {part.instrument}'s end")
            if not fr.train_start + 2 <= part.learn_end <= fr.train_end:
                raise ValueError(
                    f"fold {fr.fold}: learning rows end {part.learn_end} outside its training slice"
                )
        transitions = sum(p.learn_rows - 1 for p in parts)
        slice_transitions = sum(p.fold_range.train_rows - 1 for p in parts)
        if slice_transitions > self.capacity:
            raise ValueError(
                f"fold {parts[0].fold_range.fold}: {slice_transitions} transitions exceed the replay's "
                f"{self.capacity}"
            )
        self.parts, self.focused = tuple(parts), 0
        at = 0
        for part in parts:  # filled on the device: no host array per fold
            n = part.learn_rows - 1
            start = part.fold_range.train_start
            torch.arange(start, start + n, out=self.rows[at : at + n])
            torch.arange(n, 0, -1, out=self.left[at : at + n])
            at += n
        self.n_valid.fill_(transitions)  # each span's last bar has no next state inside its learnt rows

    @property
    def contiguous(self) -> bool:
        """The fold's transitions are one range of rows (one part): collection slices instead of gathers."""
        return len(self.parts) == 1

    @property
    def learn_rows(self) -> int:
        """Rows collection and the learning step read: every part's training slice, less a held-back tail."""
        return sum(p.learn_rows for p in self.parts)

    @property
    def transitions(self) -> int:
        """Transitions the fold learns from (`n_valid` on the host)."""
        return sum(p.learn_rows - 1 for p in self.parts)

    def row_stats(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The norm stats that normalise feature rows `rows` (any shape): each row's instrument's, gathered
        by instrument id; with one instrument its (F,) row, broadcast (no gather: the same arithmetic)."""
        if self.instruments == 1:
            return self.means[0], self.stds[0]
        assert self.data.instrument is not None  # DeviceData sets it
        ids = self.data.instrument[rows]
        return self.means[ids], self.stds[ids]

    @torch.no_grad()
    def compute_norm_stats(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and std per feature over each instrument's rows learnt from, on the device: its training
        slice, or its head when a tail is held back for selection (the tail stays unseen, as the validation
        is). Instruments taking no part get 0 and 1. Returns the focused instrument's."""
        self.means.zero_()
        self.stds.fill_(1.0)
        for part in self.parts:
            rows = self.data.features[part.fold_range.train_start : part.learn_end]
            std, mean = torch.std_mean(rows, dim=0, correction=0)
            # Constant features (e.g. zero volume) would divide by zero; 1 leaves them centred at 0.
            std = torch.where(std > 1e-8, std, torch.ones_like(std))
            self.means[part.instrument].copy_(mean)
            self.stds[part.instrument].copy_(std)
        return self.mean, self.std

    def norm_stats_dict(self) -> dict:
        """The focused instrument's norm stats as plain lists, for `norm_stats_fold{N}.json`."""
        return {"mean": self.mean.tolist(), "std": self.std.tolist()}

    def steps_per_epoch(self, config: DQNConfig) -> int:
        """Gradient steps per epoch: the config's, or ceil(train rows / batch size)."""
        if config.steps_per_epoch > 0:
            return config.steps_per_epoch
        return max(1, math.ceil(self.learn_rows / config.batch_size))

    def clear(self) -> None:
        """No fold: the state a trainer is built in (after its warm-up's fold)."""
        self.parts, self.focused = (), 0
        self.means.zero_()
        self.stds.fill_(1.0)
        self.n_valid.fill_(1)
