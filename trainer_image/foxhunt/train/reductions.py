"""Sums, means and standard deviations whose rounding does not depend on the CPU's thread count.

On the CPU torch reduces a tensor to one value in a single thread below 32,768 elements (ATen's grain);
above it, each thread sums its own share and the shares are added, so the rounding follows the thread
count (a 100,000-bar P&L's sum differs in its last bits between 1 and 2 threads). A reduction with
several outputs gives each output to one thread, whole, and does not. So `fixed_sum` leaves a short
reduction to torch and cuts a long one into rows of `CHUNK` elements (zeros pad the last, adding
nothing): each row is summed whole, then the row sums, the same tree at any thread count. On CUDA,
where the same device repeats its reductions, they are torch's own.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

GRAIN = 32_768  # ATen's internal::GRAIN_SIZE: from here a one-output reduction is split across threads
CHUNK = 8_192  # elements per row of the fixed tree: each row below the grain, summed by one thread


def fixed_sum(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """`x.sum(dim)` (one dimension), rounded the same at any CPU thread count."""
    if x.device.type != "cpu" or x.shape[dim] < GRAIN:
        return x.sum(dim)
    x = x.movedim(dim, -1)
    while x.shape[-1] >= GRAIN:
        pad = -x.shape[-1] % CHUNK
        rows = F.pad(x, (0, pad)) if pad else x
        x = rows.reshape(*x.shape[:-1], -1, CHUNK).sum(-1)
    return x.sum(-1)


def fixed_mean(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """`x.mean(dim)` (one dimension), rounded the same at any CPU thread count."""
    if x.device.type != "cpu" or x.shape[dim] < GRAIN:
        return x.mean(dim)
    return fixed_sum(x, dim) / x.shape[dim]


def fixed_std(x: torch.Tensor) -> torch.Tensor:
    """The population standard deviation of all of `x` (correction 0), the same at any CPU thread count:
    torch's own below the grain; above it two passes, the mean and then the mean squared deviation."""
    flat = x.reshape(-1)
    if x.device.type != "cpu" or flat.numel() < GRAIN:
        return x.std(correction=0)
    centred = flat - fixed_mean(flat)
    return fixed_mean(centred * centred).sqrt()
