"""`foxhunt train` as a fresh process on a fresh "pod", timed from outside, and what its summary.json says.

A pod is a set of empty node-local caches (Inductor, Triton, CUDA's JIT cache) in a folder of its
own; the only cache that may survive between pods is the compiled-step blob beside the fxcache,
which is what a real pod would find in object storage. The fxcache is evicted from the page cache
before every run, so its load is a cold read.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from page_cache import evict

ROOT = Path(__file__).resolve().parents[1]
BUILT = re.compile(r"trainer built in ([0-9.]+)s")
CUDA_WAIT = re.compile(r"CUDA context ready \(([0-9.]+)s waited")


def pod_env(pod: Path) -> dict[str, str]:
    """The environment of a process on a fresh pod: empty node-local compile caches, foxhunt importable."""
    env = dict(os.environ)
    for name in ("FOXHUNT_PUSHGATEWAY", "FOXHUNT_RUN_ID"):
        env.pop(name, None)
    env.update(
        TORCHINDUCTOR_CACHE_DIR=str(pod / "inductor"),
        TRITON_CACHE_DIR=str(pod / "triton"),
        CUDA_CACHE_PATH=str(pod / "cuda"),
        PYTHONUNBUFFERED="1",
        # The shipped image carries its bytecode (pip compiles it at install); a device whose Python packages
        # lack it gets a bytecode cache made once (gpu_run.sh), or each process would compile torch again.
        **({"PYTHONPYCACHEPREFIX": env["FOXHUNT_BENCH_PYCACHE"]} if env.get("FOXHUNT_BENCH_PYCACHE") else {}),
        FOXHUNT_COMPILE_CACHE_KEY=env.get("FOXHUNT_COMPILE_CACHE_KEY", "bench-signing-key-0123456789"),
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT / "trainer_image"), env.get("PYTHONPATH")) if p),
    )
    return env


def train_command(
    fxcache: Path, out: Path, folds, epochs: int, device: str, params: Path, diagnostics_every: int = 1
) -> list[str]:
    """The `foxhunt train` command line of one measured run; `--diagnostics-every` only when it is not 1 (the
    default), so the same command also runs a commit from before the flag."""
    spaced = ["--diagnostics-every", str(diagnostics_every)] if diagnostics_every != 1 else []
    return [
        sys.executable, "-m", "foxhunt", "train", "--fxcache", str(fxcache), "--out", str(out),
        "--hyperopt-params", str(params), "--epochs", str(epochs), "--seed", "0", "--device", device,
        "--train-days", repr(folds.train_days), "--val-days", repr(folds.val_days),
        "--step-days", repr(folds.step_days), "--window", folds.mode, "--purge-bars", str(folds.purge_bars),
        "--max-folds", str(folds.max_folds), "--log-format", "text", "--compile-cache", "auto", *spaced,
    ]  # fmt: skip


def run_train(kind: str, command: list[str], pod: Path, fxcache: Path, out: Path, timeout: float) -> dict:
    """Evict the fxcache, run `command` on the fresh pod `pod`, and read its summary: one run's record."""
    pod.mkdir(parents=True, exist_ok=True)
    eviction = evict(fxcache)
    started = time.perf_counter()
    try:
        done = subprocess.run(command, env=pod_env(pod), capture_output=True, text=True, timeout=timeout)
        exit_code, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        exit_code, stdout, stderr = "timeout", str(exc.stdout or ""), str(exc.stderr or "")
    wall = time.perf_counter() - started
    (pod / "stdout.log").write_text(stdout)
    (pod / "stderr.log").write_text(stderr)
    record = {"kind": kind, "exit_code": exit_code, "wall_seconds": wall, "eviction": eviction}
    record["compile_cache"] = [line for line in stdout.splitlines() if line.startswith("compile cache:")]
    built = BUILT.search(stdout)
    record["build_seconds"] = float(built.group(1)) if built else None
    waited = CUDA_WAIT.search(stdout)  # what the run still waited for its CUDA context after the read
    record["cuda_context_wait_seconds"] = float(waited.group(1)) if waited else None
    summary_path = out / "summary.json"
    if exit_code != 0 or not summary_path.exists():
        record["error_tail"] = (stderr or stdout)[-3000:]
        return record
    record.update(summary_figures(json.loads(summary_path.read_text())))
    return record


def fold_figures(fold: dict) -> dict:
    """One fold of summary.json: training rows, median epoch (collection + steps), its transition."""
    epochs = [e["collect_seconds"] + e["train_seconds"] for e in fold["epochs"]]
    phases = fold["phases"]
    return {
        "fold": fold["fold"],
        "train_rows": fold["train_end"] - fold["train_start"],
        "epochs": len(epochs),
        "steps_per_epoch": fold["epochs"][0]["steps"] if fold["epochs"] else 0,
        "epoch_seconds_median": statistics.median(epochs) if epochs else None,
        "epoch_seconds_first": epochs[0] if epochs else None,
        "collect_seconds_median": statistics.median(e["collect_seconds"] for e in fold["epochs"]),
        "train_seconds_median": statistics.median(e["train_seconds"] for e in fold["epochs"]),
        "transition_seconds": phases["reset"] + phases["normalize"],
        "reset_seconds": phases["reset"],
        "normalize_seconds": phases["normalize"],
        "validate_seconds": phases["validate"],
        "checkpoint_seconds": phases["checkpoint"],
        "fold_seconds": fold["fold_seconds"],
        # Epochs with the greedy policy's diagnostics (--diagnostics-every), and the fold's seconds outside
        # its timed phases: mostly those diagnostics (and the tail selection's scoring, when on).
        "diagnosed_epochs": sum(e.get("val_sharpe") is not None for e in fold["epochs"]),
        "untimed_seconds": fold["fold_seconds"] - sum(phases.values()),
    }


def summary_figures(summary: dict) -> dict:
    """The figures issue 15 reads from a run's summary.json."""
    folds = [fold_figures(f) for f in summary["folds"]]
    biggest = max(folds, key=lambda f: f["train_rows"])
    every_epoch = [e["collect_seconds"] + e["train_seconds"] for f in summary["folds"] for e in f["epochs"]]
    return {
        "status": summary["status"],
        "run_seconds": summary["run_seconds"],
        "data_load_seconds": summary["data_load_seconds"],
        "graph_captures": summary["graph_captures"],
        "folds": folds,
        "epoch_seconds_biggest_fold": biggest["epoch_seconds_median"],
        "epoch_seconds_all_folds": statistics.median(every_epoch),
        "transition_seconds_worst": max(f["transition_seconds"] for f in folds),
        "outside_folds_seconds": summary["run_seconds"] - sum(f["fold_seconds"] for f in folds),
        "untimed_seconds_total": sum(f["untimed_seconds"] for f in folds),
    }
