"""Do no harm: the DQN's stitched net Sharpe on bars with nothing to find, per lever, over K seeds.

    python bench/learner_noharm.py --out noharm.json [--data sample-off eurusd=PATH yndx=PATH]
        [--variants base abstain] [--seeds 3] [--epochs 50] [--keep DIR]

Data: `sample-off` is the generated sample at the original plan's shape (4.7M bars, generator seed 0)
with its planted signal off, cut into perf_targets' three expanding folds; `sample-on` the same with the
signal on (the positive control); `NAME=PATH` a real bar file, precomputed once and cut into the
shipped default folds. Each (data, variant) is ONE fresh `foxhunt train --seeds K` process at the
shipped defaults plus the variant's DQN settings (`--hyperopt-params`), so the K seeds train side by
side as a population. From its summary.json: every seed's stitched net Sharpe with its bootstrap
interval, exposure and turnover (summary.seed_spread), flat's and buy-and-hold's Sharpe, the best
supervised baseline's, and whether any seed's whole interval lies below flat's 0 (harm). Cold
processes; one JSON with the commit, date and device.
"""

from __future__ import annotations

import argparse
import json
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
VARIANTS = {
    "base": {},
    "ungated": {"select_tail_share": 0.0, "select_min_t": 0.0},  # the shipped defaults before the gate
    "abstain": {"abstain_cost_multiple": 1.0},
    "abstain2": {"abstain_cost_multiple": 2.0},
    "tail": {"select_tail_share": 0.25},
    "tail_abstain": {"select_tail_share": 0.25, "abstain_cost_multiple": 1.0},
}


def run_figures(summary: dict) -> dict:
    """Every seed's figures, flat's, buy-and-hold's and the best supervised baseline's (net of costs)."""
    net = {name: p["net"] for name, p in summary["stitched"]["policies"].items()}
    oracle = max((n for n in ORACLE_NAMES if n in net), key=lambda n: net[n]["sharpe"], default=None)
    spread = summary.get("seed_spread")
    if spread is None:  # --seeds 1
        model = net["model"]
        seeds = {
            "0": {
                "sharpe": model["sharpe"],
                "ci": [model["sharpe_ci_low"], model["sharpe_ci_high"]],
                "exposure": model["exposure"],
                "turnover_per_year": model["turnover_per_year"],
            }
        }
    else:
        seeds = spread["figures"]
    return {
        "seeds": seeds,
        "median": spread["median"] if spread else seeds["0"]["sharpe"],
        "iqr": spread["iqr"] if spread else 0.0,
        "flat": net["flat"]["sharpe"],
        "buy_and_hold": net["buy_and_hold"]["sharpe"],
        "buy_and_hold_ci": [net["buy_and_hold"]["sharpe_ci_low"], net["buy_and_hold"]["sharpe_ci_high"]],
        "feature_oracle": {"name": oracle, "sharpe": net[oracle]["sharpe"]} if oracle else None,
        "folds": summary["stitched"].get("folds"),
        "seeds_below_flat": [s for s, f in seeds.items() if f["ci"][1] < 0.0],
        "seeds_above_flat_and_buy_and_hold": [
            s for s, f in seeds.items() if f["ci"][0] > max(0.0, net["buy_and_hold"]["sharpe"])
        ],
    }


def prepare(name: str, work: Path, bars: int) -> tuple[Path, list[str]]:
    """The fxcache of one data set and the fold flags of its runs."""
    from foxhunt.data.fxcache import read_fxcache
    from foxhunt.run.precompute import precompute

    fxcache = work / f"{name.split('=')[0]}.fxcache"
    started = time.perf_counter()
    if name in ("sample-off", "sample-on"):
        precompute(None, str(fxcache), sample_bars=bars, seed=0, sample_signal=name == "sample-on",
                   progress=lambda _: None)  # fmt: skip
        folds = issue_folds(read_fxcache(str(fxcache)).timestamp)
        flags = [
            "--train-days", str(folds.train_days), "--val-days", str(folds.val_days),
            "--step-days", str(folds.step_days), "--window", folds.mode,
            "--purge-bars", str(folds.purge_bars), "--max-folds", str(folds.max_folds),
        ]  # fmt: skip
    else:
        path = name.split("=", 1)[1]
        done = subprocess.run(
            [sys.executable, "-m", "foxhunt", "precompute", "--bars", path, "--out", str(fxcache)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SystemExit(f"precompute {path} failed: {done.stderr[-2000:]}")
        flags = []
    print(f"{name}: fxcache in {time.perf_counter() - started:.1f}s", flush=True)
    return fxcache, flags


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--data", nargs="+", default=["sample-off"])
    p.add_argument("--variants", nargs="+", default=["base", "abstain"], choices=sorted(VARIANTS))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--bars", type=int, default=4_700_000)
    p.add_argument("--device", default="auto")
    p.add_argument("--extra", default="{}", help="JSON DQN settings added to every variant")
    p.add_argument("--keep", default=None, help="copy each run's summary.json into this folder")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "trainer_image"))
    import torch

    work = Path(tempfile.mkdtemp(prefix="noharm-"))
    rows: list[dict] = []
    report = {
        "benchmark": "learner_noharm",
        "commit": git_commit(),
        "device": device_name(torch.device("cuda" if torch.cuda.is_available() else "cpu")),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cold": "each (data, variant) a fresh `foxhunt train --seeds K` process; each fxcache made once",
        "shape": {"seeds": args.seeds, "epochs": args.epochs, "sample_bars": args.bars},
        "runs": rows,
    }
    for data in args.data:
        fxcache, fold_flags = prepare(data, work, args.bars)
        label = data.split("=")[0]
        for variant in args.variants:
            settings = {**VARIANTS[variant], **json.loads(args.extra)}
            params = work / f"{variant}.json"
            params.write_text(json.dumps({"dqn": settings}))
            out = work / f"run-{label}-{variant}"
            cmd = [
                sys.executable, "-m", "foxhunt", "train", "--fxcache", str(fxcache), "--out", str(out),
                "--hyperopt-params", str(params), "--epochs", str(args.epochs), "--seed", "0",
                "--seeds", str(args.seeds), "--device", args.device, *fold_flags,
            ]  # fmt: skip
            started = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True)
            wall = time.perf_counter() - started
            row: dict = {"data": label, "variant": variant, "settings": settings, "wall_seconds": wall}
            if done.returncode != 0:
                print(done.stdout[-2000:], done.stderr[-2000:], flush=True)
                rows.append({**row, "exit": done.returncode})
                Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
                continue
            summary = json.loads((out / "summary.json").read_text())
            if args.keep:
                Path(args.keep).mkdir(parents=True, exist_ok=True)
                (Path(args.keep) / f"summary-{label}-{variant}.json").write_text(json.dumps(summary))
            row = {**row, "exit": 0, **run_figures(summary)}
            rows.append(row)
            print(json.dumps(row), flush=True)
            Path(args.out).write_text(
                json.dumps(report, indent=2) + "\n"
            )  # a cut-short session keeps each run
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
