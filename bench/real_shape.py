"""Issue 23's real-data shape: `foxhunt train` on a real minute-bar file at the default folds, cold processes.

    python bench/real_shape.py --bars .gpu/data/EURUSD_M1_2018_2019.parquet --out /tmp/real_shape.json
    python bench/real_shape.py --bars tests/data/<slice>.parquet --epochs 1 --repeats 1 --device cpu --out X

The bar file is precomputed once into a local fxcache (`foxhunt precompute`). Then, each a fresh process on a
fresh "pod" (empty node-local compile caches, the fxcache evicted from the page cache; perf_runs.py): one
first-ever run (no compile cache beside the fxcache), then `--repeats` cold runs that find it, per
`--diagnostics-every` value. Per run: wall, run_seconds, the data load, the build, and per fold the phases
(validate = one fold's validation and scoring), the untimed seconds (the greedy policy's diagnostics and the
tail selection). `--profile` adds one more cold run under cProfile and keeps its 40 costliest functions.
Medians over the cold runs, never best-of; one JSON.
"""

from __future__ import annotations

import argparse
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from perf_runs import ROOT, pod_env, run_train
from provenance import device_name, git_commit, write_result

TARGET_WALL_SECONDS = 12.0  # issue 23: 21 folds x 50 epochs of a 690k-bar file
TARGET_VALIDATE_SECONDS = 0.1  # issue 23: one fold's validation and scoring


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--bars", required=True, help="a minute-bar file (parquet or CSV) foxhunt precompute reads"
    )
    p.add_argument("--out", required=True, help="the JSON to write")
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--repeats", type=int, default=3, help="cold runs per --diagnostics-every value")
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    p.add_argument("--diagnostics-every", default="1", help="comma-separated values, e.g. 1,10")
    p.add_argument("--profile", action="store_true", help="one more cold run under cProfile")
    p.add_argument("--run-timeout", type=float, default=300.0)
    p.add_argument("--work", default=None, help="scratch folder (default: a new temp folder)")
    return p.parse_args(argv)


def train_command(fxcache: Path, out: Path, epochs: int, device: str, every: int) -> list[str]:
    """A plain `foxhunt train` at the default folds and DQN settings, as a user runs it."""
    spaced = ["--diagnostics-every", str(every)] if every != 1 else []
    return [
        sys.executable, "-m", "foxhunt", "train", "--fxcache", str(fxcache), "--out", str(out),
        "--epochs", str(epochs), "--seed", "0", "--device", device, "--log-format", "text",
        "--compile-cache", "auto", *spaced,
    ]  # fmt: skip


def fold_medians(record: dict) -> dict:
    """One run's per-fold figures, as medians over its folds."""
    folds = record.get("folds") or []
    if not folds:
        return {}
    pick = lambda key: statistics.median(f[key] for f in folds)  # noqa: E731
    return {
        "fold_count": len(folds),
        "validate_seconds_median": pick("validate_seconds"),
        "validate_seconds_max": max(f["validate_seconds"] for f in folds),
        "untimed_seconds_median": pick("untimed_seconds"),
        "fold_seconds_median": pick("fold_seconds"),
        "train_rows_median": pick("train_rows"),
        "training_seconds_total": sum(
            f["epochs"] * (f["collect_seconds_median"] + f["train_seconds_median"]) for f in folds
        ),
    }


def summarise(runs: list[dict]) -> dict:
    """Medians over runs that finished."""
    done = [r for r in runs if r.get("exit_code") == 0]
    if not done:
        return {"runs": 0}
    med = lambda key: statistics.median(r[key] for r in done if r.get(key) is not None)  # noqa: E731
    return {
        "runs": len(done),
        "wall_seconds": med("wall_seconds"),
        "wall_seconds_each": [round(r["wall_seconds"], 3) for r in done],
        "run_seconds": med("run_seconds"),
        "data_load_seconds": med("data_load_seconds"),
        "build_seconds": med("build_seconds"),
        "validate_seconds_median": med("validate_seconds_median"),
        "untimed_seconds_total": med("untimed_seconds_total"),
        "outside_folds_seconds": med("outside_folds_seconds"),
        "before_run_seconds": statistics.median(r["wall_seconds"] - r["run_seconds"] for r in done),
    }


