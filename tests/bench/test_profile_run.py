"""bench/profile_run.py, its CPU check in a process of its own (the CLI takes its process over): a real slice's
`foxhunt train` profiled, the run's own functions in profile.txt, each epoch's figures timed with and without
the diagnostics. The profiled run starts in the background when the session starts
(tests/support/background_runs.py)."""

import json
import os
import sys
from pathlib import Path

import pytest
from support.background_runs import background_process, one_thread

ROOT = Path(__file__).resolve().parents[2]

FLAGS = ["--train-days", "8", "--val-days", "3", "--step-days", "3", "--max-folds", "1", "--epochs", "2",
         "--device", "cpu", "--diagnostics-every", "2"]  # fmt: skip


# `bench/profile_run.py` on a real slice as a process of its own, queued in the background.
PROFILE_BARS = str(ROOT / "tests" / "data" / "EURUSD_M1_2018_head.parquet")
PROFILE_ENV = one_thread(
    {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "trainer_image"), str(ROOT / "bench")])}
)
profiled = background_process("profiled", "profile", lambda folder: [
        sys.executable, str(ROOT / "bench" / "profile_run.py"), str(folder), "--bars", PROFILE_BARS,
        "--time-figures", "--top", "60", "--", *FLAGS], lambda _: PROFILE_ENV)  # fmt: skip


@pytest.fixture
def out(profiled):
    done, folder = profiled
    assert done.returncode == 0, done.stderr[-2000:]
    return folder


def test_the_profile_names_the_runs_own_functions(out):
    text = (out / "profile.txt").read_text()
    assert "walk_folds" in text and "train_epoch" in text and "figures_vector on the device" in text


def test_each_epochs_figures_are_timed_with_and_without_the_diagnostics(out):
    figures = json.loads((out / "profile.json").read_text())["figures_seconds"]
    assert (
        figures["diagnose"]["calls"] == 1 and figures["tail only"]["calls"] == 1
    )  # epoch 1 of 2, then the last
    assert all(f["median"] > 0 for f in figures.values())
