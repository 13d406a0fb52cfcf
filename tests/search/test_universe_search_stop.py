"""A search over a universe stopped by SIGTERM (a pod's preemption) or SIGINT (Ctrl-C) ends as the
single-instrument search does: the trial under way stops at its next boundary and is queued for a retry
with its settings, the study's files are written, summary.json says "interrupted", and the search exits
128 + the signal with a line saying where it stopped, what it kept and that the same command resumes,
which it does: the retry trains, the finished trial is not trained again, and the study ends as one never
stopped. Its `--out` lock taken over by another run fails it (exit 1) at the same boundaries."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal

import pytest
from support.lock_takeover import THIEF, lock_taken_over
from support.search_cases import LR_ONLY
from support.stop_attempts import Attempt, Deliver
from support.stop_attempts import attempt as stopped_attempt
from support.universe_cases import three_instruments, write_caches

from foxhunt import storage
from foxhunt.cli import main
from foxhunt.run.lock import LOCK_NAME, LockHolder
from foxhunt.search.trial_loop import AskedTrial
from foxhunt.train import DQNTrainer

DAYS = 12
FOLDS = ["--train-days", "4", "--val-days", "2", "--step-days", "2", "--max-folds", "2"]
NAMES = ("fx00", "exchange01")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    """Both instruments' fxcaches, a small network's settings (the tail gate off: every trial trades) and a
    search space of the learning rate alone."""
    folder = tmp_path_factory.mktemp("universe")
    files = write_caches(folder, three_instruments(DAYS)[:2])
    for name, content in (
        ("params", {"dqn": {"hidden": 16, "steps_per_epoch": 20, "select_tail_share": 0.0}}),
        ("space", LR_ONLY),
    ):
        (folder / f"{name}.json").write_text(json.dumps(content))
        files[name] = str(folder / f"{name}.json")
    return files


def search(inputs, out, *extra: str) -> tuple[int, str, str]:
    """`foxhunt train --trials 2` over both instruments (2 folds of 2 epochs, no trials.png): exit code,
    console, error line."""
    args = ["train", "--out", str(out), "--device", "cpu", "--epochs", "2", *FOLDS, "--trials", "2"]
    args += ["--pictures", "off"]
    args += ["--hyperopt-params", inputs["params"], "--search-space", inputs["space"], *extra]
    for name in NAMES:
        args += ["--fxcache", inputs[name]]
    console, errors = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(console), contextlib.redirect_stderr(errors):
        code = main(args)
    return code, console.getvalue(), errors.getvalue().strip()


def attempt(inputs, out, deliver: Deliver) -> Attempt:
    """`search` with a signal delivered as `deliver` patches it (`stop_attempts.attempt`)."""
    return stopped_attempt(lambda: search(inputs, out), deliver)


def in_trial_1(signum: int) -> Deliver:
    """`signum` sent to this process as trial 1's first epoch begins (it trains on)."""

    def deliver(patch: pytest.MonkeyPatch) -> None:
        original, starts = DQNTrainer.train_epoch, []

        def train_epoch(self, at, epochs, *args, **kwargs):
            if self.window.fold.fold == 0 and at == 0:
                starts.append(at)
                if len(starts) == 2:  # trial 0's fold 0 was the first
                    os.kill(os.getpid(), signum)
            return original(self, at, epochs, *args, **kwargs)

        patch.setattr(DQNTrainer, "train_epoch", train_epoch)

    return deliver


def read(out, name: str):
    return json.loads((out / name).read_text())


def states(out) -> list[tuple[int, str, int | None]]:
    return [(r["number"], r["state"], r["retry_of"]) for r in read(out, "trials.json")]


