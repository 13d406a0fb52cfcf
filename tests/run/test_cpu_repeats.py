"""A CPU run repeats bit for bit: the same command in fresh processes gives the same weights and figures at
2 threads, at 1 thread, and after a SIGKILL inside fold 1 and the same command again (issue 32).

The folds' training slices are longer than ATen's grain (32,768 elements), so the in-sample Sharpe, the
baselines' means and the evaluation's sums are the long reductions that torch splits across threads;
the processes run `python -m foxhunt` with the intra-op thread count set through OMP_NUM_THREADS. The
runs that finish untouched start in the background when the session starts (tests/support/background_runs.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import pytest
from support.background_runs import BACKGROUND, STARTERS
from support.reference_figures import run_figures
from support.run_cases import TrainProcess, completed_folds

pytestmark = pytest.mark.slow

EPOCHS = 4
# Two folds of 35 training days (about 38,000 bars each, past the grain) of a network small enough for
# seconds per fold.
ARGS = (
    "--train-days", "35", "--val-days", "5", "--step-days", "5", "--max-folds", "2", "--seed", "7",
)  # fmt: skip
PARAMS = {"dqn": {"hidden": 16, "batch_size": 256, "steps_per_epoch": 4}}
BARS = 60_000


def queue_inputs(request: pytest.FixtureRequest) -> Future:
    """Queue an fxcache of 60,000 generated bars (made in a process of its own) and the small network's
    parameters file; the future of both paths."""

    def make() -> Callable[[], tuple[Path, Path]]:
        work = request.getfixturevalue("tmp_path_factory").mktemp("repeats")
        fxcache, params = work / "bars.fxcache", work / "params.json"
        params.write_text(json.dumps(PARAMS))
        code = (
            "import sys; from foxhunt.run.precompute import precompute; "
            f"precompute(None, sys.argv[1], sample_bars={BARS}, seed=5, progress=lambda _: None)"
        )

        def job() -> tuple[Path, Path]:
            done = BACKGROUND.run([sys.executable, "-c", code, str(fxcache)], timeout=300)
            assert done.returncode == 0, done.stderr
            return fxcache, params

        return job

    return BACKGROUND.start("repeat-inputs", make)


@pytest.fixture(scope="session")
def inputs(request) -> tuple[Path, Path]:
    """An fxcache of 60,000 generated bars and the small network's parameters file."""
    return queue_inputs(request).result()


def command(
    inputs: tuple[Path, Path], out: Path, threads: int, device: str = "cpu", epochs: int = EPOCHS
) -> tuple[list[str], dict[str, str]]:
    """`python -m foxhunt train` with `threads` intra-op threads: its argv and environment.
    (tests_gpu/test_repeat_cuda.py runs the same on CUDA, with more epochs to kill a fold inside.)"""
    fxcache, params = inputs
    argv = ["train", "--fxcache", str(fxcache), "--hyperopt-params", str(params), "--out", str(out), *ARGS]
    argv += ["--device", device, "--epochs", str(epochs)]
    env = {k: v for k, v in os.environ.items() if k not in ("FOXHUNT_PUSHGATEWAY", "FOXHUNT_RUN_ID")}
    env.update(OMP_NUM_THREADS=str(threads), PYTHONUNBUFFERED="1")
    return [sys.executable, "-m", "foxhunt", *argv], env


def start(
    inputs: tuple[Path, Path], out: Path, threads: int, device: str = "cpu", epochs: int = EPOCHS
) -> TrainProcess:
    """The command in a fresh process of its own; console beside `out`."""
    argv, env = command(inputs, out, threads, device, epochs)
    console = out.with_suffix(".log")
    with console.open("wb") as sink:
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, env=env)
    return TrainProcess(process, console)  # type: ignore[arg-type]  (a Popen answers as a ForkedProcess)


def only_folds(figures: dict[str, object]) -> dict[str, object]:
    """Every fold's weights digests, positions digest and report figures (the run's own files set aside:
    a resumed run's summary names the folds it resumed)."""
    return {k: v for k, v in figures.items() if k.startswith("fold_")}


def finished(
    inputs: tuple[Path, Path], out: Path, threads: int, device: str = "cpu", epochs: int = EPOCHS
) -> dict[str, object]:
    """The figures of the command run to its end (through the background queue's process runner)."""
    argv, env = command(inputs, out, threads, device, epochs)
    done = BACKGROUND.run(argv, timeout=900, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return run_figures(out)


# The untouched runs: the uninterrupted one at 2 threads, its repeat, and the same at 1 thread.
FINISHED_RUNS = {"two": 2, "two_again": 2, "one": 1}


def queue_finished_runs(request: pytest.FixtureRequest) -> dict[str, Future]:
    """Queue the untouched runs in the background; name -> future of its figures."""
    inputs = queue_inputs(request)

    def job(name: str) -> Callable[[], Callable[[], dict[str, object]]]:
        def make() -> Callable[[], dict[str, object]]:
            out = request.getfixturevalue("tmp_path_factory").mktemp(f"repeat-{name}") / "out"
            # The queue runs in order: the inputs are made by the time a run starts.
            return lambda: finished(inputs.result(), out, FINISHED_RUNS[name])

        return make

    return {name: BACKGROUND.start(f"repeat-{name}", job(name)) for name in FINISHED_RUNS}


STARTERS["finished_runs"] = queue_finished_runs


@pytest.fixture(scope="session")
def finished_runs(request) -> dict[str, Future]:
    """The untouched runs, queued in the background from the session's start."""
    return queue_finished_runs(request)


@pytest.fixture
def at_two_threads(finished_runs) -> dict[str, object]:
    """The uninterrupted run's figures at 2 threads."""
    return finished_runs["two"].result()


def _differences(got: dict, want: dict) -> list[str]:
    keys = sorted(got.keys() | want.keys())
    return [f"{k}: {got.get(k)!r} != {want.get(k)!r}" for k in keys if got.get(k) != want.get(k)]


def test_the_same_training_twice_at_two_threads_gives_every_weight_and_figure_bit_for_bit(
    finished_runs, at_two_threads
):
    again = finished_runs["two_again"].result()
    assert sum(":" in k for k in again) == 2 * 6  # both folds' six weight tensors are compared
    assert not _differences(again, at_two_threads), "\n".join(_differences(again, at_two_threads)[:20])


def test_one_thread_gives_the_two_thread_run_bit_for_bit(finished_runs, at_two_threads):
    alone = finished_runs["one"].result()
    assert not _differences(alone, at_two_threads), "\n".join(_differences(alone, at_two_threads)[:20])


def test_a_cpu_run_killed_inside_fold_1_at_two_threads_resumes_to_the_uninterrupted_run(
    inputs, at_two_threads, tmp_path
):
    out = tmp_path / "out"
    first = start(inputs, out, threads=2)
    first.wait_for("fold 1 epoch 2/")
    first.process.kill()
    first.finish()
    assert completed_folds(out) == [0]  # killed inside fold 1, after fold 0 completed
    second = start(inputs, out, threads=2)
    assert second.finish() == 0, second.output()
    assert "fold 0 skipped: completed by an earlier attempt" in second.output()
    resumed, uninterrupted = only_folds(run_figures(out)), only_folds(at_two_threads)
    assert not _differences(resumed, uninterrupted), "\n".join(_differences(resumed, uninterrupted)[:20])
