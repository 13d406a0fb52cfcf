"""A search reads its study's trials once per save, and finds a trial by its number alone: after every trial
ends it writes the study's files and its line, and each full read grows with the study."""

from __future__ import annotations

import json

import pytest
from prometheus_client import CollectorRegistry
from support.trials_worker import one_at_a_time
from test_trials import TEST_SPACE, _study

from foxhunt.search.driver import _trial_line
from foxhunt.search.outputs import study_summary, study_table, write_study_outputs
from foxhunt.search.study import TrialOutcome, trial_by_number
from foxhunt.search.telemetry import TrialMetrics
from foxhunt.search.trial_loop import run_trials


def _outcomes(number, params, report_fold):
    """Trial 1 fails by its settings; trial 6 (after five complete) is pruned by a report far below the rest."""
    for fold in range(4):
        if report_fold(fold, -9.0 if number == 6 else 0.1 * number + 0.01 * fold):
            return None
    if number == 1:
        return float("nan")
    return TrialOutcome(objective=0.1 * number, sharpe=0.01 * (number + 1), n_obs=100 + number)


@pytest.fixture
def study(tmp_path):
    study = _study(tmp_path, "reads")
    run_trials(study, 7, one_at_a_time(_outcomes), space=TEST_SPACE, seed=5)
    return study


def _counting_reads(study, monkeypatch) -> list[int]:
    reads = []
    listed = study.get_trials

    def get_trials(*args, **kwargs):
        reads.append(1)
        return listed(*args, **kwargs)

    monkeypatch.setattr(study, "get_trials", get_trials)
    return reads


def test_the_study_files_are_written_from_one_read_of_its_trials(study, tmp_path, monkeypatch):
    reads = _counting_reads(study, monkeypatch)
    write_study_outputs(study, str(tmp_path), planned_trials=7)
    assert len(reads) == 1


def test_the_files_from_one_read_are_those_each_part_read_for_itself(study, tmp_path):
    summary = write_study_outputs(study, str(tmp_path), planned_trials=7)
    states = {t.number: t.state.name for t in study.get_trials()}
    assert "PRUNED" in states.values() and "FAIL" in states.values()  # every kind of trial is counted
    assert summary.to_dict() == study_summary(study, 7).to_dict()
    table = json.loads((tmp_path / "trials.json").read_text())
    assert table == json.loads(json.dumps([r.__dict__ for r in study_table(study)], default=str))


def test_the_files_of_trials_read_by_the_caller_read_nothing_more(study, tmp_path, monkeypatch):
    own, given = tmp_path / "own", tmp_path / "given"
    write_study_outputs(study, str(own), planned_trials=7)
    trials = study.get_trials(deepcopy=False)
    reads = _counting_reads(study, monkeypatch)
    write_study_outputs(study, str(given), planned_trials=7, trials=trials)
    assert reads == []
    assert {p.name: p.read_bytes() for p in given.iterdir()} == {
        p.name: p.read_bytes() for p in own.iterdir()
    }


def _samples(registry) -> dict:
    """Every sample's value by name and labels, less the counters' creation times."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for m in registry.collect()
        for s in m.samples
        if not s.name.endswith("_created")
    }


def test_the_study_gauges_of_trials_read_by_the_caller_read_nothing_more(study, monkeypatch):
    own, given = CollectorRegistry(), CollectorRegistry()
    TrialMetrics(own, 7).update_study(study)
    trials = study.get_trials(deepcopy=False)
    reads = _counting_reads(study, monkeypatch)
    TrialMetrics(given, 7).update_study(study, trials)
    assert reads == [] and _samples(given) == _samples(own)
    assert given.get_sample_value("foxhunt_study_finished_trials") == 7


def test_a_trial_is_found_by_its_number_without_reading_the_study(study, monkeypatch):
    listed = {t.number: t for t in study.get_trials()}
    reads = _counting_reads(study, monkeypatch)
    for number, trial in listed.items():
        assert trial_by_number(study, number) == trial
    assert reads == []


def test_a_trial_found_by_its_number_is_a_copy(study):
    found = trial_by_number(study, 0)
    found.user_attrs.clear()
    found.intermediate_values.clear()
    again = trial_by_number(study, 0)
    assert again.user_attrs and len(again.intermediate_values) == 4


def test_the_trial_line_counts_the_finished_trials_it_is_given(study):
    trial = trial_by_number(study, 2)
    assert _trial_line(trial, 5, 7) == "trial 2 complete objective 0.2; 5/7 finished"
