"""Counting the torch ops a piece of work dispatches (each a kernel launch, or a view, on a GPU)."""

from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode


class OpCount(TorchDispatchMode):
    """Counts the torch ops dispatched while the mode is active."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        return func(*args, **(kwargs or {}))
