"""A tiny fxcache and `foxhunt train` runs (in a process of their own or in-process) for the run-lifecycle tests.

The sizes keep a whole 3-fold run to a few seconds on 2 CPU cores, while a fold still lasts long
enough (24 short epochs) that a signal sent after its third epoch lands inside it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from support import strict_json
from support.forked_runs import ForkedProcess, start_foxhunt

EPOCHS = 24
TRAIN_ARGS = (
    "--epochs",
    str(EPOCHS),
    "--train-days",
    "5",
    "--val-days",
    "2",
    "--step-days",
    "2",
    "--max-folds",
    "3",
    "--device",
    "cpu",
    "--seed",
    "11",
    "--pictures",
    "off",
)
# The tiny runs draw no pictures (about 2 s each on a CPU); a test that reads a run's pictures adds this.
PICTURES = ("--pictures", "on")
# The plumbing tests read a policy that trades: 3 epochs of 4 steps find nothing, and the shipped tail gate
# (select_tail_share, select_min_t) would make every fold flat; tests of the gate set it themselves.
TINY_DQN = {"hidden": 16, "batch_size": 256, "steps_per_epoch": 4, "select_tail_share": 0.0}
PROCESS_TIMEOUT_S = 300.0
# A quick run: the tiny run's 3 folds of 2 epochs each.
QUICK = ("--epochs", "2")


@pytest.fixture(scope="session")
def tiny_fxcache(tmp_path_factory) -> Path:
    """An fxcache of 20,000 generated minute bars: three 5-day folds."""
    from foxhunt.run.precompute import precompute

    path = tmp_path_factory.mktemp("tiny") / "tiny.fxcache"
    precompute(None, str(path), sample_bars=20_000, seed=3, progress=lambda _: None)
    return path


@pytest.fixture(scope="session")
def tiny_params(tmp_path_factory) -> Path:
    """A --hyperopt-params file with a small network and few steps per epoch."""
    path = tmp_path_factory.mktemp("params") / "params.json"
    path.write_text(json.dumps({"dqn": TINY_DQN}))
    return path


def train_argv(fxcache: Path, out: Path, params: Path, *extra: str) -> list[str]:
    """The `foxhunt train` arguments of a tiny run."""
    return [
        "train",
        "--fxcache",
        str(fxcache),
        "--out",
        str(out),
        "--hyperopt-params",
        str(params),
        *TRAIN_ARGS,
        *extra,
    ]


def quick_argv(fxcache: Path, out: Path, params: Path, *extra: str) -> list[str]:
    """The `foxhunt train` arguments of a quick run."""
    return train_argv(fxcache, out, params, *QUICK, *extra)


@dataclass
class QuickRun:
    """A finished quick run: its --out, what FOXHUNT_OUTPUTS_DIR received, its console output and argv."""

    out: Path
    outputs: Path
    console: str
    argv: list[str]

    @property
    def summary(self) -> dict:
        return strict_json.read(self.out / "summary.json")


@pytest.fixture(scope="session")
def quick_run(tiny_fxcache, tiny_params, tmp_path_factory) -> QuickRun:
    """A quick run in this process with FOXHUNT_OUTPUTS_DIR set, as the Argo train step runs it; once a
    session. Tests that read a finished quick run share it; a test that continues or changes a finished
    run works on a copy (`copy_run`), which is what the same command leaves."""
    from foxhunt.cli import main

    base = tmp_path_factory.mktemp("quick")
    argv = quick_argv(tiny_fxcache, base / "out", tiny_params, *PICTURES)
    console = io.StringIO()
    with pytest.MonkeyPatch.context() as env, contextlib.redirect_stdout(console):
        for name in ("FOXHUNT_PUSHGATEWAY", "FOXHUNT_RUN_ID"):
            env.delenv(name, raising=False)
        env.setenv("FOXHUNT_OUTPUTS_DIR", str(base / "argo"))
        code = main(argv)
    assert code == 0, console.getvalue()
    return QuickRun(base / "out", base / "argo", console.getvalue(), argv)


def copy_run(run: QuickRun | Path, out: Path) -> Path:
    """A copy of a finished run's folder at `out` (its manifest names files relative to it)."""
    shutil.copytree(run.out if isinstance(run, QuickRun) else run, out)
    return out


