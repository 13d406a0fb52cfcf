"""The fxcache on the device: uploaded once per run through pinned staging, read by every fold."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch

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
