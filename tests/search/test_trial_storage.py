"""Where a study lives: the embedded SQLite file synced to object storage, storage URLs that cannot
be used, and worker processes sharing one study (a worker killed mid-fold; three workers at once)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from support.trials_worker import SPACE, cheap_score, one_at_a_time

from foxhunt.errors import BadInput, RunFailure
from foxhunt.search.space import parse_search_space
from foxhunt.search.storage import STUDY_FILE, fetch_study_file, redacted, sync_study_file
from foxhunt.search.study import open_study, trial_by_number
from foxhunt.search.trial_loop import run_trials

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

WORKER = Path(__file__).resolve().parents[1] / "support" / "trials_worker.py"
TEST_SPACE = parse_search_space(SPACE, "test space")
optuna.logging.set_verbosity(optuna.logging.WARNING)


def _study(tmp_path, name="s"):
    return open_study(None, tmp_path, name, seed=5, heartbeat_seconds=1, grace_seconds=2)


def _steady(number, params, report_fold):
    score = cheap_score(params)
    for fold in range(3):
        if report_fold(fold, score):
            return score
    return score


def test_the_study_file_synced_to_object_storage_reopens_as_the_same_study(tmp_path, moto_s3):
    study = _study(tmp_path / "pod1")
    run_trials(study, 3, one_at_a_time(_steady), space=TEST_SPACE, seed=5)
    out = moto_s3.uri("run")
    sync_study_file(tmp_path / "pod1" / STUDY_FILE, out)
    assert fetch_study_file(out, tmp_path / "pod2") == tmp_path / "pod2" / STUDY_FILE
    resumed = _study(tmp_path / "pod2")
    assert [t.params for t in resumed.get_trials()] == [t.params for t in study.get_trials()]
    assert run_trials(resumed, 4, one_at_a_time(_steady), space=TEST_SPACE, seed=5).finished == 4
    assert fetch_study_file(moto_s3.uri("nothing-here"), tmp_path / "pod3") is None


# ---- storage --------------------------------------------------------------------------------------


def test_a_study_storage_url_that_is_not_usable_is_bad_input_without_its_password(tmp_path):
    with pytest.raises(BadInput) as err:
        open_study("nosuchdb://admin:hunter2@db.example/foxhunt", tmp_path, "s", seed=0)
    assert "nosuchdb://admin:***@db.example/foxhunt" in str(err.value) and "hunter2" not in str(err.value)
    with pytest.raises(BadInput, match="not a usable SQLAlchemy URL"):
        open_study("hunter2", tmp_path, "s", seed=0)


def test_a_string_that_is_no_url_is_shown_without_any_of_it_but_a_scheme():
    assert redacted("pg:/admin:hunter2@db") == "(not a URL)"
    assert redacted("hunter2") == "(not a URL)"
    assert redacted("nosuch://admin:hunter2@db.example/x") == "nosuch://admin:***@db.example/x"


def test_an_unreachable_study_server_is_a_run_failure_without_its_password(tmp_path):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    url = f"postgresql://admin:hunter2@127.0.0.1:{port}/foxhunt"
    with pytest.raises(RunFailure) as err:
        open_study(url, tmp_path, "s", seed=0)
    assert redacted(url) in str(err.value) and "hunter2" not in str(err.value) and "\n" not in str(err.value)


# ---- worker processes -----------------------------------------------------------------------------


def _worker(url, study, n, worker, log, *extra):
    return subprocess.Popen(
        [sys.executable, str(WORKER), url, study, str(n), str(worker), str(log), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _finish(proc, timeout=120):
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out.decode()[-3000:]


def _counted(study):
    return [t for t in study.get_trials() if t.state.name in ("COMPLETE", "PRUNED")]


@pytest.mark.services
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_worker_killed_mid_fold_loses_only_its_trial_which_is_retried_and_the_study_completes(
    tmp_path, backend, request
):
    url = (
        request.getfixturevalue("postgres_url")
        if backend == "postgresql"
        else f"sqlite:///{tmp_path}/{STUDY_FILE}"
    )
    name, log, hold = f"kill-{backend}-{tmp_path.name}", tmp_path / "work.log", tmp_path / "holding"
    doomed = _worker(url, name, 3, 0, log, "--hold", str(hold))
    deadline = time.monotonic() + 60
    while not hold.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert hold.exists(), (
        doomed.communicate(timeout=5)[0].decode()[-3000:] if doomed.poll() is not None else ""
    )
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait(timeout=10)
    _finish(_worker(url, name, 3, 1, log))

    study = optuna.load_study(study_name=name, storage=url)
    killed = trial_by_number(study, int(hold.read_text()))
    retries = [t for t in study.get_trials() if t.system_attrs.get("retry_history") == [killed.number]]
    assert killed.state.name == "FAIL" and killed.intermediate_values == {0: cheap_score(killed.params)}
    assert len(retries) == 1 and retries[0].params == killed.params and retries[0].state.name != "FAIL"
    assert len(_counted(study)) == 3
    ran = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(r["trial"] for r in ran) == sorted(t.number for t in _counted(study))


@pytest.mark.services
def test_three_workers_on_one_postgres_study_finish_exactly_n_trials_none_lost_or_duplicated(
    tmp_path, postgres_server
):
    # A fresh database: the workers also race to create Optuna's tables.
    url = postgres_server.create_database(f"three_{time.time_ns()}")
    name, log, n = "three", tmp_path / "work.log", 9
    workers = [_worker(url, name, n, w, log, "--fold-seconds", "0.05") for w in range(3)]
    for proc in workers:
        _finish(proc)
    study = optuna.load_study(study_name=name, storage=url)
    counted = _counted(study)
    assert len(counted) == n
    assert len({json.dumps(t.params, sort_keys=True) for t in counted}) == n
    ran = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(r["trial"] for r in ran) == sorted(t.number for t in counted)
    assert all(r["params"] == trial_by_number(study, r["trial"]).params for r in ran)
    assert not [t for t in study.get_trials() if t.state.name == "RUNNING"]
