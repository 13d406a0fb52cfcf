"""Fresh-process runs that start in the background when the session starts, for the tests that read them.

The suite mostly keeps one core busy (in-process training on one torch thread); the reference runs, the
benchmarks' tiny CPU runs and a few others are fresh processes of tens of seconds whose outputs the
tests only read. Queued in a thread of their own as soon as the session starts, one after another, they
run on the core the rest of the suite leaves idle; the modules of the tests that read them run last, so
that by then their runs have finished (a test that reads an unfinished one waits for its future). A run
is queued only when a collected test asks for its fixture, so `pytest tests/x.py` starts none it does
not need; the session's end stops whatever is still running.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest


class Background:
    """One queue of runs, worked through in order by one thread; runs are named, each queued once."""

    def __init__(self) -> None:
        self.queue = ThreadPoolExecutor(max_workers=1, thread_name_prefix="background-runs")
        self.futures: dict[str, Future] = {}
        self.lock = threading.Lock()
        self.processes: list[subprocess.Popen] = []
        self.stopped = False

    def start(self, name: str, make_job: Callable[[], Callable[[], Any]]) -> Future:
        """Queue the job `make_job()` under `name` unless one of that name is queued already; its future."""
        with self.lock:
            if name not in self.futures:
                self.futures[name] = self.queue.submit(make_job())
            return self.futures[name]

    def run(self, argv: Sequence[str], timeout: float, **popen: Any) -> subprocess.CompletedProcess:
        """`subprocess.run(argv, capture_output=True, text=True)`, which `stop` can kill."""
        with self.lock:
            if self.stopped:
                raise RuntimeError("the session ended before this background run started")
            process = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
            )
            self.processes.append(process)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

    def stop(self) -> None:
        """Drop the runs not yet started and kill the one running (a session that ends early)."""
        with self.lock:
            self.stopped = True
            for process in self.processes:
                if process.poll() is None:
                    process.kill()
        self.queue.shutdown(wait=True, cancel_futures=True)


BACKGROUND = Background()


def one_thread(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default this process's) with one OpenMP thread, for a torch run in the queue: the queue has one
    core, and a second thread would wait for the suite's core (OpenMP's waiting threads spin on it)."""
    return {**(os.environ if env is None else env), "OMP_NUM_THREADS": "1"}


def queue_command(
    request: pytest.FixtureRequest,
    name: str,
    argv_in: Callable[[Path], list[str]],
    env_in: Callable[[Path], dict[str, str]] | None = None,
) -> Future:
    """Queue the process `argv_in(work)` (environment `env_in(work)`, default this one's) under `name`,
    `work` a fresh temporary folder that `argv_in` may fill with inputs; future of (process, work)."""

    def make() -> Callable[[], tuple[subprocess.CompletedProcess, Path]]:
        work = request.getfixturevalue("tmp_path_factory").mktemp(name)
        argv, env = argv_in(work), env_in(work) if env_in else None
        return lambda: (BACKGROUND.run(argv, timeout=900, env=env), work)

    return BACKGROUND.start(name, make)


# Fixture name -> a function of the session's request that queues that fixture's runs.
STARTERS: dict[str, Callable[[pytest.FixtureRequest], object]] = {}


def background_process(
    fixture: str,
    name: str,
    argv_in: Callable[[Path], list[str]],
    env_in: Callable[[Path], dict[str, str]] | None = None,
):
    """A session fixture named `fixture` whose value is the finished (process, work) of `argv_in(work)`,
    queued under `name` when the session starts (registered in STARTERS)."""

    def queue(request: pytest.FixtureRequest) -> Future:
        return queue_command(request, name, argv_in, env_in)

    STARTERS[fixture] = queue

    def finished(request: pytest.FixtureRequest) -> tuple[subprocess.CompletedProcess, Path]:
        return queue(request).result()

    finished.__doc__ = f"The finished `{name}` run and its folder, from the background queue."
    return pytest.fixture(scope="session", name=fixture)(finished)


def _reads_background(item: pytest.Item) -> bool:
    return any(name in STARTERS for name in getattr(item, "fixturenames", ()))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move every module with a test that reads a background run to the end, keeping the order: their
    runs then go on while the other modules' tests run (whole modules, so module fixtures set up once)."""
    late = {item.path for item in items if _reads_background(item)}
    items[:] = [i for i in items if i.path not in late] + [i for i in items if i.path in late]


@pytest.fixture(scope="session", autouse=True)
def background_runs(request: pytest.FixtureRequest):
    """Queue the runs of every fixture in STARTERS that a collected test uses, in the order the tests
    come; stop them at the end."""
    queued: set[str] = set()
    for item in request.session.items:
        for name in getattr(item, "fixturenames", ()):
            if name in STARTERS and name not in queued:
                STARTERS[name](request)
                queued.add(name)
    yield BACKGROUND
    BACKGROUND.stop()
