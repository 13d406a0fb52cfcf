"""The --out lock: one live run per output folder, a dead holder's lock taken over, local and on S3."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from foxhunt import storage
from foxhunt.run.lock import LOCK_NAME, LockHolder, OutLock, OutLocked


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def plant_lock(out, holder: LockHolder, age_seconds: float = 0.0) -> None:
    """A lock file as another process would have left it, its heartbeat `age_seconds` old."""
    path = out / LOCK_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(holder.to_bytes())
    then = time.time() - age_seconds
    os.utime(path, (then, then))


def holder(run_id: str, pid: int, host: str | None = None) -> LockHolder:
    return LockHolder(
        run_id, pid, host or socket.gethostname(), "2024-01-01T00:00:00+00:00", f"token-{run_id}"
    )


def test_a_second_run_is_refused_naming_the_first(tmp_path):
    first = OutLock(str(tmp_path), "first")
    assert first.acquire() is None
    with pytest.raises(OutLocked, match=r"held by run first \(pid \d+ on .*started"):
        OutLock(str(tmp_path), "second").acquire()


def test_a_released_lock_can_be_taken_and_the_file_is_gone(tmp_path):
    first = OutLock(str(tmp_path), "first")
    first.acquire()
    first.release()
    assert not (tmp_path / LOCK_NAME).exists()
    assert OutLock(str(tmp_path), "second").acquire() is None


def test_the_lock_of_a_dead_local_process_is_taken_over_at_once(tmp_path):
    plant_lock(tmp_path, holder("crashed", dead_pid()))
    lock = OutLock(str(tmp_path), "next")
    assert lock.acquire().run_id == "crashed"
    assert LockHolder.from_bytes((tmp_path / LOCK_NAME).read_bytes()) == lock.me


def test_a_live_local_process_keeps_its_lock(tmp_path):
    plant_lock(tmp_path, holder("alive", os.getppid()))
    with pytest.raises(OutLocked, match="alive"):
        OutLock(str(tmp_path), "next").acquire()


def test_a_lock_from_another_host_is_stale_only_when_its_heartbeat_is_old(tmp_path):
    plant_lock(tmp_path, holder("remote", 1, host="some-other-pod"), age_seconds=5.0)
    with pytest.raises(OutLocked, match="remote"):
        OutLock(str(tmp_path), "next", stale_seconds=10.0).acquire()
    plant_lock(tmp_path, holder("remote", 1, host="some-other-pod"), age_seconds=11.0)
    assert OutLock(str(tmp_path), "next", stale_seconds=10.0).acquire().run_id == "remote"


def test_a_retried_run_waits_for_its_predecessors_lock_to_go_stale(tmp_path):
    plant_lock(tmp_path, holder("same-run", 1, host="preempted-pod"), age_seconds=1.0)
    lock = OutLock(str(tmp_path), "same-run", stale_seconds=2.0)
    t0 = time.monotonic()
    assert lock.acquire(wait_seconds=5.0).run_id == "same-run"
    assert 0.5 < time.monotonic() - t0 < 4.0


def test_many_runs_racing_for_a_stale_lock_leave_exactly_one_holder(tmp_path):
    plant_lock(tmp_path, holder("crashed", dead_pid()))
    winners, losers = [], []

    def contend(i: int) -> None:
        lock = OutLock(str(tmp_path), f"racer-{i}")
        try:
            lock.acquire()
            winners.append(lock.me)
        except OutLocked:
            losers.append(i)

    threads = [threading.Thread(target=contend, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1 and len(losers) == 7
    assert LockHolder.from_bytes((tmp_path / LOCK_NAME).read_bytes()) == winners[0]


def test_refresh_renews_the_heartbeat_and_notices_a_lock_taken_over(tmp_path):
    lock = OutLock(str(tmp_path), "mine")
    lock.acquire()
    old = time.time() - 100
    os.utime(tmp_path / LOCK_NAME, (old, old))
    assert lock.refresh()
    assert time.time() - (tmp_path / LOCK_NAME).stat().st_mtime < 5
    plant_lock(tmp_path, holder("thief", os.getppid()))
    assert not lock.refresh()
    lock.release()  # not ours any more: left alone
    assert json.loads((tmp_path / LOCK_NAME).read_text())["run_id"] == "thief"


@pytest.mark.parametrize("server", ["seaweed_s3", "moto_s3"])
def test_on_s3_the_lock_admits_one_run_and_names_it_to_the_next(server, request):
    s3 = request.getfixturevalue(server)
    out = s3.uri("run")
    first = OutLock(out, "first")
    assert first.acquire() is None
    with pytest.raises(OutLocked, match="held by run first"):
        OutLock(out, "second").acquire()
    first.release()
    assert not storage.exists(storage.join(out, LOCK_NAME))


@pytest.mark.parametrize("server", ["seaweed_s3", "moto_s3"])
def test_exclusive_creation_on_s3_refuses_an_existing_object(server, request):
    s3 = request.getfixturevalue(server)
    uri = s3.uri("lock")
    assert storage.create_exclusive(uri, b"one")
    assert not storage.create_exclusive(uri, b"two")
    assert storage.read_bytes(uri) == b"one"


def test_exclusive_creation_of_a_local_file_refuses_an_existing_one(tmp_path):
    path = tmp_path / "deep" / "lock"
    assert storage.create_exclusive(path, b"one")
    assert not storage.create_exclusive(path, b"two")
    assert path.read_bytes() == b"one"
