"""Runs that survive the cluster: resume after SIGKILL or SIGTERM, one run per --out, no mixed outputs."""

from __future__ import annotations

import signal

import pytest
from support import strict_json
from support.run_cases import EPOCHS, completed_folds, fold_outputs, start_train, train_argv

from foxhunt.cli import main

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reference(tiny_fxcache, tiny_params, tmp_path_factory):
    """An uninterrupted run's outputs, per fold."""
    out = tmp_path_factory.mktemp("reference") / "out"
    assert main(train_argv(tiny_fxcache, out, tiny_params)) == 0
    return fold_outputs(out)


def test_a_run_killed_inside_fold_1_resumes_to_the_uninterrupted_result(
    reference, tiny_fxcache, tiny_params, tmp_path
):
    out = tmp_path / "out"
    argv = train_argv(tiny_fxcache, out, tiny_params)
    first = start_train(argv, tmp_path / "first.log")
    first.wait_for("fold 1 epoch 3/")
    first.process.kill()
    first.finish()
    assert completed_folds(out) == [0]  # killed inside fold 1, after fold 0 completed

    second = start_train(argv, tmp_path / "second.log")
    assert second.finish() == 0, second.output()
    log = second.output()
    assert "fold 0 skipped: completed by an earlier attempt" in log
    assert "fold 0 epoch" not in log  # fold 0 is not trained a second time
    assert f"fold 1 epoch {EPOCHS}/{EPOCHS}" in log  # fold 1 is trained again from its beginning
    assert fold_outputs(out) == reference
    summary = strict_json.read(out / "summary.json")
    assert summary["status"] == "succeeded" and summary["resumed_folds"] == [0]


@pytest.mark.parametrize(("signum", "exit_code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_the_run_interrupted_and_the_same_command_resumes_it(
    signum, exit_code, reference, tiny_fxcache, tiny_params, tmp_path
):
    out = tmp_path / "out"
    argv = train_argv(tiny_fxcache, out, tiny_params)
    first = start_train(argv, tmp_path / "first.log")
    first.wait_for("fold 1 epoch 3/")
    first.process.send_signal(signum)
    assert first.finish() == exit_code, first.output()
    summary = strict_json.read(out / "summary.json")
    assert summary["status"] == "interrupted"
    assert [f["fold"] for f in summary["folds"]] == [0]
    assert completed_folds(out) == [0]
    assert not (out / "run.lock").exists()  # released on the way out
    assert "the same command resumes" in first.output().splitlines()[-1]

    second = start_train(argv, tmp_path / "second.log")
    assert second.finish() == 0, second.output()
    assert fold_outputs(out) == reference


def test_two_runs_started_together_into_one_out_cannot_interleave(
    reference, tiny_fxcache, tiny_params, tmp_path
):
    out = tmp_path / "out"
    runs = [
        start_train(
            train_argv(tiny_fxcache, out, tiny_params, "--run-id", f"together-{i}"), tmp_path / f"{i}.log"
        )
        for i in range(2)
    ]
    codes = sorted(run.finish() for run in runs)
    assert codes == [0, 2], [run.output() for run in runs]
    refused = next(run for run in runs if run.process.returncode == 2).output()
    winner = next(run for run in runs if run.process.returncode == 0)
    assert "held by run together-" in refused and "\n" not in refused.strip()
    assert winner.output().count("fold 0 epoch 1/") == 1
    assert fold_outputs(out) == reference


def test_a_run_started_while_another_trains_refuses_naming_it(reference, tiny_fxcache, tiny_params, tmp_path):
    out = tmp_path / "out"
    first = start_train(
        train_argv(tiny_fxcache, out, tiny_params, "--run-id", "first-run"), tmp_path / "1.log"
    )
    first.wait_for("fold 0 epoch 2/")
    second = start_train(
        train_argv(tiny_fxcache, out, tiny_params, "--run-id", "second-run"), tmp_path / "2.log"
    )
    assert second.finish() == 2
    assert "held by run first-run" in second.output()
    assert first.finish() == 0
    assert fold_outputs(out) == reference
