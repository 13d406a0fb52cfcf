"""Pictures drawn side by side: each picture is one pure render call (its data → PNG bytes), so many of them
(a universe's instruments, four each, and its book) are drawn in spawned worker processes when the machine
has the cores, and one after the other otherwise. The bytes are the same either way.

Spawned, not forked: the run's process holds a CUDA context and threads (the heartbeat, telemetry), which
a forked child must not inherit. A worker imports matplotlib and the picture modules (a second or two), so
a pool pays only for many pictures: `picture_workers` gives one worker per `JOBS_PER_WORKER` pictures, at
most half the cores the process may use (its affinity and, on a pod, the cgroup's CPU quota; the run's own
process keeps the rest) and at most `MAX_WORKERS`, none on a machine of two cores. A pool that cannot
start or loses a worker (spawn refused, a worker killed for memory) draws what is left in the process:
a run trained for hours does not lose its records to its pictures.

A single run's pictures overlap its own end instead (`PicturePool`, `early_worker`): where the process may
use `EARLY_WORKER_CORES` cores or more, one worker is spawned when the training begins, so its start-up is
paid while the run trains; as the walk ends it draws the folds' pictures while the run scores its stitched
record and draws that record's pictures itself. On fewer cores the four are drawn here, as before."""

from __future__ import annotations

import importlib.util
import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

JOBS_PER_WORKER = (
    4  # `draw_pictures`: four pictures do not pay for a worker's start-up (`PicturePool` hides it)
)
MAX_WORKERS = 8  # each worker holds matplotlib and numpy (a few hundred MB): bounded on a large node
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")  # cgroup v2: "QUOTA PERIOD", or "max PERIOD" unlimited
# A worker beside the training takes a core: with fewer, it would slow the run it is meant to shorten.
EARLY_WORKER_CORES = 4


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
    with PicturePool(min(workers, len(jobs))) as pool:
        for job in jobs:
            pool.submit(job)
        return pool.results()


def early_worker_wanted(cores: int | None = None) -> bool:
    """Whether a run starts a picture worker with its training: where the process may use `cores`
    (default: `usable_cores`) of at least `EARLY_WORKER_CORES`."""
    if multiprocessing.current_process().daemon or importlib.util.find_spec("matplotlib") is None:
        return False  # a daemonic process may have no children; a slim image draws no pictures at all
    return (usable_cores() if cores is None else cores) >= EARLY_WORKER_CORES


@contextmanager
def early_worker(own_process: bool, cores: int | None = None) -> Iterator[PicturePool | None]:
    """A started `PicturePool` where `early_worker_wanted(cores)` in a console command's own process
    (`own_process`: a spawned worker re-imports the main module, which a library caller's script need not
    guard), else None (the pictures drawn in the process); its worker stopped on every way out of the block."""
    if not own_process or not early_worker_wanted(cores):
        yield None
        return
    with PicturePool() as pool:
        yield pool


class PicturePool:
    """`workers` spawned picture workers (one for a run's early worker; `draw_pictures` takes several), started
    before their pictures exist: `start` returns at once while each imports matplotlib and the picture
    modules; `submit` hands them a picture; `results` collects the bytes. A pool that cannot start or loses a
    worker leaves its pictures to be drawn here, with a warning; a picture's own error is raised here."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers
        self._executor: ProcessPoolExecutor | None = None
        self._sent: list[tuple[PictureJob, Future | None]] = []  # None: drawn here by `results`

    def start(self) -> PicturePool:
        """Spawn the workers without waiting for them."""
        try:
            context = multiprocessing.get_context("spawn")
            self._executor = ProcessPoolExecutor(self.workers, mp_context=context, initializer=_warm_worker)
            self._executor.submit(os.getpid)  # a pool spawns its workers for its first call: now, not later
        except Exception as exc:  # noqa: BLE001  (any spawn failure: the pictures are drawn here instead)
            log.warning(
                "pictures: the picture worker could not start (%s); drawing them in this process", exc
            )
            self.close()
        return self

    def submit(self, job: PictureJob) -> None:
        """`job` to the worker (or, without one, to be drawn here by `results`)."""
        future = None
        if self._executor is not None:
            try:
                future = self._executor.submit(_render, job.render, *job.args)
            except Exception as exc:  # noqa: BLE001  (the worker died while the run trained, or will not take it)
                log.warning(
                    "pictures: the picture worker is gone (%s); drawing %s in this process", exc, job.key
                )
        self._sent.append((job, future))

    def results(self) -> dict[str, bytes]:
        """Every submitted picture's bytes by key, in the order submitted: the worker's, or drawn here
        where the worker failed; a picture's error is raised."""
        sent, self._sent = self._sent, []
        drawn: dict[str, bytes] = {}
        try:
            for job, future in sent:
                if future is not None:
                    drawn[job.key] = future.result()
        except PictureError as exc:  # the picture's own error, raised in the worker: the run's to see
            raise exc.args[0] from None
        except Exception as exc:  # noqa: BLE001  (a dead worker, arguments it could not take, its memory)
            log.warning("pictures: the picture worker failed (%s); drawing the rest in this process", exc)
        return {job.key: drawn[job.key] if job.key in drawn else job.render(*job.args) for job, _ in sent}

    def close(self) -> None:
        """Stop the worker: pictures not begun are dropped; one being drawn, or the start-up, is waited
        for (seconds), so no worker outlives the pool (multiprocessing's resource tracker stays to the end)."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> PicturePool:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.close()


class PictureError(Exception):
    """A picture's own error in the worker (`args[0]`, pickled back whole), told apart from the worker's
    failures: one that cannot be pickled back reads as a failed worker, and the picture drawn here raises it."""


def _render(render: Callable[..., bytes], *args) -> bytes:
    """`render(*args)` in the worker, its own error wrapped in `PictureError`."""
    try:
        return render(*args)
    except Exception as exc:
        raise PictureError(exc) from None


def _warm_worker() -> None:
    """A picture worker's start: deaf to Ctrl-C, gone with its parent, the picture modules imported."""
    # Ctrl-C reaches the whole process group: the run decides whether to stop, and then stops the worker.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:  # a parent killed outright (out of memory) leaves no idle worker behind
        threading.Thread(target=_exit_with, args=(parent,), name="foxhunt-parent-watch", daemon=True).start()
    with suppress(ImportError):  # a slim image without matplotlib: the run says so when it draws
        import matplotlib.backends.backend_agg  # noqa: F401  (what plot.agg_figure and png_bytes import)
        import matplotlib.figure  # noqa: F401
        import matplotlib.layout_engine  # noqa: F401
        import matplotlib.ticker  # noqa: F401

        import foxhunt.evaluate.plot_learning  # noqa: F401  (and foxhunt.evaluate.plot: timings.png)


def _exit_with(parent) -> None:
    """Wait for the parent process to end, then end this one."""
    parent.join()
    os._exit(1)
