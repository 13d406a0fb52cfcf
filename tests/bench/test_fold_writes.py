"""bench/fold_writes.py: a round's fold files written in turn or beside the members' scoring."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import fold_writes as bench  # noqa: E402


@pytest.mark.parametrize("mode", ["turn", "background"])
def test_the_record_names_the_mode_and_counts_four_files_a_member_fold(tmp_path, monkeypatch, mode):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / f"{mode}.json"
    argv = ["--rounds", "2", "--members", "3", "--member-ms", "2", "--mode", mode, "--out", str(out)]
    assert bench.main(argv) == 0
    record = json.loads(out.read_text())
    assert record["benchmark"] == "fold_writes" and record["settings"]["mode"] == mode
    figures = record["figures"]
    assert figures["files"] == 2 * 3 * 4 and figures["waits_seconds"] == pytest.approx(2 * 3 * 0.002)
    assert figures["beyond_waits_seconds"] == pytest.approx(
        figures["wall_seconds"] - figures["waits_seconds"]
    )
    assert not list(tmp_path.glob("foxhunt-fold-writes-*"))  # the scratch folder is gone


def test_in_background_the_files_are_written_by_the_walks_writer_threads(tmp_path, monkeypatch):
    import threading

    from foxhunt import storage

    names, write = [], storage.write_atomic

    def recorded(uri, data, metadata=None):
        names.append(threading.current_thread().name)
        write(uri, data, metadata)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(storage, "write_atomic", recorded)
    bench.measure(1, 2, 0.0, background=True)
    assert len(names) == 8 and all(n.startswith("foxhunt-writes") for n in names)
