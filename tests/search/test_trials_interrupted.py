"""A study stopped inside a trial (killed, SIGTERM) resumes and ends like an uninterrupted one; two workers share one study."""

from __future__ import annotations

import json
import signal
import time

import pytest
from support.run_cases import start_train
from support.search_cases import LR_ONLY, SEARCH_ARGS, read_json, search_argv

from foxhunt.cli import main

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow


def long_search_argv(fxcache, out, params, trials: int) -> list[str]:
    """A search whose folds last long enough (8 epochs) for a signal to land inside one."""
    return [
        "train", "--fxcache", str(fxcache), "--out", str(out), "--hyperopt-params", str(params),
        *SEARCH_ARGS, "--epochs", "8", "--device", "cpu", "--trials", str(trials),
        "--search-space", str(params.parent / "lr.json"),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def uninterrupted(tiny_fxcache, tiny_params, tmp_path_factory):
    """The trials of an uninterrupted long search: {params as JSON: objective}."""
    (tiny_params.parent / "lr.json").write_text(json.dumps(LR_ONLY))
    out = tmp_path_factory.mktemp("uninterrupted") / "out"
    assert main(long_search_argv(tiny_fxcache, out, tiny_params, 2)) == 0
    return {json.dumps(r["params"]): r["objective"] for r in read_json(out / "trials.json")}


def test_a_search_killed_inside_a_trial_retries_that_trial_and_finishes_like_an_uninterrupted_one(
    uninterrupted, tiny_fxcache, tiny_params, tmp_path
):
    out = tmp_path / "out"
    argv = long_search_argv(tiny_fxcache, out, tiny_params, 2)
    first = start_train(argv, tmp_path / "first.log")
    first.wait_for("trial 1 fold 0 epoch 2/")
    first.process.kill()
    first.finish()

    second = start_train(argv, tmp_path / "second.log")
    assert second.finish() == 0, second.output()
    rows = read_json(out / "trials.json")
    assert [(r["number"], r["state"]) for r in rows] == [(0, "COMPLETE"), (1, "FAIL"), (2, "COMPLETE")]
    assert rows[2]["retry_of"] == 1 and rows[1]["retried_as"] == 2 and rows[2]["params"] == rows[1]["params"]
    assert "trial 0 fold" not in second.output()  # the completed trial is not trained again
    finished = {json.dumps(r["params"]): r["objective"] for r in rows if r["state"] == "COMPLETE"}
    assert finished == uninterrupted
    assert read_json(out / "study.json")["finished_trials"] == 2


def test_sigterm_inside_a_trial_ends_interrupted_and_the_same_command_finishes_the_study(
    uninterrupted, tiny_fxcache, tiny_params, tmp_path
):
    out = tmp_path / "out"
    argv = long_search_argv(tiny_fxcache, out, tiny_params, 2)
    first = start_train(argv, tmp_path / "first.log")
    first.wait_for("trial 1 fold 0 epoch 2/")
    first.process.send_signal(signal.SIGTERM)
    assert first.finish() == 143, first.output()
    assert read_json(out / "summary.json")["status"] == "interrupted"
    assert [r["state"] for r in read_json(out / "trials.json")] == ["COMPLETE", "FAIL"]

    second = start_train(argv, tmp_path / "second.log")
    assert second.finish() == 0, second.output()
    rows = read_json(out / "trials.json")
    assert [r["state"] for r in rows] == ["COMPLETE", "FAIL", "COMPLETE"] and rows[2]["retry_of"] == 1
    assert {
        json.dumps(r["params"]): r["objective"] for r in rows if r["objective"] is not None
    } == uninterrupted
    assert read_json(out / "summary.json")["status"] == "succeeded"


def test_a_population_search_killed_mid_fold_retries_every_member_with_its_settings(
    uninterrupted, tiny_fxcache, tiny_params, tmp_path
):
    out = tmp_path / "out"
    argv = [*long_search_argv(tiny_fxcache, out, tiny_params, 2), "--population", "2"]
    first = start_train(argv, tmp_path / "first.log")
    first.wait_for("trials 0, 1 fold 0 epoch 2/")
    first.process.kill()
    first.finish()

    second = start_train(argv, tmp_path / "second.log")
    assert second.finish() == 0, second.output()
    rows = read_json(out / "trials.json")
    assert [r["state"] for r in rows] == ["FAIL", "FAIL", "COMPLETE", "COMPLETE"]
    assert [(r["retry_of"], r["params"]) for r in rows[2:]] == [
        (0, rows[0]["params"]),
        (1, rows[1]["params"]),
    ]
    assert {json.dumps(r["params"]) for r in rows[2:]} == set(uninterrupted)
    assert read_json(out / "study.json")["finished_trials"] == 2


# ---- workers sharing one study (the Argo fan-out) ------------------------------------------------------------


@pytest.mark.services
def test_two_trial_workers_on_one_postgres_study_finish_exactly_n_trials_between_them(
    postgres_server, tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    url = postgres_server.create_database(f"workers_{time.time_ns()}")
    workers = []
    for worker in range(2):
        monkeypatch.setenv("FOXHUNT_TRIAL_WORKER", str(worker))  # start_train passes the environment on
        argv = search_argv(
            tiny_fxcache, tmp_path / f"worker-{worker}", tiny_params, 4,
            "--study-storage", url, "--study-name", "shared", "--run-id", f"shared-worker-{worker}",
        )  # fmt: skip
        # A worker whose last trial ended looks for the other's every second, not every 30 s heartbeat.
        workers.append(start_train(argv, tmp_path / f"worker-{worker}.log", trial_poll_s=1.0))
    for process in workers:
        assert process.finish() == 0, process.output()

    tables = [read_json(tmp_path / f"worker-{w}" / "trials.json") for w in range(2)]
    finished = [r for r in tables[0] if r["state"] in ("COMPLETE", "PRUNED")]
    assert len(finished) == 4 and tables[0] == tables[1]  # each worker writes the whole study's table
    ran_here = [
        sorted(int(p.name) for p in (tmp_path / f"worker-{w}").glob("trials/[0-9]*")) for w in range(2)
    ]
    assert sorted(ran_here[0] + ran_here[1]) == sorted(r["number"] for r in finished)  # none twice, none lost
    assert all(r["worker"] == w for w in range(2) for r in finished if r["number"] in ran_here[w])
    best = read_json(tmp_path / "worker-0" / "best_params.json")
    assert best == read_json(tmp_path / "worker-1" / "best_params.json")
    assert read_json(tmp_path / "worker-1" / "manifest.json")["search"]["storage"] == url
