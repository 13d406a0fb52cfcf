"""The embedded study of an s3:// `--out` lives in a pod-local folder no other process opens: its
connections commit in WAL mode without an fsync per commit, and the copy uploaded after each round is an
ordinary (rollback-journal) SQLite file that a reader can open read-only."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy import text

from foxhunt.search import storage as study_storage
from foxhunt.search.study import open_study

pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage:UserWarning")

WAL, ROLLBACK = 2, 1  # SQLite's file-format bytes 18 and 19: 2 in WAL mode, 1 with a rollback journal
FULL, NORMAL = 2, 1  # PRAGMA synchronous


def _format(path: Path) -> int:
    return path.read_bytes()[18]


def _synchronous(url: str, private: bool) -> tuple[str, int]:
    store = study_storage.rdb_storage(
        url, heartbeat_seconds=60, grace_seconds=120, max_retry=1, private=private
    )
    with store.engine.connect() as connection:
        mode = connection.execute(text("PRAGMA journal_mode")).scalar()
        synchronous = connection.execute(text("PRAGMA synchronous")).scalar()
    store.engine.dispose()
    return mode, synchronous


def test_a_private_study_commits_in_wal_mode_with_synchronous_normal(tmp_path):
    assert _synchronous(f"sqlite:///{tmp_path / 'study.sqlite3'}", private=True) == ("wal", NORMAL)
    assert _format(tmp_path / "study.sqlite3") == WAL


def test_a_study_in_a_shared_folder_keeps_the_rollback_journal_and_full_sync(tmp_path):
    assert _synchronous(f"sqlite:///{tmp_path / 'study.sqlite3'}", private=False) == ("delete", FULL)
    assert _format(tmp_path / "study.sqlite3") == ROLLBACK


def test_open_study_is_private_only_when_asked(tmp_path):
    (tmp_path / "shared").mkdir()
    (tmp_path / "pod").mkdir()
    open_study(None, tmp_path / "shared", "s", seed=0)
    open_study(None, tmp_path / "pod", "s", seed=0, private=True)
    assert _format(tmp_path / "shared" / "study.sqlite3") == ROLLBACK
    assert _format(tmp_path / "pod" / "study.sqlite3") == WAL


def test_the_uploaded_copy_of_a_private_study_opens_read_only_with_its_trials(tmp_path):
    pod, out = tmp_path / "pod", tmp_path / "out"
    pod.mkdir()
    study = open_study(None, pod, "s", seed=0, private=True)
    for value in (0.1, 0.2, 0.3):
        trial = study.ask()
        study.tell(trial, value)
    study_storage.sync_study_file(pod / "study.sqlite3", str(out))
    copy = out / "study.sqlite3"
    assert _format(copy) == ROLLBACK
    out.chmod(0o555)  # a reader that may not write beside the file (WAL would need its -shm there)
    try:
        with closing(sqlite3.connect(f"file:{copy}?mode=ro", uri=True)) as db:
            assert db.execute("select count(*) from trials where state = 'COMPLETE'").fetchone() == (3,)
    finally:
        out.chmod(0o755)


def test_a_search_into_object_storage_opens_its_study_private(
    moto_s3, tiny_fxcache, tiny_params, monkeypatch
):
    from support.search_cases import search_argv

    from foxhunt.cli import main

    opened: list[str] = []
    shipped = study_storage.private_sqlite
    monkeypatch.setattr(study_storage, "private_sqlite", lambda path: opened.append(path) or shipped(path))
    assert main(search_argv(tiny_fxcache, moto_s3.uri("runs", "private"), tiny_params, 1)) == 0
    assert opened and all(Path(p).name == "study.sqlite3" for p in opened)


@pytest.mark.parametrize("private", [False, True])
def test_a_study_reopened_from_its_uploaded_copy_continues_with_its_trials(tmp_path, private):
    pod, out, pod2 = tmp_path / "pod", tmp_path / "out", tmp_path / "pod2"
    pod.mkdir()
    study = open_study(None, pod, "s", seed=0, private=private)
    study.tell(study.ask(), 0.5)
    study_storage.sync_study_file(pod / "study.sqlite3", str(out))
    assert study_storage.fetch_study_file(str(out), pod2.mkdir() or pod2) == pod2 / "study.sqlite3"
    again = open_study(None, pod2, "s", seed=0, private=True)
    again.tell(again.ask(), 0.7)
    assert [t.value for t in again.trials] == [0.5, 0.7]