# A one-fold run: one epoch of the first fold.
ONE_FOLD = ("--epochs", "1", "--max-folds", "1")


def finished_run(tiny_fxcache, tiny_params, tmp_path_factory, name: str, *extra: str) -> Path:
    """The --out of a finished run of the tiny case with the `extra` flags, in a fresh folder `name`."""
    from foxhunt.cli import main

    out = tmp_path_factory.mktemp(name) / "out"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(train_argv(tiny_fxcache, out, tiny_params, *extra)) == 0
    return out


@pytest.fixture(scope="session")
def one_fold_run(tiny_fxcache, tiny_params, tmp_path_factory) -> Path:
    """The --out of a finished one-fold run, once a session; tests take a copy (`copy_run`)."""
    return finished_run(tiny_fxcache, tiny_params, tmp_path_factory, "one-fold", *ONE_FOLD)


@dataclass
class TrainProcess:
    """A `foxhunt train` process whose console output goes to a file."""

    process: ForkedProcess
    console: Path

    def output(self) -> str:
        return self.console.read_text()

    def wait_for(self, text: str, timeout: float = PROCESS_TIMEOUT_S) -> None:
        """Poll the console until `text` appears; fails if the process ends first."""
        deadline = time.monotonic() + timeout
        while text not in self.output():
            assert self.process.poll() is None, (
                f"exited {self.process.returncode} before {text!r}:\n{self.output()}"
            )
            assert time.monotonic() < deadline, f"no {text!r} after {timeout}s:\n{self.output()}"
            time.sleep(0.005)

    def finish(self) -> int:
        """Wait for the exit status."""
        return self.process.wait(timeout=PROCESS_TIMEOUT_S)


def start_train(argv: list[str], console: Path, trial_poll_s: float | None = None) -> TrainProcess:
    """Start `foxhunt <argv>` as a process of its own (forked by tests/support/forked_runs.py, with torch
    already imported) with unbuffered output into `console`; `trial_poll_s` as `start_foxhunt` takes it."""
    env = {k: v for k, v in os.environ.items() if k not in ("FOXHUNT_PUSHGATEWAY", "FOXHUNT_RUN_ID")}
    env["PYTHONUNBUFFERED"] = "1"
    return TrainProcess(start_foxhunt(argv, console, env, trial_poll_s=trial_poll_s), console)


def validation_figures(report: dict) -> dict:
    """The model's net figures over a fold's validation window, with its gross Sharpe, from report.json."""
    model = report["evaluation"]["policies"]["model"]
    net = model["net"]
    return {
        "sharpe": net["sharpe"],
        "total_return": net["log_return"],
        "turnover": net["turnover"],
        "max_drawdown": net["max_drawdown"],
        "gross_sharpe": model["gross"]["sharpe"],
    }


def fold_outputs(out: Path) -> dict[int, dict]:
    """What must be equal between two runs of the same settings: per fold, validation, weights, norm stats."""
    folds = {}
    for fold_dir in sorted(out.glob("fold_*")):
        fold = int(fold_dir.name.split("_")[1])
        report = strict_json.read(fold_dir / "report.json")
        folds[fold] = {
            "validation": validation_figures(report),
            "loss": report["loss"],
            "weights": (fold_dir / "weights.pt").read_bytes(),
            "norm_stats": (fold_dir / f"norm_stats_fold{fold}.json").read_bytes(),
            "positions": (fold_dir / "positions.npy").read_bytes(),
        }
    return folds


def completed_folds(out: Path) -> list[int]:
    """The folds the manifest in `out` records as completed."""
    manifest = json.loads((out / "manifest.json").read_text())
    return sorted(int(k) for k in manifest["run"]["folds"])


def diverge_in_fold(monkeypatch, fold: int = 1, member: int = 2) -> None:
    """Make `member` of a run's walk diverge in fold `fold` (its loss NaN), the others training on."""
    from foxhunt.run import walk as walk_module
    from foxhunt.train import TrainingDiverged

    train_fold = walk_module.train_fold

    def diverging(trainer, fold_range, *args, **kwargs):
        results = train_fold(trainer, fold_range, *args, **kwargs)
        if fold_range.fold == fold and member in results:
            results[member] = TrainingDiverged(f"fold {fold} epoch 0: loss is nan")
        return results

    monkeypatch.setattr(walk_module, "train_fold", diverging)
