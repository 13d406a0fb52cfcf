"""A universe run stopped by SIGTERM (a pod's preemption) or SIGINT (Ctrl-C) ends as a single run does:
the signal asks it to stop at its next boundary (between epochs, between folds), and the run ends with
exit 128 + the signal and the single run's line (where it stopped, what it kept, that the same command
resumes), summary.json with status "interrupted" and each instrument's completed folds, the metrics told
"interrupted", the lock released and the signal handlers as they were before it. That summary does not
finish the run: the same command takes the completed folds over, to the records of a run never stopped."""

from __future__ import annotations

import json
import os
import shutil
import signal

import pytest
from support.stop_attempts import Attempt, Deliver
from support.stop_attempts import attempt as stopped_attempt
from support.two_instruments import NAMES, train, write_small_params, write_two_caches

from foxhunt.run import universe_run
from foxhunt.run.lock import LOCK_NAME
from foxhunt.run.universe_failure import finished
from foxhunt.run.universe_resume import UniverseLedger
from foxhunt.train import DQNTrainer

HOLDOUT = ("--holdout-days", "2")  # the held-out fold is fold 2, after folds 0 and 1


@pytest.fixture(scope="module")
def caches(tmp_path_factory) -> dict[str, str]:
    return write_two_caches(tmp_path_factory.mktemp("universe"))


@pytest.fixture(scope="module")
def params(tmp_path_factory) -> str:
    return write_small_params(tmp_path_factory.mktemp("params"))


def attempt(caches, params, out, deliver: Deliver, *extra: str, names=NAMES) -> Attempt:
    """`train` with a signal delivered as `deliver` patches it (`stop_attempts.attempt`)."""
    return stopped_attempt(lambda: train(caches, params, out, *extra, names=names), deliver)


def in_epoch(signum: int, fold: int, epoch: int) -> Deliver:
    """`signum` sent to this process as epoch `epoch` of fold `fold` begins (it trains on)."""

    def deliver(patch: pytest.MonkeyPatch) -> None:
        original = DQNTrainer.train_epoch

        def train_epoch(self, at, epochs, *args, **kwargs):
            if self.window.fold.fold == fold and at == epoch:
                os.kill(os.getpid(), signum)
            return original(self, at, epochs, *args, **kwargs)

        patch.setattr(DQNTrainer, "train_epoch", train_epoch)

    return deliver


def summary(out) -> dict:
    return json.loads((out / "summary.json").read_text())


def completed(out) -> dict[str, list[int]]:
    return {i["name"]: i["folds"] for i in summary(out)["instruments"]}


