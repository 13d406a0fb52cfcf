"""Pictures drawn side by side: each picture is one pure render call (its data → PNG bytes), so many of them
(a universe's instruments, four each, and its book) are drawn in spawned worker processes when the machine
has the cores, and one after the other otherwise. The bytes are the same either way.

Spawned, not forked: the run's process holds a CUDA context and threads (the heartbeat, telemetry), which
a forked child must not inherit. A worker imports matplotlib and the picture modules (a second or two), so
a pool pays only for many pictures: `picture_workers` gives one worker per `JOBS_PER_WORKER` pictures, at
most half the cores the process may use (its affinity and, on a pod, the cgroup's CPU quota; the run's own
process keeps the rest) and at most `MAX_WORKERS`, none on a machine of two cores. A pool that cannot
start or loses a worker (spawn refused, a worker killed for memory) draws what is left in the process:
a run trained for hours does not lose its records to its pictures."""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

JOBS_PER_WORKER = 4  # a single run's four pictures stay in the process: a worker's start-up would cost more
MAX_WORKERS = 8  # each worker holds matplotlib and numpy (a few hundred MB): bounded on a large node
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")  # cgroup v2: "QUOTA PERIOD", or "max PERIOD" unlimited


@dataclass(frozen=True)
class PictureJob:
    """One picture: where its bytes go (`key`) and the module-level call that draws them."""

    key: str
    render: Callable[..., bytes]
    args: tuple


def picture_workers(jobs: int, cores: int | None = None) -> int:
    """How many worker processes draw `jobs` pictures on `cores` cores (default: this process's); 1 draws
    them here."""
    cores = usable_cores() if cores is None else cores
    return max(1, min(jobs // JOBS_PER_WORKER, cores // 2, MAX_WORKERS))


def usable_cores(cpu_max: Path = CGROUP_CPU_MAX) -> int:
    """The cores this process may use: its CPU affinity (the node's on a pod), capped by a cgroup v2 CPU
    quota where one is set (a pod's CPU limit)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        quota, period = cpu_max.read_text().split()[:2]
        if quota == "max":
            return cores
        limit = int(quota) // max(int(period), 1)
    except (OSError, ValueError):  # no cgroup v2 file (not Linux, cgroup v1) or one we cannot read
        return cores
    return max(1, min(cores, limit))


def draw_pictures(jobs: Sequence[PictureJob], workers: int | None = None) -> dict[str, bytes]:
    """Every job's PNG bytes by key, drawn by `workers` spawned processes (default `picture_workers`) or
    here when that is 1; a worker's error is raised here."""
    workers = picture_workers(len(jobs)) if workers is None else workers
    if workers <= 1 or len(jobs) <= 1:
        return {job.key: job.render(*job.args) for job in jobs}
    drawn: dict[str, bytes] = {}
    try:
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context)
        try:
            futures = {job.key: pool.submit(job.render, *job.args) for job in jobs}
            for key, future in futures.items():
                drawn[key] = future.result()
        finally:
            pool.shutdown(cancel_futures=True)  # an error: the queued pictures are not drawn for nothing
    except (BrokenProcessPool, OSError) as exc:
        log.warning("pictures: the worker processes failed (%s); drawing the rest in this process", exc)
    return drawn | {job.key: job.render(*job.args) for job in jobs if job.key not in drawn}
