"""bench/study_saves.py: the search's save after each trial, timed over a study that grows."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import study_saves as bench  # noqa: E402


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    out = tmp_path_factory.mktemp("study_saves") / "saves.json"
    argv = ["--trials", "4", "--folds", "3", "--running", "2", "--commit", "abc1234", "--out", str(out)]
    assert bench.main(argv) == 0
    return json.loads(out.read_text())


def test_the_record_names_the_commit_given_for_the_tree_and_the_shape(record):
    assert record["commit"] == "abc1234" and record["benchmark"] == "study_saves"
    assert {k: record["settings"][k] for k in ("trials", "folds", "running")} == {
        "trials": 4,
        "folds": 3,
        "running": 2,
    }


def test_the_total_is_the_saves_and_the_lookups(record):
    figures = record["figures"]
    assert figures["total_seconds"] == pytest.approx(figures["saves_seconds"] + figures["lookups_seconds"])
    assert 0 < figures["median_save_ms"] <= figures["saves_seconds"] * 1e3


def test_the_study_holds_the_finished_trials_and_those_in_flight(tmp_path, monkeypatch):
    seen = {}
    from foxhunt.search import outputs

    written = outputs.write_study_outputs

    def spy(study, out_uri, **kwargs):
        seen["states"] = [t.state.name for t in study.get_trials()]
        seen["folds"] = [len(t.intermediate_values) for t in study.get_trials()]
        return written(study, out_uri, **kwargs)

    monkeypatch.setattr(outputs, "write_study_outputs", spy)
    bench.measure(3, 2, running=2)
    assert seen["states"] == ["RUNNING", "RUNNING", "COMPLETE", "COMPLETE", "COMPLETE"]
    assert seen["folds"] == [2] * 5


def test_a_save_every_k_trials_saves_after_each_kth_trial_and_the_last(monkeypatch):
    from foxhunt.search import outputs

    finished: list[int] = []
    written = outputs.write_study_outputs

    def spy(study, out_uri, **kwargs):
        finished.append(sum(t.state.is_finished() for t in study.get_trials()))
        return written(study, out_uri, **kwargs)

    monkeypatch.setattr(outputs, "write_study_outputs", spy)
    figures = bench.measure(7, 2, running=1, every=3)
    assert finished == [3, 6, 7] and figures["saves"] == 3