def profile_run(command: list[str], pod: Path, fxcache: Path, out: Path, timeout: float) -> dict:
    """One more cold run under cProfile; its costliest functions by cumulative seconds, as text."""
    stats_file = pod / "profile.pstats"
    profiled = [sys.executable, "-m", "cProfile", "-o", str(stats_file), *command[1:]]
    record = run_train("profiled", profiled, pod, fxcache, out, timeout)
    if stats_file.exists():
        text = io.StringIO()
        pstats.Stats(str(stats_file), stream=text).sort_stats("cumulative").print_stats(40)
        record["top_cumulative"] = text.getvalue().splitlines()[-60:]
        text = io.StringIO()
        pstats.Stats(str(stats_file), stream=text).sort_stats("tottime").print_stats(25)
        record["top_own"] = text.getvalue().splitlines()[-40:]
    return record


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sys.path.insert(0, str(ROOT / "trainer_image"))
    import torch

    work = Path(args.work or tempfile.mkdtemp(prefix="real-shape-"))
    work.mkdir(parents=True, exist_ok=True)
    fxcache = work / "real.fxcache"
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "foxhunt", "precompute", "--bars", args.bars, "--out", str(fxcache)],
        capture_output=True, text=True, env=pod_env(work / "pod-precompute"),
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"precompute {args.bars} failed: {done.stderr[-2000:]}")
    precompute_seconds = time.perf_counter() - started
    print(f"fxcache of {args.bars} in {precompute_seconds:.1f}s", flush=True)

    device = torch.device("cuda" if args.device != "cpu" and torch.cuda.is_available() else "cpu")
    everies = [int(v) for v in args.diagnostics_every.split(",")]
    result: dict = {
        "benchmark": "real_shape",
        "commit": git_commit(),
        "device": device_name(device),
        "torch": torch.__version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cold": "each run a fresh process on a fresh pod (empty node caches), the fxcache evicted from the page cache",
        "bars_file": Path(args.bars).name,
        "bytecode_prefix": os.environ.get("FOXHUNT_BENCH_PYCACHE"),  # see perf_runs.pod_env
        "epochs": args.epochs,
        "precompute_seconds": precompute_seconds,
        "targets": {"wall_seconds": TARGET_WALL_SECONDS, "validate_seconds": TARGET_VALIDATE_SECONDS},
        "first_ever": None,
        "cold_runs": {},
    }
    n = 0

    def one(kind: str, every: int) -> dict:
        nonlocal n
        n += 1
        out = work / f"run-{n}"
        record = run_train(
            kind, train_command(fxcache, out, args.epochs, args.device, every), work / f"pod-{n}", fxcache, out,
            args.run_timeout,
        )  # fmt: skip
        record.update(fold_medians(record))
        record["diagnostics_every"] = every
        brief = {
            k: record.get(k)
            for k in ("wall_seconds", "run_seconds", "build_seconds", "validate_seconds_median")
        }
        print(f"{kind} (diagnostics every {every}): exit {record['exit_code']} {brief}", flush=True)
        if record["exit_code"] != 0:
            print(record.get("error_tail", ""), flush=True)
        return record

    result["first_ever"] = one("first-ever", everies[0])
    write_result(args.out, result)
    for every in everies:
        runs = [one("cold", every) for _ in range(args.repeats)]
        result["cold_runs"][str(every)] = {"summary": summarise(runs), "runs": runs}
        print(f"diagnostics every {every}: {result['cold_runs'][str(every)]['summary']}", flush=True)
        write_result(args.out, result)  # a cut-short session keeps what ran
    if args.profile:
        n += 1
        out = work / f"run-{n}"
        command = train_command(fxcache, out, args.epochs, args.device, everies[0])
        result["profiled"] = profile_run(command, work / f"pod-{n}", fxcache, out, args.run_timeout)
        print("\n".join(result["profiled"].get("top_cumulative", [])), flush=True)
        write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