@pytest.fixture(scope="module", params=[signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def signum(request) -> int:
    return request.param


@pytest.fixture(scope="module")
def stopped(signum, inputs, tmp_path_factory) -> tuple[object, Attempt]:
    """A search that `signum` reaches in trial 1's first epoch: its --out (tests copy it) and the attempt."""
    out = tmp_path_factory.mktemp("stopped") / "out"
    return out, attempt(inputs, out, in_trial_1(signum))


@pytest.fixture(scope="module")
def reference(inputs, tmp_path_factory) -> dict[str, float]:
    """The same search never stopped: {params as JSON: objective}."""
    out = tmp_path_factory.mktemp("reference") / "out"
    code, _, line = search(inputs, out)
    assert code == 0, line
    return {json.dumps(r["params"]): r["objective"] for r in read(out, "trials.json")}


@pytest.fixture(scope="module")
def resumed(stopped, inputs, tmp_path_factory) -> tuple[object, str]:
    """The same command again on a copy of the stopped search's --out: the folder and its console."""
    out = tmp_path_factory.mktemp("resumed") / "out"
    shutil.copytree(stopped[0], out)
    code, console, line = search(inputs, out)
    assert code == 0, line
    return out, console


def test_the_search_exits_with_128_plus_the_signal_and_a_line_saying_the_same_command_resumes(
    signum, stopped
):
    out, run = stopped
    assert run.code == 128 + signum
    assert run.line == (
        f"foxhunt train: interrupted: stopped by {signal.Signals(signum).name} during trial 1 fold 0; "
        f"the study's files (1 of 2 trials finished) and summary.json are in {out}; the same command resumes"
    )


def test_the_epoch_under_way_finishes_and_the_next_never_starts(stopped):
    console = stopped[1].console
    assert "trial 1 fold 0 epoch 1/2" in console and "trial 1 fold 0 epoch 2/2" not in console


def test_the_trial_under_way_is_queued_for_a_retry_and_the_studys_files_are_written(stopped):
    out = stopped[0]
    assert states(out) == [(0, "COMPLETE", None), (1, "FAIL", None)]
    assert read(out, "study.json")["finished_trials"] == 1 and (out / "best_params.json").exists()


def test_the_summary_says_interrupted_with_where_and_the_studys_trials(signum, stopped):
    summary = read(stopped[0], "summary.json")
    assert summary["status"] == "interrupted"
    assert summary["error"] == f"stopped by {signal.Signals(signum).name} during trial 1 fold 0"
    assert (summary["finished_trials"], summary["planned_trials"]) == (1, 2)


def test_the_metrics_are_told_the_search_was_interrupted(stopped):
    assert stopped[1].endings == ["interrupted"]


def test_the_search_handles_the_stop_signals_while_it_trains_and_restores_those_before_it(stopped):
    assert stopped[1].handled_while_training and stopped[1].handlers_kept


def test_the_interrupted_search_leaves_no_lock_behind(stopped):
    assert not (stopped[0] / LOCK_NAME).exists()


def test_the_same_command_retries_the_stopped_trial_and_not_the_finished_one(resumed):
    out, console = resumed
    assert states(out) == [(0, "COMPLETE", None), (1, "FAIL", None), (2, "COMPLETE", 1)]
    rows = read(out, "trials.json")
    assert rows[2]["params"] == rows[1]["params"]
    assert "trial 0 fold" not in console and "trial 2 fold 1 epoch 2/2" in console
    assert "; resumed with 1 finished" in console


def test_the_resumed_study_ends_as_one_never_stopped(resumed, reference):
    out, _ = resumed
    rows = read(out, "trials.json")
    assert {json.dumps(r["params"]): r["objective"] for r in rows if r["state"] == "COMPLETE"} == reference
    assert read(out, "summary.json")["status"] == "succeeded"
    assert read(out, "study.json")["finished_trials"] == 2


def test_a_search_killed_before_its_summary_is_resumed_by_the_same_command(stopped, inputs, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(stopped[0], out)
    (out / "summary.json").unlink()  # a search killed outright writes none
    code, _, line = search(inputs, out)
    assert code == 0, line
    assert [s for _, s, _ in states(out)] == ["COMPLETE", "FAIL", "COMPLETE"]


def test_a_search_stopped_on_s3_is_resumed_with_its_study_fetched_from_there(inputs, moto_s3):
    out = moto_s3.uri("search")
    assert attempt(inputs, out, in_trial_1(signal.SIGTERM)).code == 143
    code, _, line = search(inputs, out)
    assert code == 0, line
    rows = json.loads(storage.read_bytes(storage.join(out, "trials.json")))
    assert [(r["number"], r["state"], r["retry_of"]) for r in rows] == [
        (0, "COMPLETE", None),
        (1, "FAIL", None),
        (2, "COMPLETE", 1),
    ]


def test_the_same_out_with_other_settings_is_refused_naming_what_differs(stopped, inputs, tmp_path, capsys):
    out = tmp_path / "out"
    shutil.copytree(stopped[0], out)
    code, _, line = search(inputs, out, "--epochs", "3")
    assert code == 2
    assert line.startswith(f"foxhunt train: error: {out} holds an unfinished universe search with other")
    assert "epochs: 2 → 3" in line
    assert read(out, "summary.json")["status"] == "interrupted" and len(states(out)) == 2


def test_with_pictures_off_a_universe_search_draws_no_trials_png_and_names_none(resumed):
    out, console = resumed
    outputs = console.splitlines()[-1]
    assert outputs.startswith("outputs: ") and "trials.csv" in outputs and "png" not in outputs
    assert not list(out.rglob("*.png"))


def test_unset_diagnostics_every_a_universe_trial_diagnoses_each_folds_last_epoch_alone(resumed):
    out, _ = resumed
    reports = sorted((out / "trials").rglob("fold_*/report.json"))
    assert reports
    for report in reports:
        epochs = json.loads(report.read_text())["epochs"]
        assert [e["val_sharpe"] is not None for e in epochs] == [False, True], report


def test_a_finished_search_writes_a_succeeded_summary_and_is_not_resumed(resumed, inputs):
    out, _ = resumed
    code, _, line = search(inputs, out)
    assert code == 2 and "holds a run already" in line


def test_a_signal_as_a_trials_fold_completes_stops_it_before_its_next_fold(inputs, tmp_path):
    def deliver(patch: pytest.MonkeyPatch) -> None:
        report_fold = AskedTrial.report_fold

        def reported(self, fold, value, *, last=False):
            os.kill(os.getpid(), signal.SIGTERM)
            return report_fold(self, fold, value, last=last)

        patch.setattr(AskedTrial, "report_fold", reported)

    run = attempt(inputs, tmp_path / "out", deliver)
    assert run.code == 143 and run.line.startswith(
        "foxhunt train: interrupted: stopped by SIGTERM during trial 0; the study's files (0 of 2 trials"
    )
    assert "trial 0 fold 1 epoch" not in run.console and states(tmp_path / "out") == [(0, "FAIL", None)]


@pytest.fixture(scope="module")
def lost(inputs, tmp_path_factory) -> tuple[object, Attempt]:
    """A search whose lock another run takes over as trial 0's fold 1 begins."""
    out = tmp_path_factory.mktemp("lost") / "out"
    return out, attempt(inputs, out, lambda patch: lock_taken_over(out, 1, patch))


def test_a_search_whose_lock_was_taken_over_fails_with_exit_1_naming_the_lock(lost):
    out, run = lost
    assert run.code == 1
    assert run.line == (
        f"foxhunt train: failed: {out / LOCK_NAME}: the lock was taken over by another run while this one "
        "stalled"
    )
    assert "trial 0 fold 1 epoch 1/2" in run.console and "trial 0 fold 1 epoch 2/2" not in run.console


def test_a_search_whose_lock_was_taken_over_writes_a_failed_summary_and_leaves_that_lock(lost):
    out, run = lost
    summary = read(out, "summary.json")
    assert summary["status"] == "failed" and "the lock was taken over" in summary["error"]
    assert run.endings == ["failed"] and states(out) == [(0, "FAIL", None)]
    assert LockHolder.from_bytes((out / LOCK_NAME).read_bytes()).run_id == THIEF
