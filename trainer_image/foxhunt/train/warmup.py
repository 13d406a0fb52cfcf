"""Warming a CUDA trainer at build time, so the first fold pays no one-time costs.

CUDA loads a kernel's module the first time the kernel runs, and cuBLAS picks and loads its
kernels the first time it meets a shape. In a fresh process the first fold paid that inside its
transition (≈35 ms against ≈1 ms for the others: the norm stats' reductions) and its first epoch
(collection's products, the diagnostics' argmax, scans and cumulative sums). Running each of those
once while the trainer is built moves the cost to the build, where the compile already is.
"""

from __future__ import annotations

from typing import Any

import torch

from foxhunt.data.folds import FoldRange
from foxhunt.train.device_data import synchronize

WARM_VAL_ROWS = 4096  # validation rows of the warm-up range: the kernels, not the size, matter there


def warm_up_range(rows: int, max_train_rows: int) -> FoldRange | None:
    """A fold over the data shaped like the run's largest (training rows first), or None when too small."""
    val_rows = min(WARM_VAL_ROWS, rows // 4)
    train_end = min(max_train_rows, rows - val_rows)
    if val_rows < 2 or train_end < 2:
        return None
    return FoldRange(-1, 0, train_end, train_end, train_end + val_rows, 0.0)


@torch.no_grad()
def warm_up(trainer: Any, max_train_rows: int) -> None:
    """Run the fold transition, collection and evaluation once on a warm-up range, then undo their effects.

    What they leave behind (fold range, norm stats, replay, history, generator states) is put back
    or reset by the `reset_for_fold` that follows at build, so a warmed trainer trains exactly as
    an unwarmed one.
    """
    fold_range = warm_up_range(trainer.data.features.shape[0], max_train_rows)
    if fold_range is None:
        return
    trainer.set_fold_range(fold_range)
    trainer.compute_norm_stats()
    trainer.collect(0.5)
    trainer.epoch_diagnostics()
    trainer.validate()
    synchronize(trainer.device)
    trainer.fold_range = None
    trainer.mean.zero_()
    trainer.std.fill_(1.0)
    trainer.n_valid.fill_(1)
    trainer.train_start.zero_()
