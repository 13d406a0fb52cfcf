"""What a CPU run must reproduce across refactors: weights, positions and every figure it reports.

`run_figures` reads an output folder into one flat mapping: per `weights.pt` the sha256 of each
state-dict tensor (by key), per `positions.npy` the sha256 of its array, and every leaf of every
JSON output (summary, study, trials, best params, trial and fold reports) except the ones that
measure time, name the run or repeat another figure. `python tests/support/reference_figures.py` records
the mapping of the two reference runs into tests/data/reference_figures.json.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from support.background_runs import BACKGROUND, STARTERS, one_thread

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "reference_figures.json"
# A study small enough for seconds on 2 CPU cores: 3 folds of 5 days, 3 epochs of 4 steps, hidden 16.
STUDY_PARAMS = {"dqn": {"hidden": 16, "batch_size": 256, "steps_per_epoch": 4}}
STUDY_ARGS = (
    "--epochs", "3", "--train-days", "5", "--val-days", "2", "--step-days", "2", "--max-folds", "3",
    "--device", "cpu", "--seed", "11",
)  # fmt: skip
RUNS = {
    "pipeline": ("pipeline", "--device", "cpu"),
    "study": ("train", *STUDY_ARGS, "--trials", "3"),
    "study_population": ("train", *STUDY_ARGS, "--trials", "4", "--population", "2"),
}
TINY_BARS, TINY_SEED = 20_000, 3
# The portable numeric mode every reference run takes, whatever the outer environment says: ATen's AVX2
# kernels, MKL's AVX2 branch in its strict reproducible mode, oneDNN capped at AVX2, and numpy's AVX-512
# loops off (its names for them in numpy 1.26 and 2.x; an unknown name is ignored). Every x86-64 CPU with
# AVX2 then computes the same bits: by default each library picks AVX-512 kernels on one CPU and AVX2 on
# another, which round differently (numpy's AVX-512 loops move 12 of the 8.4 million features of a
# 200,000-bar sample fxcache by one float32 ulp, and training carries that into every figure).
# Variables that would move MKL off that branch are dropped.
PORTABLE_NUMERICS = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "AVX2,STRICT",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR",
}
DROPPED_NUMERICS = ("MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE")
# Leaves that measure time, name the run, its place or its files, or repeat figures held elsewhere
# (the fold report's `validation` repeats its `evaluation`'s numbers).
SKIPPED_KEYS = {
    "run_id", "started_at", "finished_at", "fxcache", "out", "phases", "epoch_seconds", "validation",
    "datetime_start", "datetime_complete", "study_name",
}  # fmt: skip


def _skipped(key: str) -> bool:
    return key in SKIPPED_KEYS or "second" in key


def _leaves(value, path: str, into: dict) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not _skipped(str(key)):
                _leaves(item, f"{path}.{key}", into)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _leaves(item, f"{path}[{i}]", into)
    else:
        into[path] = value


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def run_figures(out: Path) -> dict[str, object]:
    """The folder's weights and positions digests and its JSON outputs' figures, by relative path."""
    import torch

    figures: dict[str, object] = {}
    for path in sorted(out.rglob("*")):
        name = path.relative_to(out).as_posix()
        if path.name == "weights.pt":
            state = torch.load(io.BytesIO(path.read_bytes()), weights_only=True)
            for key, tensor in state.items():
                figures[f"{name}:{key}"] = _sha(tensor.contiguous().numpy().tobytes())
        elif path.name == "positions.npy":
            figures[name] = _sha(np.ascontiguousarray(np.load(path)).tobytes())
        elif path.suffix == ".json" and path.name != "manifest.json":
            _leaves(json.loads(path.read_text()), name, figures)
    return figures


def portable_env() -> dict[str, str]:
    """This process's environment in the portable numeric mode, for a reference run's process."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_NUMERICS}
    return {**env, **PORTABLE_NUMERICS}


def make_tiny_fxcache(path: Path) -> Path:
    """The study's fxcache: 20,000 generated bars (tests/run_cases.py's tiny_fxcache), made in a process of
    its own in the portable numeric mode (its features go through numpy's vector loops)."""
    code = (
        "import sys; from foxhunt.run.precompute import precompute; "
        f"precompute(None, sys.argv[1], sample_bars={TINY_BARS}, seed={TINY_SEED}, progress=lambda _: None)"
    )
    done = BACKGROUND.run([sys.executable, "-c", code, str(path)], timeout=300, env=portable_env())
    assert done.returncode == 0, done.stderr
    return path


