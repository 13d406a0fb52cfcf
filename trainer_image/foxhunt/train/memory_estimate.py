"""The memory a run needs on its device, estimated before anything is allocated.

A setting that fits the config's bounds can still ask for more than the device holds (`hidden` at its
bound with a large fold, say), and would fail late, after the data load, in a C++ stack. The estimate
counts the big buffers by what they scale with: the fxcache's arrays (rows), the replay and the
collection's forward passes over a fold (training rows × hidden), the training step's activations
(batch size × hidden) and the network with its target and Adam moments (hidden²). It errs high
(a factor of two on activations) so that a refused run would not have fit; exit 2 names the setting
whose share is largest. A universe counts every instrument: `rows` all of theirs, `max_train_rows` the
largest fold's training rows summed over the instruments taking part.
"""

from __future__ import annotations

import os

from foxhunt.config import DQNConfig
from foxhunt.errors import UsageError

FLOAT = 4
GIB = 2**30
HEADROOM = 0.9  # of the free memory: allocator fragmentation, CUDA graphs, the framework itself


def needed_bytes(
    rows: int, n_features: int, max_train_rows: int, dqn: DQNConfig, population: int = 1, chunk: int = 2**20
) -> dict:
    """Bytes by what drives them: `rows` (the fxcache on the device), `train_days` (a fold's replay),
    `batch_size` (the step's activations), `hidden` (the networks, Adam's moments, and the collection's
    forward passes over `chunk` bars at a time)."""
    width = n_features + 1
    params = width * dqn.hidden + dqn.hidden * dqn.hidden + 3 * dqn.hidden + 2 * dqn.hidden + 3
    return {
        # features and targets, the host's timestamp, the per-row instrument id (int32)
        "rows": rows * ((n_features + 4) * FLOAT + 8 + 4),
        # replay: position, action (8 bytes), reward, and the held returns with n_step > 1 (or 0, which a
        # run may resolve to a held target); the fold
        # window's transition rows and span lengths (8 bytes each, shared by the members)
        "train_days": population * max_train_rows * (6 + (dqn.n_step != 1)) * FLOAT + max_train_rows * 16,
        "batch_size": population * dqn.batch_size * (2 * width + 8 * dqn.hidden) * FLOAT * 2,
        # online, target, gradient, two moments and a copy; two hidden layers of a chunk, twice
        "hidden": population * (params * 6 + min(chunk, max_train_rows) * dqn.hidden * 4) * FLOAT,
    }


def free_bytes(device) -> int | None:
    """Free memory on `device` (CUDA: the driver's count; CPU: MemAvailable), or None when unknown."""
    if getattr(device, "type", str(device)) == "cuda":
        import torch

        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def check_device_memory(
    device, rows: int, n_features: int, max_train_rows: int, dqn: DQNConfig, population: int = 1
) -> int:
    """The estimate in bytes; UsageError (exit 2) naming the largest share's setting when it exceeds
    the device's free memory."""
    from foxhunt.train.device_data import chunk_rows

    shares = needed_bytes(rows, n_features, max_train_rows, dqn, population, chunk_rows(device))
    total = sum(shares.values())
    free = free_bytes(device)
    if free is not None and total > free * HEADROOM:
        setting = max(shares, key=lambda name: shares[name])
        value = {
            "rows": f"{rows:,} rows of the fxcache",
            "train_days": f"{max_train_rows:,} training rows",
        }.get(setting, f"{setting} {getattr(dqn, setting, '')}")
        raise UsageError(
            f"{setting}: this run needs about {total / GIB:,.1f} GiB on {device} ({value} alone "
            f"{shares[setting] / GIB:,.1f} GiB) but {free / GIB:,.1f} GiB is free; lower {setting}"
        )
    return total
