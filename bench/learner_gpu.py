"""The learner at the original plan's shape: the DQN's stitched net Sharpe beside the feature oracle.

    python bench/learner_gpu.py --out learner.json [--seeds 0,1,2] [--signal on|off] [--epochs 50]

Generates the sample bars (4.7M, generator seed 0, the planted signal on or off), precomputes the
fxcache once, cuts perf_targets' three expanding folds (4.0M, 4.19M, 4.37M training rows), then runs
`foxhunt train` at the shipped defaults as one fresh process per training seed. From each run's
summary.json: the model's stitched net Sharpe with its bootstrap interval, exposure and turnover,
flat's and buy-and-hold's, and the best supervised baseline (the feature oracle); then the spread
over seeds (median, min, max) and whether every seed clears 60% of the oracle and beats flat and
buy-and-hold outside its interval. Cold processes; one JSON with the commit, date and device.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from perf_targets import issue_folds
from provenance import device_name, git_commit

ROOT = Path(__file__).resolve().parents[1]
ORACLE_NAMES = ("ridge_15", "ridge_60", "mlp_15", "mlp_60")


def figures(summary: dict) -> dict:
    """What a run's summary says of the model, flat, buy-and-hold and the feature oracle (net of costs)."""
    policies = summary["stitched"]["policies"]
    net = {name: p["net"] for name, p in policies.items()}
    oracle = max((n for n in ORACLE_NAMES if n in net), key=lambda n: net[n]["sharpe"])
    model = net["model"]
    return {
        "sharpe": model["sharpe"],
        "ci": [model["sharpe_ci_low"], model["sharpe_ci_high"]],
        "exposure": model["exposure"],
        "turnover_per_year": model["turnover_per_year"],
        "flat": net["flat"]["sharpe"],
        "buy_and_hold": net["buy_and_hold"]["sharpe"],
        "feature_oracle": {"name": oracle, "sharpe": net[oracle]["sharpe"]},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--bars", type=int, default=4_700_000)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--signal", choices=("on", "off"), default="on")
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--device", default="auto")
    p.add_argument("--keep", default=None, help="copy each run's summary.json into this folder")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "trainer_image"))
    import torch

    from foxhunt.data.fxcache import read_fxcache
    from foxhunt.run.precompute import precompute

    work = Path(tempfile.mkdtemp(prefix="learner-"))
    fxcache = work / "fx.arrow"
    t0 = time.perf_counter()
    precompute(None, str(fxcache), sample_bars=args.bars, seed=0, sample_signal=args.signal == "on",
               progress=lambda _: None)  # fmt: skip
    folds = issue_folds(read_fxcache(str(fxcache)).timestamp)
    print(
        f"precomputed {args.bars:,} bars (signal {args.signal}) in {time.perf_counter() - t0:.1f}s",
        flush=True,
    )
    runs = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        out = work / f"run-{seed}"
        cmd = [
            sys.executable, "-m", "foxhunt", "train", "--fxcache", str(fxcache), "--out", str(out),
            "--model", "dqn", "--epochs", str(args.epochs), "--seed", str(seed), "--device", args.device,
            "--train-days", str(folds.train_days), "--val-days", str(folds.val_days),
            "--step-days", str(folds.step_days), "--window", folds.mode, "--purge-bars", str(folds.purge_bars),
            "--max-folds", str(folds.max_folds),
        ]  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-2000:], flush=True)
            runs.append({"seed": seed, "exit": done.returncode, "wall_seconds": wall})
            continue
        summary = json.loads((out / "summary.json").read_text())
        if args.keep:
            Path(args.keep).mkdir(parents=True, exist_ok=True)
            (Path(args.keep) / f"summary-{args.signal}-seed{seed}.json").write_text(json.dumps(summary))
        row = {"seed": seed, "exit": 0, "wall_seconds": wall, **figures(summary)}
        runs.append(row)
        print(json.dumps(row), flush=True)
    ok = [r for r in runs if r["exit"] == 0]
    sharpes = [r["sharpe"] for r in ok]
    report = {
        "benchmark": "learner_gpu",
        "commit": git_commit(),
        "device": device_name(torch.device("cuda" if torch.cuda.is_available() else "cpu")),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cold": "each seed a fresh `foxhunt train` process; the fxcache precomputed once",
        "shape": {"bars": args.bars, "signal": args.signal, "epochs": args.epochs, "folds": folds.max_folds},
        "runs": runs,
        "spread": {"median": statistics.median(sharpes), "min": min(sharpes), "max": max(sharpes)}
        if ok
        else None,
        "every_seed_reaches_60pct_of_oracle": bool(ok)
        and all(r["sharpe"] >= 0.6 * r["feature_oracle"]["sharpe"] for r in ok),
        "every_seed_above_flat_and_buy_and_hold_outside_its_interval": bool(ok)
        and all(r["ci"][0] > max(r["flat"], r["buy_and_hold"]) for r in ok),
        "no_seed_below_flat_outside_its_interval": bool(ok) and all(r["ci"][1] >= r["flat"] for r in ok),
    }
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: report[k] for k in ("spread", "every_seed_reaches_60pct_of_oracle")}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