def run_reference(name: str, work: Path, fxcache: Path | None = None) -> dict[str, object]:
    """Run reference run `name` under `work` as a fresh `python -m foxhunt` in the portable numeric mode (a
    process forked from one that has loaded torch would keep that one's kernels); its figures."""
    out = work / name
    argv = [*RUNS[name], "--out", str(out)]
    if name != "pipeline":
        params = work / "params.json"
        params.write_text(json.dumps(STUDY_PARAMS))
        argv += ["--fxcache", str(fxcache), "--hyperopt-params", str(params)]
    # One thread: the figures do not depend on the count (tests/run/test_cpu_repeats.py), and in the suite
    # the run shares the machine.
    done = BACKGROUND.run(
        [sys.executable, "-m", "foxhunt", *argv], timeout=900, env=one_thread(portable_env())
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return run_figures(out)


@dataclass(frozen=True)
class DefaultPipeline:
    """The README's job, `foxhunt pipeline` with no arguments: the finished process and its --out."""

    done: subprocess.CompletedProcess
    out: Path


def queue_default_pipeline(request: pytest.FixtureRequest) -> Future:
    """Queue `foxhunt pipeline` from the console script in a fresh folder, in the portable numeric mode."""

    def job() -> Callable[[], DefaultPipeline]:
        work = request.getfixturevalue("tmp_path_factory").mktemp("default-pipeline")
        exe = shutil.which("foxhunt") or str(Path(sys.executable).parent / "foxhunt")
        return lambda: DefaultPipeline(
            BACKGROUND.run([exe, "pipeline"], timeout=900, cwd=work, env=one_thread(portable_env())),
            work / "foxhunt-out",
        )

    return BACKGROUND.start("default_pipeline", job)


@pytest.fixture(scope="session")
def default_pipeline(request) -> DefaultPipeline:
    """`foxhunt pipeline` with no arguments, once a session, in the background from the session's start:
    the console script's test and the default pipeline's recorded figures read the same run (about 30 s
    of CPU each time)."""
    return queue_default_pipeline(request).result()


STUDIES = ("study", "study_population")


def queue_reference_studies(request: pytest.FixtureRequest) -> dict[str, Future]:
    """Queue the studies' fxcache, then each reference study on it; the studies' figures, by name."""

    def fxcache_job() -> Callable[[], Path]:
        work = request.getfixturevalue("tmp_path_factory").mktemp("reference")
        return lambda: make_tiny_fxcache(work / "tiny.fxcache")

    fxcache = BACKGROUND.start("reference_fxcache", fxcache_job)

    def study_job(name: str) -> Callable[[], Callable[[], dict[str, object]]]:
        def make() -> Callable[[], dict[str, object]]:
            work = request.getfixturevalue("tmp_path_factory").mktemp(name)
            # The queue runs in order: the fxcache is made by the time a study starts.
            return lambda: run_reference(name, work, fxcache.result())

        return make

    return {name: BACKGROUND.start(name, study_job(name)) for name in STUDIES}


@pytest.fixture(scope="session")
def reference_studies(request) -> dict[str, Future]:
    """The reference studies' runs, queued in the background from the session's start: name -> future
    of its figures."""
    return queue_reference_studies(request)


STARTERS.update(default_pipeline=queue_default_pipeline, reference_studies=queue_reference_studies)


def main(names: list[str]) -> None:
    """Record the runs `names` (default: all) into REFERENCE, keeping the other runs' records."""
    import tempfile

    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    record = json.loads(REFERENCE.read_text()) if REFERENCE.exists() else {"runs": {}, "recorded_at": {}}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fxcache = make_tiny_fxcache(work / "tiny.fxcache")
        for name in names or list(RUNS):
            record["runs"][name] = run_reference(name, work, fxcache)
            record.setdefault("recorded_at", {})[name] = commit
    record["commands"] = {name: " ".join(argv) for name, argv in RUNS.items()}
    REFERENCE.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"wrote {REFERENCE}: " + ", ".join(f"{n} {len(record['runs'][n])} figures" for n in names or RUNS))


if __name__ == "__main__":
    main(sys.argv[1:])
