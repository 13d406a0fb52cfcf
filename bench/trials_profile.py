"""Where a search's seconds go: `foxhunt train --trials N --population P` under cProfile, per P.

    python bench/trials_profile.py --populations 1,8 --trials 8,16            (H200: issue 13's shape)
    python bench/trials_profile.py --bars 20000 --trials 2 --epochs 1 --device cpu --populations 1,2

Each study is a fresh process on a fresh pod (as `trials_gpu.py` runs it) at issue 13's shape. The
JSON holds, per population size: the wall seconds, the fold reports' phases summed over every
trial's folds (validate and checkpoint run member by member; in a population the epochs' collect and
train phases are the batch's, repeated in each member's report), and the functions with the most
cumulative seconds. CUDA work is asynchronous, so its seconds land on the calls that wait for it.
"""

from __future__ import annotations

import argparse
import json
import pstats
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from perf_targets import ISSUE_BARS, issue_folds
from provenance import device_name, git_commit
from trials_gpu import timed, train_command

TOP = 45  # functions listed per study


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="trials_profile.json", help="the JSON to write")
    p.add_argument("--bars", type=int, default=ISSUE_BARS, help="generated bars")
    p.add_argument("--trials", default="8", help="trials per study, one value or one per population")
    p.add_argument("--epochs", type=int, default=10, help="epochs per fold")
    p.add_argument("--batch-size", type=int, default=8192)
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    p.add_argument("--compile-cache", default="off", help="the --compile-cache the studies run with")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per process")
    p.add_argument("--populations", default="1,8", help="comma-separated --population sizes")
    return p.parse_args(argv)


def phase_sums(out: Path) -> dict:
    """Every fold report's phases summed, and how many fold reports there are."""
    sums: dict[str, float] = {}
    reports = sorted(out.glob("trials/*/fold_*/report.json"))
    for path in reports:
        for phase, seconds in json.loads(path.read_text())["phases"].items():
            sums[phase] = sums.get(phase, 0.0) + seconds
    return {"fold_reports": len(reports), "seconds": sums}


def top_functions(profile: Path, limit: int = TOP) -> list[dict]:
    """The functions with the most cumulative seconds (file:line(name), calls, cumulative, own)."""
    stats = pstats.Stats(str(profile))
    rows = []
    for (file, line, name), (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append(
            {
                "function": f"{Path(file).name}:{line}({name})",
                "calls": calls,
                "cumulative": cumulative,
                "own": own,
            }
        )
    rows.sort(key=lambda r: r["cumulative"], reverse=True)
    return rows[:limit]


def main(argv: list[str] | None = None) -> int:
    """Generate the fxcache, profile one study per population size, write the JSON."""
    args = parse_args(argv)
    import torch

    from foxhunt.data.fxcache import read_fxcache
    from foxhunt.run.precompute import precompute
    from foxhunt.train import resolve_device

    sizes = [int(p) for p in args.populations.split(",")]
    counts = [int(t) for t in args.trials.split(",")]
    counts = counts * len(sizes) if len(counts) == 1 else counts
    device = resolve_device(args.device)
    report: dict = {
        "benchmark": "trials_profile",
        "commit": git_commit(),
        "device": device_name(device),
        "torch": torch.__version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cold": True,
        "epochs_per_fold": args.epochs,
        "batch_size": args.batch_size,
        "studies": {},
    }
    with tempfile.TemporaryDirectory(prefix="foxhunt-trials-profile-") as tmp:
        work = Path(tmp)
        fxcache = work / "fx.arrow"
        precompute(None, str(fxcache), sample_bars=args.bars, seed=0, progress=lambda _: None)
        folds = issue_folds(read_fxcache(str(fxcache)).timestamp)
        params = work / "params.json"
        params.write_text(json.dumps({"dqn": {"batch_size": args.batch_size}}))
        for size, trials in zip(sizes, counts, strict=True):
            out, prof = work / f"out-p{size}", work / f"p{size}.prof"
            command = train_command(
                args, fxcache, out, folds, params, "--trials", str(trials), "--population", str(size)
            )
            command[1:3] = ["-m", "cProfile", "-o", str(prof), "-m", "foxhunt"]
            started = time.perf_counter()
            timed(command, work / f"pod-p{size}", args.timeout)
            wall = time.perf_counter() - started
            study = json.loads((out / "study.json").read_text())
            report["studies"][str(size)] = {
                "trials": trials,
                "wall_seconds": wall,
                "states": study["states"],
                "phases": phase_sums(out),
                "top": top_functions(prof),
            }
            print(f"population {size}, {trials} trials: {wall:.1f}s; states {study['states']}", flush=True)
            print(json.dumps(report["studies"][str(size)]["phases"]), flush=True)
            for row in report["studies"][str(size)]["top"]:
                print(f"  {row['cumulative']:9.2f}s {row['own']:8.2f}s {row['calls']:>8} {row['function']}")
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
