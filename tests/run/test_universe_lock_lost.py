"""A universe run whose `--out` lock another run took over while it stalled ends as a single run does: its
heartbeat notices, the next boundary check (here, after the epoch under way) fails the run with exit 1 and
the single run's line naming the lock, summary.json says "failed" with that error and each instrument's
completed folds, the metrics are told "failed", and the other run's lock is left where it is."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass

import pytest
from support.lock_takeover import THIEF, lock_taken_over
from support.universe_cases import three_instruments, write_caches

from foxhunt.cli import main
from foxhunt.run.lock import LOCK_NAME, LockHolder
from foxhunt.run.sinks.telemetry import RunMetrics

DAYS = 12
FOLDS = ["--train-days", "4", "--val-days", "2", "--step-days", "2", "--max-folds", "2"]
NAMES = ("fx00", "exchange01")


@pytest.fixture(scope="module")
def caches(tmp_path_factory) -> dict[str, str]:
    return write_caches(tmp_path_factory.mktemp("universe"), three_instruments(DAYS)[:2])


@pytest.fixture(scope="module")
def params(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("params") / "params.json"
    path.write_text(json.dumps({"dqn": {"hidden": 16, "steps_per_epoch": 20}}))
    return str(path)


@dataclass(frozen=True)
class Attempt:
    """A run whose lock was taken over: its exit code, console, error line and the endings its metrics were
    told of."""

    code: int
    console: str
    line: str
    endings: list[str]


def attempt(caches, params, out, names=NAMES) -> Attempt:
    """`foxhunt train` on `names` (2 folds of 2 epochs), its lock taken over in fold 1."""
    args = ["train", "--out", str(out), "--device", "cpu", "--epochs", "2", *FOLDS]
    args += ["--hyperopt-params", params]
    for name in names:
        args += ["--fxcache", caches[name]]
    endings: list[str] = []
    run_finished = RunMetrics.run_finished

    def told(self, status: str) -> None:
        endings.append(status)
        run_finished(self, status)

    console, errors = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        lock_taken_over(out, 1, patch)
        patch.setattr(RunMetrics, "run_finished", told)
        with contextlib.redirect_stdout(console), contextlib.redirect_stderr(errors):
            code = main(args)
    return Attempt(code, console.getvalue(), errors.getvalue().strip(), endings)


@pytest.fixture(scope="module")
def lost(caches, params, tmp_path_factory) -> tuple[object, Attempt]:
    out = tmp_path_factory.mktemp("lost") / "out"
    return out, attempt(caches, params, out)


@pytest.fixture(scope="module")
def ordinary(caches, params, tmp_path_factory) -> tuple[object, Attempt]:
    """One instrument's run whose lock is taken over alike: what a universe run is held to."""
    out = tmp_path_factory.mktemp("ordinary") / "out"
    return out, attempt(caches, params, out, names=NAMES[:1])


def summary(out) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_the_run_fails_with_exit_1_and_a_single_runs_line_naming_the_lock(lost, ordinary):
    (out, run), (ordinary_out, held_to) = lost, ordinary
    assert run.code == held_to.code == 1
    assert run.line == held_to.line.replace(str(ordinary_out), str(out))
    assert run.line == (
        f"foxhunt train: failed: fold 1 failed: {out / LOCK_NAME}: the lock was taken over by another run "
        f"while this one stalled; 1 completed fold(s) and summary.json are in {out}"
    )


def test_the_epoch_under_way_finishes_and_the_next_never_starts(lost):
    console = lost[1].console
    assert "fold 1 epoch 1/2" in console and "fold 1 epoch 2/2" not in console


def test_the_summary_says_failed_with_the_error_and_each_instruments_completed_folds(lost, ordinary):
    (out, _), (ordinary_out, _) = lost, ordinary
    error = f"RunFailure: {out / LOCK_NAME}: the lock was taken over by another run while this one stalled"
    assert summary(out)["status"] == summary(ordinary_out)["status"] == "failed"
    assert summary(out)["error"] == error
    assert summary(ordinary_out)["error"] == error.replace(str(out), str(ordinary_out))
    assert {i["name"]: i["folds"] for i in summary(out)["instruments"]} == {"fx00": [0], "exchange01": [0]}


def test_the_metrics_are_told_the_run_failed(lost):
    assert lost[1].endings == ["failed"]


def test_the_lock_of_the_run_that_took_it_over_is_left_in_place(lost, ordinary):
    for out, _ in (lost, ordinary):
        assert LockHolder.from_bytes((out / LOCK_NAME).read_bytes()).run_id == THIEF
