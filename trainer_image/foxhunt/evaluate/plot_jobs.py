"""Pictures drawn side by side: each picture is one pure render call (its data → PNG bytes), so many of them
(a universe's instruments, four each, and its book) are drawn in spawned worker processes when the machine
has the cores, and one after the other otherwise. The bytes are the same either way.

Spawned, not forked: the run's process holds a CUDA context and threads (the heartbeat, telemetry), which
a forked child must not inherit. A worker imports matplotlib and the picture modules (a second or two), so
a pool pays only for many pictures: `picture_workers` gives one worker per `JOBS_PER_WORKER` pictures, at
most half the cores (the run's own process keeps the rest), and none on a machine of two cores."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

JOBS_PER_WORKER = 4  # a single run's four pictures stay in the process: a worker's start-up would cost more


@dataclass(frozen=True)
class PictureJob:
    """One picture: where its bytes go (`key`) and the module-level call that draws them."""

    key: str
    render: Callable[..., bytes]
    args: tuple


def picture_workers(jobs: int, cores: int | None = None) -> int:
    """How many worker processes draw `jobs` pictures on `cores` cores (default: this process's); 1 draws
    them here."""
    cores = len(os.sched_getaffinity(0)) if cores is None else cores
    return max(1, min(jobs // JOBS_PER_WORKER, cores // 2))


def draw_pictures(jobs: Sequence[PictureJob], workers: int | None = None) -> dict[str, bytes]:
    """Every job's PNG bytes by key, drawn by `workers` spawned processes (default `picture_workers`) or
    here when that is 1; a worker's error is raised here."""
    workers = picture_workers(len(jobs)) if workers is None else workers
    if workers <= 1 or len(jobs) <= 1:
        return {job.key: job.render(*job.args) for job in jobs}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context) as pool:
        futures = {job.key: pool.submit(job.render, *job.args) for job in jobs}
        return {key: future.result() for key, future in futures.items()}
