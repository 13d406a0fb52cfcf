"""The fxcache on the device: uploaded once per run through pinned staging, read by every fold."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from foxhunt.config import DQNConfig
from foxhunt.data.folds import FoldRange
from foxhunt.data.pnl import ExecutionRows

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


@dataclass
class DeviceData:
    """The whole fxcache on the device, uploaded once per run; folds are index ranges into it."""

    features: torch.Tensor  # (n, 42) float32
    targets: torch.Tensor  # (n, 4) float32
    timestamp: np.ndarray  # (n,) int64 ns, stays on the host (fold boundaries, annualization)
    uploaded_bytes: int = 0


def to_device(
    features: np.ndarray, targets: np.ndarray, timestamp: np.ndarray, device: torch.device
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
    return DeviceData(feats, targs, timestamp, uploaded)


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


def _upload(array: np.ndarray, device: torch.device, chunk_bytes: int = 64 << 20) -> torch.Tensor:
    """Copy a host array to the device through two pinned staging buffers (copy and DMA overlap)."""
    out = torch.empty(array.shape, dtype=torch.float32, device=device)
    flat_src = array.reshape(-1)
    flat_dst = out.view(-1)
    chunk = max(1, chunk_bytes // array.itemsize)
    staging = [torch.empty(chunk, dtype=torch.float32, pin_memory=True) for _ in range(2)]
    done = [torch.cuda.Event(), torch.cuda.Event()]
    stream = torch.cuda.current_stream(device)
    for i, lo in enumerate(range(0, flat_src.size, chunk)):
        hi = min(lo + chunk, flat_src.size)
        buf, ev = staging[i % 2], done[i % 2]
        ev.synchronize()  # the DMA that last read this buffer has finished
        buf[: hi - lo].numpy()[:] = flat_src[lo:hi]
        flat_dst[lo:hi].copy_(buf[: hi - lo], non_blocking=True)
        ev.record(stream)
    return out


class FoldWindow:
    """The fold a trainer works on, in fixed device buffers a captured step reads: the training range's
    start and length (`train_start`, `n_valid`) and the norm stats (`mean`, `std`), refilled in place."""

    def __init__(self, data: DeviceData, capacity: int) -> None:
        device, n_features = data.features.device, data.features.shape[1]
        self.data, self.capacity = data, capacity  # capacity: the replay's rows (the largest fold's)
        self.mean = torch.zeros(n_features, device=device)
        self.std = torch.ones(n_features, device=device)
        self.train_start = torch.zeros((), dtype=torch.long, device=device)
        self.n_valid = torch.ones((), dtype=torch.long, device=device)
        self.fold_range: FoldRange | None = None
        self.learn_end = 0  # end of the rows learnt from: the training slice's, or its head's (selection)

    @property
    def fold(self) -> FoldRange:
        """The fold worked on (a RuntimeError before `set_fold_range`)."""
        if self.fold_range is None:
            raise RuntimeError("no fold: call set_fold_range first")
        return self.fold_range

    def set_fold_range(self, fold_range: FoldRange, learn_end: int | None = None) -> None:
        """Point at a fold: indices only, nothing is copied. `learn_end` (default: the training slice's end)
        ends the rows collection and the learning step read; the rest of the slice is held back."""
        if fold_range.train_end + 1 > self.data.features.shape[0]:
            raise ValueError(f"fold {fold_range.fold}: train_end {fold_range.train_end} past the data")
        if fold_range.train_rows - 1 > self.capacity:
            raise ValueError(
                f"fold {fold_range.fold}: {fold_range.train_rows} rows exceed replay {self.capacity}"
            )
        learn_end = fold_range.train_end if learn_end is None else learn_end
        if not fold_range.train_start + 2 <= learn_end <= fold_range.train_end:
            raise ValueError(
                f"fold {fold_range.fold}: learning rows end {learn_end} outside its training slice"
            )
        self.fold_range, self.learn_end = fold_range, learn_end
        self.train_start.fill_(fold_range.train_start)
        self.n_valid.fill_(self.learn_rows - 1)  # the last bar has no next state inside the learnt rows

    @property
    def learn_rows(self) -> int:
        """Rows collection and the learning step read: the training slice, less a held-back tail."""
        return self.learn_end - self.fold.train_start

    @torch.no_grad()
    def compute_norm_stats(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and std per feature over the rows the fold learns from, on the device: the training slice,
        or its head when a tail is held back for selection (the tail stays unseen, as the validation is)."""
        rows = self.data.features[self.fold.train_start : self.learn_end]
        std, mean = torch.std_mean(rows, dim=0, correction=0)
        # Constant features (e.g. zero volume) would divide by zero; 1 leaves them centred at 0.
        std = torch.where(std > 1e-8, std, torch.ones_like(std))
        self.mean.copy_(mean)
        self.std.copy_(std)
        return self.mean, self.std

    def norm_stats_dict(self) -> dict:
        """The fold's norm stats as plain lists, for `norm_stats_fold{N}.json`."""
        return {"mean": self.mean.tolist(), "std": self.std.tolist()}

    def steps_per_epoch(self, config: DQNConfig) -> int:
        """Gradient steps per epoch: the config's, or ceil(train rows / batch size)."""
        if config.steps_per_epoch > 0:
            return config.steps_per_epoch
        return max(1, math.ceil(self.learn_rows / config.batch_size))

    def clear(self) -> None:
        """No fold: the state a trainer is built in (after its warm-up's fold)."""
        self.fold_range, self.learn_end = None, 0
        self.mean.zero_()
        self.std.fill_(1.0)
        self.n_valid.fill_(1)
        self.train_start.zero_()
