"""bench/round_records.py: a search's records after each round, timed over a study that grows."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import round_records as bench  # noqa: E402


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    out = tmp_path_factory.mktemp("round_records") / "rounds.json"
    argv = ["--trials", "5", "--population", "2", "--folds", "3", "--commit", "abc1234", "--out", str(out)]
    assert bench.main(argv) == 0
    return json.loads(out.read_text())


def test_the_record_names_the_commit_given_for_the_tree_and_the_shape(record):
    assert record["commit"] == "abc1234" and record["benchmark"] == "round_records"
    assert {k: record["settings"][k] for k in ("trials", "population", "folds")} == {
        "trials": 5,
        "population": 2,
        "folds": 3,
    }


def test_a_round_is_one_fold_of_a_batch_and_the_total_its_two_parts(record):
    figures = record["figures"]
    assert figures["rounds"] == 3 * 3  # batches of 2, 2 and 1 trials, three folds each
    assert figures["total_seconds"] == pytest.approx(figures["reports_seconds"] + figures["manifest_seconds"])


def test_the_manifest_written_last_holds_every_trials_every_fold(tmp_path, monkeypatch):
    from foxhunt.run import manifest as module

    written = {}

    def spy(out_uri, manifest):
        written["trials"] = {n: sorted(w.folds) for n, w in manifest.trials.items()}
        written["outputs"] = manifest.trials[0].folds[max(manifest.trials[0].folds)].outputs

    monkeypatch.setattr(module, "write_manifest", spy)
    bench.measure(3, 2, 2)
    assert written["trials"] == {0: [0, 1], 1: [0, 1], 2: [0, 1]}
    assert sorted(written["outputs"]) == [
        "trials/0000/fold_1/norm_stats_fold1.json",
        "trials/0000/fold_1/positions.npy",
        "trials/0000/fold_1/report.json",
        "trials/0000/fold_1/weights.pt",
    ]


@pytest.mark.parametrize(("journal", "mode", "synchronous"), [("shipped", "delete", 2), ("wal", "wal", 1)])
def test_a_journal_sets_its_pragmas_on_each_new_connection_until_undone(journal, mode, synchronous, tmp_path):
    from sqlalchemy import create_engine, text

    def read(path):
        engine = create_engine(f"sqlite:///{path}")
        with engine.connect() as connection:
            found = tuple(
                connection.execute(text(f"PRAGMA {p}")).scalar() for p in ("journal_mode", "synchronous")
            )
        engine.dispose()
        return found

    undo = bench.set_journal(journal)
    try:
        assert read(tmp_path / "a.db") == (mode, synchronous)
    finally:
        undo()
    assert read(tmp_path / "b.db") == ("delete", 2)  # SQLite's defaults again: FULL is 2


@pytest.mark.parametrize(("journal", "private"), [("private", True), ("shipped", False), ("wal", False)])
def test_only_the_private_journal_opens_the_study_through_the_shipped_private_connections(
    journal, private, tmp_path, monkeypatch
):
    from foxhunt.search import storage

    opened = []
    shipped = storage.private_sqlite
    monkeypatch.setattr(storage, "private_sqlite", lambda path: opened.append(path) or shipped(path))
    assert bench.main(["--trials", "2", "--population", "2", "--folds", "1", "--journal", journal,
                       "--out", str(tmp_path / "r.json")]) == 0  # fmt: skip
    assert bool(opened) is private


def test_a_run_leaves_no_pragmas_on_later_connections(tmp_path):
    from sqlalchemy import create_engine, text

    assert bench.main(["--trials", "1", "--population", "1", "--folds", "1", "--journal", "wal",
                       "--out", str(tmp_path / "r.json")]) == 0  # fmt: skip
    engine = create_engine(f"sqlite:///{tmp_path / 'later.db'}")
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "delete"
    engine.dispose()
