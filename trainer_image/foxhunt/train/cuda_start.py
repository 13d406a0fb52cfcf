"""The CUDA context, started in a background thread while the run reads its fxcache.

A fresh process creates its CUDA context (the driver's context on the device, the caching allocator's
first block, cuBLAS's handle) on its first device call, which used to come after the fxcache's read and
checks. The context needs no data, so `train` starts it as soon as it knows the device is CUDA and joins
it before its first device call: the read (pyarrow and numpy, which release the GIL while they read and
hash) runs meanwhile. A CPU run starts nothing. cuBLAS's handle made in the thread goes back to
PyTorch's pool when the thread ends, and the run's thread takes it from there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import torch

Join = Callable[[], float]


def initialize_cuda(device: torch.device) -> None:
    """Create `device`'s CUDA context, a first allocation and a cuBLAS handle, and wait until they exist."""
    torch.cuda.init()
    with torch.cuda.device(device):
        square = torch.ones(8, 8, device=device)
        torch.mm(square, square)  # cuBLAS's handle and workspace
        torch.cuda.synchronize(device)


def start_cuda_context(
    device: torch.device, initialize: Callable[[torch.device], None] = initialize_cuda
) -> Join:
    """Run `initialize(device)` in a background thread when `device` is CUDA; returns `join`.

    `join()` waits for the thread and returns the seconds it waited; an error the thread raised is raised
    again there, in the caller's thread (once). For a CPU device nothing starts and `join()` returns 0.
    """
    if device.type != "cuda":
        return lambda: 0.0
    errors: list[BaseException] = []

    def start() -> None:
        try:
            initialize(device)
        except BaseException as exc:  # handed to join(), which raises it in the run's thread
            errors.append(exc)

    thread = threading.Thread(target=start, name="foxhunt-cuda-start", daemon=True)
    thread.start()

    def join() -> float:
        started = time.perf_counter()
        thread.join()
        if errors:
            raise errors.pop()
        return time.perf_counter() - started

    return join
