"""Wall seconds of README's default `foxhunt pipeline` on 2 CPU cores, as fresh processes.

    python bench/pipeline_cpu.py [--repeats 3] [--cores 0,1] [--device cpu] [--out FILE] [-- EXTRA ARGS]

Issue 23's target: `foxhunt pipeline` (no arguments: 200,000 generated bars → fxcache → 3 folds × 3
epochs) in at most 30 s on 2 CPU cores. Each repeat is a new `python -m foxhunt pipeline` process with
a new `--out` (so it precomputes, as a first run does), pinned with `taskset -c CORES`, running this
checkout's package. Recorded per repeat: the process's wall seconds, the run's own `run_seconds` and
`data_load_seconds` (summary.json), the precompute line's seconds, and each fold's phases
(fold_N/report.json); then the medians. Run it on an otherwise idle machine: other work on the pinned
cores lengthens every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from provenance import ROOT, cpu_model, git_commit, write_result

PRECOMPUTE_LINE = re.compile(r"precompute: .* in ([0-9.]+)s total")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3, help="fresh processes (the target asks for at least 3)")
    p.add_argument("--cores", default="0,1", help="taskset core list; empty: not pinned")
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", default=None, help="the JSON to write (default: print only)")
    p.add_argument("extra", nargs="*", help="more `foxhunt pipeline` arguments (after --)")
    return p.parse_args(argv)


def one_run(args: argparse.Namespace, work: Path, index: int) -> dict:
    """One fresh `foxhunt pipeline` process: its wall seconds and the run's own timings."""
    out = work / f"run{index}"
    command = [sys.executable, "-m", "foxhunt", "pipeline", "--out", str(out), "--device", args.device]
    command += args.extra
    if args.cores:
        command = ["taskset", "-c", args.cores, *command]
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT / "trainer_image"), os.environ.get("PYTHONPATH", "")]),
    )
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(
            f"repeat {index}: exit {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    summary = json.loads((out / "summary.json").read_text())
    precompute = PRECOMPUTE_LINE.search(done.stdout)
    phases: dict[str, float] = {}
    for report in sorted(out.glob("fold_*/report.json")):
        for phase, seconds in json.loads(report.read_text())["phases"].items():
            phases[phase] = phases.get(phase, 0.0) + seconds
    shutil.rmtree(out, ignore_errors=True)
    return {
        "wall_seconds": wall,
        "run_seconds": summary.get("run_seconds"),
        "data_load_seconds": summary.get("data_load_seconds"),
        "precompute_seconds": float(precompute.group(1)) if precompute else None,
        "phase_seconds": phases,  # summed over the folds
    }


def median_of(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r[key] is not None]
    return statistics.median(values) if values else None


def main(argv: list[str] | None = None) -> int:
    """Run the repeats, print and write the figures."""
    args = parse_args(argv)
    if args.cores and shutil.which("taskset") is None:
        raise SystemExit("taskset not found: install util-linux, or pass --cores ''")
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            runs.append(one_run(args, Path(tmp), i))
            r = runs[-1]
            print(
                f"repeat {i}: wall {r['wall_seconds']:.1f} s, run_seconds {r['run_seconds']:.1f} s, "
                f"phases " + ", ".join(f"{p} {s:.2f}" for p, s in r["phase_seconds"].items()),
                flush=True,
            )
    phases = sorted({p for r in runs for p in r["phase_seconds"]})
    medians = {
        k: median_of(runs, k)
        for k in ("wall_seconds", "run_seconds", "data_load_seconds", "precompute_seconds")
    }
    medians["phase_seconds"] = {
        p: statistics.median(r["phase_seconds"].get(p, 0.0) for r in runs) for p in phases
    }
    print(
        f"median wall {medians['wall_seconds']:.1f} s over {args.repeats} processes on cores {args.cores or 'all'}"
    )
    result = {
        "benchmark": "pipeline_cpu",
        "commit": git_commit(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": cpu_model(),
        "cores": args.cores or "all",
        "command": "foxhunt pipeline " + " ".join(["--device", args.device, *args.extra]),
        "repeats": args.repeats,
        "load_average_at_end": os.getloadavg()[0],
        "medians": medians,
        "runs": runs,
    }
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