@pytest.fixture(scope="module", params=[signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def signum(request) -> int:
    return request.param


@pytest.fixture(scope="module")
def stop_runs(caches, params, tmp_path_factory):
    """The universe run that a signal reaches in fold 1's first epoch (of two), made once per signal: its
    --out (kept untouched: tests copy it) and the attempt."""
    made: dict[int, tuple[object, Attempt]] = {}

    def stopped_by(signum: int) -> tuple[object, Attempt]:
        if signum not in made:
            out = tmp_path_factory.mktemp("stopped") / "out"
            made[signum] = out, attempt(caches, params, out, in_epoch(signum, 1, 0))
        return made[signum]

    return stopped_by


@pytest.fixture(scope="module")
def stopped(signum, stop_runs) -> tuple[object, Attempt]:
    """The universe run `signum` stopped in fold 1's first epoch."""
    return stop_runs(signum)


@pytest.fixture(scope="module")
def ordinary(signum, caches, params, tmp_path_factory) -> tuple[object, Attempt]:
    """One instrument's run stopped alike: what a universe run's stop is held to."""
    out = tmp_path_factory.mktemp("ordinary") / "out"
    return out, attempt(caches, params, out, in_epoch(signum, 1, 0), names=NAMES[:1])


@pytest.fixture(scope="module")
def reference(caches, params, tmp_path_factory):
    """The same command never stopped."""
    out = tmp_path_factory.mktemp("reference") / "out"
    assert train(caches, params, out)[0] == 0
    return out


@pytest.fixture(scope="module")
def resumed(stop_runs, caches, params, tmp_path_factory) -> tuple[object, str]:
    """The same command again on a copy of the SIGTERM-stopped run's --out (either signal leaves the same
    interrupted summary, which the exit tests check per signal): the folder and its console."""
    out = tmp_path_factory.mktemp("resumed") / "out"
    shutil.copytree(stop_runs(signal.SIGTERM)[0], out)
    assert summary(out)["status"] == "interrupted"  # what the same command finds and resumes
    code, console, line = train(caches, params, out)
    assert code == 0, line
    return out, console


def test_the_run_exits_with_128_plus_the_signal_and_a_single_runs_line(signum, stopped, ordinary):
    (out, run), (ordinary_out, held_to) = stopped, ordinary
    assert run.code == held_to.code == 128 + signum
    assert run.line == held_to.line.replace(str(ordinary_out), str(out))
    assert run.line == (
        f"foxhunt train: interrupted: stopped by {signal.Signals(signum).name} during fold 1; "
        f"1 completed fold(s) and summary.json are in {out}; the same command resumes"
    )


def test_the_epoch_under_way_finishes_and_the_next_never_starts(stopped):
    console = stopped[1].console
    assert "fold 1 epoch 1/2" in console and "fold 1 epoch 2/2" not in console


def test_the_summary_says_interrupted_with_each_instruments_completed_folds(signum, stopped):
    out = stopped[0]
    assert summary(out)["status"] == "interrupted"
    assert summary(out)["error"] == f"stopped by {signal.Signals(signum).name} during fold 1"
    assert completed(out) == {"fx00": [0], "exchange01": [0]}
    assert sorted(json.loads((out / "manifest.json").read_text())["folds"]) == ["0"]
    assert not (out / "instruments" / "fx00" / "fold_1" / "report.json").exists()


def test_the_metrics_are_told_the_run_was_interrupted(stopped):
    assert stopped[1].endings == ["interrupted"]


def test_the_interrupted_run_leaves_no_lock_behind(stopped):
    out = stopped[0]
    assert summary(out)["status"] == "interrupted" and not (out / LOCK_NAME).exists()


def test_the_run_handles_the_stop_signals_while_it_lives_and_restores_those_before_it(stopped):
    assert stopped[1].handled_while_training and stopped[1].handlers_kept


def test_an_interrupted_attempts_summary_does_not_finish_the_run_a_completed_ones_does(tmp_path):
    interrupted, done = tmp_path / "interrupted.json", tmp_path / "completed.json"
    interrupted.write_text(json.dumps({"status": "interrupted", "error": "stopped by SIGTERM during fold 1"}))
    done.write_text(json.dumps({"status": "completed"}))
    assert not finished(str(interrupted)) and finished(str(done))


def test_the_same_command_takes_over_the_completed_fold_and_trains_the_rest(resumed):
    _, console = resumed
    assert "resuming: 1 universe fold(s) completed by an earlier attempt taken over" in console
    assert "fold 0 epoch" not in console and "fold 1 epoch 2/2" in console


def test_the_resumed_records_equal_an_uninterrupted_runs_bit_for_bit(resumed, reference):
    out, _ = resumed
    for name in NAMES:
        for record in ("stitched.json", "series.npz", "fold_1/positions.npy", "fold_1/weights.pt"):
            assert (out / "instruments" / name / record).read_bytes() == (
                reference / "instruments" / name / record
            ).read_bytes(), f"{name}/{record}"
    assert (out / "book.json").read_bytes() == (reference / "book.json").read_bytes()


def test_the_resumed_summary_equals_an_uninterrupted_runs_but_for_its_timings(resumed, reference):
    timings = ("run_seconds", "data_load_seconds")
    mine, theirs = (
        {k: v for k, v in summary(o).items() if k not in timings} for o in (resumed[0], reference)
    )
    assert mine == theirs and mine["status"] == "completed"


def test_a_signal_as_a_fold_is_recorded_stops_the_run_before_the_next_fold(caches, params, tmp_path):
    def deliver(patch: pytest.MonkeyPatch) -> None:
        record = UniverseLedger.record

        def recorded(self, done):
            record(self, done)
            os.kill(os.getpid(), signal.SIGTERM)

        patch.setattr(UniverseLedger, "record", recorded)

    run = attempt(caches, params, tmp_path / "out", deliver)
    assert run.code == 143 and "interrupted: stopped by SIGTERM after fold 0; 1 completed" in run.line
    assert "fold 1 epoch" not in run.console
    assert completed(tmp_path / "out") == {"fx00": [0], "exchange01": [0]}


def test_a_signal_in_the_held_out_fold_names_it_as_a_single_run_does(caches, params, tmp_path):
    # In its last epoch: the check after the epochs, before the fold's validation, stops it.
    run = attempt(caches, params, tmp_path / "out", in_epoch(signal.SIGTERM, 2, 1), *HOLDOUT)
    assert run.code == 143 and run.line.startswith(
        "foxhunt train: interrupted: stopped by SIGTERM during the held-out fold; 2 completed fold(s)"
    )
    assert summary(tmp_path / "out")["status"] == "interrupted"
    assert completed(tmp_path / "out") == {"fx00": [0, 1], "exchange01": [0, 1]}


def test_a_signal_between_the_folds_and_the_held_out_fold_says_after_which_fold_it_stopped(
    caches, params, tmp_path
):
    def deliver(patch: pytest.MonkeyPatch) -> None:
        write_book = universe_run.write_book

        def signalled(*args, **kwargs):  # the signal comes while the book is combined
            os.kill(os.getpid(), signal.SIGTERM)
            return write_book(*args, **kwargs)

        patch.setattr(universe_run, "write_book", signalled)

    run = attempt(caches, params, tmp_path / "out", deliver, *HOLDOUT)
    assert run.code == 143 and "interrupted: stopped by SIGTERM after fold 1; 2 completed" in run.line
    assert "holdout fold 2 epoch" not in run.console
