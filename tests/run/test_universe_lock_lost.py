"""A universe run whose `--out` lock another run took over while it stalled ends as a single run does: its
heartbeat notices, the next boundary check (here, after the epoch under way) fails the run with exit 1 and
the single run's line naming the lock, summary.json says "failed" with that error and each instrument's
completed folds, the metrics are told "failed", and the other run's lock is left where it is."""

from __future__ import annotations

import json

import pytest
from support.lock_takeover import THIEF, lock_taken_over
from support.stop_attempts import Attempt
from support.stop_attempts import attempt as stopped_attempt
from support.two_instruments import NAMES, train, write_small_params, write_two_caches

from foxhunt.run.lock import LOCK_NAME, LockHolder


@pytest.fixture(scope="module")
def caches(tmp_path_factory) -> dict[str, str]:
    return write_two_caches(tmp_path_factory.mktemp("universe"))


@pytest.fixture(scope="module")
def params(tmp_path_factory) -> str:
    return write_small_params(tmp_path_factory.mktemp("params"))


def attempt(caches, params, out, names=NAMES) -> Attempt:
    """`foxhunt train` on `names` (2 folds of 2 epochs), its lock taken over in fold 1."""
    return stopped_attempt(
        lambda: train(caches, params, out, names=names), lambda patch: lock_taken_over(out, 1, patch)
    )


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
