"""A fold's files written on worker threads (`storage.writes_in_background`, `write_bytes_soon`): every one
whole on disk when the block ends, a failure raised there, nothing left running after it."""

from __future__ import annotations

import logging
import threading

import pytest

from foxhunt import storage
from foxhunt.storage import background


def test_inside_the_block_the_writes_run_on_worker_threads_and_are_whole_at_its_end(tmp_path, monkeypatch):
    threads = []
    write = storage.write_atomic

    def recorded(uri, data, metadata=None):
        threads.append(threading.current_thread().name)
        write(uri, data, metadata)

    monkeypatch.setattr(storage, "write_atomic", recorded)
    files = {tmp_path / f"fold_0/f{i}.bin": bytes([i]) * (1000 + i) for i in range(6)}
    (tmp_path / "fold_0").mkdir()
    with storage.writes_in_background():
        for path, data in files.items():
            storage.write_bytes_soon(path, data)
    assert {path: path.read_bytes() for path in files} == files
    assert len(threads) == 6 and all(name.startswith("foxhunt-writes") for name in threads)


def test_outside_the_block_a_write_is_made_at_once(tmp_path):
    storage.write_bytes_soon(tmp_path / "report.json", b"{}")
    assert (tmp_path / "report.json").read_bytes() == b"{}"


def test_a_failed_write_is_raised_at_the_blocks_end_after_the_others_are_done(tmp_path):
    (tmp_path / "a_file").write_bytes(b"")
    with pytest.raises(OSError), storage.writes_in_background():
        storage.write_bytes_soon(
            tmp_path / "a_file" / "inside.json", b"no folder here"
        )  # its parent is a file
        storage.write_bytes_soon(tmp_path / "fine.json", b"1")
    assert (tmp_path / "fine.json").read_bytes() == b"1"


def test_the_blocks_own_error_wins_and_its_writes_still_finish(tmp_path, caplog):
    (tmp_path / "a_file").write_bytes(b"")
    with pytest.raises(KeyError), caplog.at_level(logging.WARNING), storage.writes_in_background():
        storage.write_bytes_soon(tmp_path / "kept.json", b"2")
        storage.write_bytes_soon(tmp_path / "a_file" / "x.json", b"")
        raise KeyError("the fold failed")
    assert (tmp_path / "kept.json").read_bytes() == b"2"
    assert "background write failed" in caplog.text


def test_no_worker_outlives_the_block_and_a_nested_block_leaves_the_wait_to_the_outer(tmp_path):
    before = set(threading.enumerate())
    with storage.writes_in_background():
        with storage.writes_in_background():
            storage.write_bytes_soon(tmp_path / "inner.json", b"3")
        writes = background._writes.get()
        assert writes is not None and not writes[0]._shutdown  # the inner block left the outer's workers
    assert (tmp_path / "inner.json").read_bytes() == b"3"
    assert set(threading.enumerate()) == before and background._writes.get() is None
