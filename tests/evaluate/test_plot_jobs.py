"""Pictures drawn side by side (`evaluate/plot_jobs.py`): worker processes only where there are many
pictures and the cores for them, the same bytes as drawn in the process, a worker's error raised here; a
single run's early worker (`PicturePool`) only with four cores or more, its pictures' bytes the same, drawn
here when it cannot start or dies, deaf to Ctrl-C, and its process gone when the block that holds it ends
or its run is killed outright."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from multiprocessing.process import BaseProcess
from pathlib import Path

import pytest

from foxhunt.evaluate import plot_jobs
from foxhunt.evaluate.plot import render_timings_png
from foxhunt.evaluate.plot_jobs import (
    PictureJob,
    PicturePool,
    draw_pictures,
    early_worker,
    early_worker_wanted,
    picture_workers,
    usable_cores,
)


def timings_job(k: int) -> PictureJob:
    phases = {"train": [1.0 + k, 2.0, 0.5], "validate": [0.2, 0.3 * k, 0.1]}
    return PictureJob(f"fold_{k}/timings.png", render_timings_png, ([0, 1, 2], phases, f"run {k}: timings"))


def test_a_single_runs_four_pictures_are_drawn_in_the_process():
    assert picture_workers(4, cores=16) == 1


def test_a_universes_pictures_take_a_worker_per_four_up_to_half_the_cores():
    assert picture_workers(33, cores=16) == 8
    assert picture_workers(12, cores=16) == 3
    assert picture_workers(33, cores=6) == 3


def test_two_cores_draw_every_picture_in_the_process():
    assert picture_workers(33, cores=2) == 1


def test_pictures_drawn_by_workers_are_the_bytes_drawn_here():
    jobs = [timings_job(k) for k in range(3)]
    here = draw_pictures(jobs, workers=1)
    assert draw_pictures(jobs, workers=2) == here
    assert len(set(here.values())) == 3 and all(png.startswith(b"\x89PNG") for png in here.values())


def test_a_workers_error_is_raised_here():
    jobs = [timings_job(0), PictureJob("broken.png", json.loads, ("{",))]
    with pytest.raises(json.JSONDecodeError):
        draw_pictures(jobs, workers=2)


def test_a_large_node_draws_with_at_most_eight_workers():
    assert picture_workers(129, cores=64) == 8


def test_a_pods_cpu_quota_caps_the_usable_cores(tmp_path):
    cpu_max = tmp_path / "cpu.max"
    cpu_max.write_text("200000 100000\n")  # a limit of 2 CPUs
    assert usable_cores(cpu_max) == min(2, usable_cores(tmp_path / "absent"))
    cpu_max.write_text("max 100000\n")
    assert usable_cores(cpu_max) == usable_cores(tmp_path / "absent") >= 1


def test_a_pool_that_cannot_start_draws_every_picture_here(monkeypatch):
    def refused(*args, **kwargs):
        raise OSError("spawn refused")

    jobs = [timings_job(k) for k in range(3)]
    here = draw_pictures(jobs, workers=1)
    monkeypatch.setattr(plot_jobs, "ProcessPoolExecutor", refused)
    assert draw_pictures(jobs, workers=2) == here


def test_a_run_starts_a_picture_worker_early_only_where_it_may_use_four_cores_or_more():
    assert [early_worker_wanted(cores) for cores in (1, 2, 3)] == [False, False, False]
    assert [early_worker_wanted(cores) for cores in (4, 16)] == [True, True]


def test_two_cores_hold_no_early_worker():
    with early_worker(True, cores=2) as pool:
        assert pool is None


def test_a_library_callers_process_starts_no_early_worker():
    # A spawned worker re-imports the main module: a user's unguarded script would run again in it.
    with early_worker(False, cores=16) as pool:
        assert pool is None


def test_a_daemonic_process_wants_no_early_worker(monkeypatch):
    monkeypatch.setattr(multiprocessing.current_process(), "daemon", True)  # a user's Pool worker
    assert not early_worker_wanted(16)


def test_a_process_without_matplotlib_wants_no_early_worker(monkeypatch):
    monkeypatch.setattr(plot_jobs.importlib.util, "find_spec", lambda name: None)
    assert not early_worker_wanted(16)


def test_a_job_the_worker_cannot_take_is_drawn_here(caplog):
    jobs = [timings_job(0), PictureJob("unpicklable", _length, (lambda: None,))]
    with caplog.at_level(logging.WARNING), PicturePool() as pool:
        for job in jobs:
            pool.submit(job)
        drawn = pool.results()
    assert (
        drawn["unpicklable"] == 1
        and drawn["fold_0/timings.png"] == draw_pictures(jobs[:1], workers=1)["fold_0/timings.png"]
    )
    assert "drawing the rest in this process" in caplog.text


def _length(*args) -> int:
    """A stand-in render: how many arguments it was given."""
    return len(args)


def new_child(before: set) -> BaseProcess:
    """The one process started since `before` (the pool's worker: spawned by `start`, before any picture)."""
    (child,) = set(multiprocessing.active_children()) - before
    return child


def test_pictures_drawn_by_the_early_worker_are_the_bytes_drawn_here_in_the_order_sent(caplog):
    jobs = [timings_job(k) for k in (2, 0, 1)]
    before = set(multiprocessing.active_children())
    with caplog.at_level(logging.WARNING), PicturePool() as pool:
        new_child(before)  # started before a picture was sent
        for job in [*jobs, PictureJob("where", os.getpid, ())]:
            pool.submit(job)
        drawn = pool.results()
    assert drawn.pop("where") != os.getpid()  # drawn in the worker, not here
    assert list(drawn) == [job.key for job in jobs]
    assert drawn == draw_pictures(jobs, workers=1)
    assert not caplog.records


def test_an_early_worker_killed_leaves_its_pictures_to_be_drawn_here(caplog):
    jobs = [timings_job(k) for k in range(2)]
    before = set(multiprocessing.active_children())
    with caplog.at_level(logging.WARNING), PicturePool() as pool:
        worker = new_child(before)
        os.kill(worker.pid, signal.SIGKILL)  # as the kernel's out-of-memory killer would
        worker.join(timeout=60)
        for job in jobs:
            pool.submit(job)
        assert pool.results() == draw_pictures(jobs, workers=1)
    assert "drawing" in caplog.text and "in this process" in caplog.text


@pytest.mark.parametrize(
    "failure",
    [OSError("spawn refused"), AssertionError("daemonic processes are not allowed to have children")],
    ids=["refused", "any-kind"],
)
def test_an_early_worker_that_cannot_start_leaves_its_pictures_to_be_drawn_here(failure, monkeypatch, caplog):
    def refused(*args, **kwargs):
        raise failure

    monkeypatch.setattr(plot_jobs, "ProcessPoolExecutor", refused)
    jobs = [timings_job(k) for k in range(2)]
    with caplog.at_level(logging.WARNING), PicturePool() as pool:
        for job in jobs:
            pool.submit(job)
        assert pool.results() == draw_pictures(jobs, workers=1)
    assert "could not start" in caplog.text


def test_a_pictures_error_in_the_early_worker_is_raised_here(caplog):
    with caplog.at_level(logging.WARNING), PicturePool() as pool:
        pool.submit(timings_job(0))
        pool.submit(PictureJob("broken.png", json.loads, ("{",)))
        with pytest.raises(json.JSONDecodeError):
            pool.results()
    assert not caplog.records  # the picture's error, not a failed worker's: not drawn again here


def test_leaving_the_early_workers_block_by_an_exception_ends_its_process():
    before = set(multiprocessing.active_children())
    with pytest.raises(KeyboardInterrupt), early_worker(True, cores=4) as pool:
        assert pool is not None
        worker = new_child(before)
        raise KeyboardInterrupt  # a second Ctrl-C while the run trains: its worker is still starting
    assert not worker.is_alive()


def worker_pid(pool: PicturePool) -> int:
    """The pool's worker's process id, once it has started (its start-up done: it answered)."""
    pool.submit(PictureJob("pid", os.getpid, ()))
    return int(pool.results()["pid"])  # os.getpid's int, not a picture's bytes


def test_a_ctrl_c_to_the_process_group_leaves_the_picture_worker_drawing(caplog):
    jobs = [timings_job(k) for k in range(2)]
    with caplog.at_level(logging.WARNING), PicturePool() as pool:
        pool.submit(PictureJob("on SIGINT", signal.getsignal, (signal.SIGINT,)))
        assert pool.results() == {"on SIGINT": signal.SIG_IGN}
        os.kill(worker_pid(pool), signal.SIGINT)  # what a terminal's Ctrl-C sends every process of the run
        for job in jobs:
            pool.submit(job)
        assert pool.results() == draw_pictures(jobs, workers=1)
    assert not caplog.records  # the run decides whether to stop; its worker did not die of the signal


POOL_HOLDER = """
import time
from foxhunt.evaluate.plot_jobs import PicturePool
from test_plot_jobs import worker_pid

pool = PicturePool().start()
print(worker_pid(pool), flush=True)
time.sleep(600)
"""


def gone(pid: int) -> bool:
    """Whether process `pid` has ended (no such process, or a zombie its new parent has not reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_a_picture_worker_ends_when_its_run_is_killed_outright():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    # stderr dropped: the killed holder's resource tracker warns of the semaphores its pool never freed.
    command = [sys.executable, "-c", POOL_HOLDER]
    holder = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        worker = int(holder.stdout.readline())
        holder.kill()  # as the out-of-memory killer ends a run: no `finally`, no pool shut down
        holder.wait()
        deadline = time.monotonic() + 60
        while not gone(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(worker)
    finally:
        holder.kill()
        holder.stdout.close()
