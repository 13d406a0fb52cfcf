"""Writes on worker threads while a fold's members are still being scored, finished before the fold is
recorded.

A local write is a temp file, an fsync, a rename and an fsync of the folder (`storage.write_atomic`): about
0.8 ms of waiting on the disk for every file. A search's round saves four files for each of its P members,
one after another, between the members' validations: 4,608 files in a 64-trial search, whose profile on an
H200 host counted 10,239 fsyncs and 3.9 s in them (bench/results/profile-h200-2026-12-07-06c387d-search.txt).
Inside `writes_in_background` such writes (`storage.write_bytes_soon`) go to two worker threads (an fsync
releases the GIL) and overlap the next member's work. Leaving the block waits for every one of them and
raises the first failure, so nothing that records the files (the manifest, written by the walk's `on_fold`
after the block) is written before they are whole on disk: what survives a crash is what it was with every
write made in turn.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

log = logging.getLogger(__name__)

WORKERS = 2  # two files on the disk at once: the fsyncs of one wait while the other's data is written

# The open block's workers and the writes handed to them (None outside a block).
_writes: ContextVar[tuple[ThreadPoolExecutor, list[Future]] | None] = ContextVar(
    "foxhunt_background_writes", default=None
)


@contextmanager
def writes_in_background() -> Iterator[None]:
    """Within it, `storage.write_bytes_soon` hands each write to a worker thread (`submit`); on leaving,
    every one has finished (the first failure raised, after all are done). The workers go with the block:
    none outlives it."""
    if _writes.get() is not None:  # nested: the outer block waits for them all
        yield
        return
    pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="foxhunt-writes")
    pending: list[Future] = []
    token = _writes.set((pool, pending))
    try:
        yield
    except BaseException:
        _finish(pool, pending, raising=False)  # the block's own error is the one to report
        raise
    finally:
        _writes.reset(token)
    _finish(pool, pending, raising=True)


def submit(write: Callable[..., None], *args: Any) -> bool:
    """Hand `write(*args)` to the open block's workers; False outside a block (the caller writes it now)."""
    writes = _writes.get()
    if writes is None:
        return False
    pool, pending = writes
    pending.append(pool.submit(write, *args))
    return True


def _finish(pool: ThreadPoolExecutor, pending: list[Future], *, raising: bool) -> None:
    """Wait for every write, stop the workers; raise the first failure (`raising`) or log each one."""
    pool.shutdown(wait=True)
    failures = [error for future in pending if (error := future.exception()) is not None]
    if failures and raising:
        raise failures[0]
    for error in failures:
        log.warning("a background write failed while the walk was failing: %s", error)
