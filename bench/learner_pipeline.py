"""Before/after figures of the learner's levers on the CPU default `foxhunt pipeline` (signal on and off).

Each lever is the pipeline's own DQN settings (batch 1,024, learning rate 1e-3, training cost 2 bp) plus
the lever, through --hyperopt-params; every (lever, signal, seed) is one fresh run of 200,000 sample bars,
3 folds, 3 epochs. Writes per run the stitched net Sharpe with its interval, turnover a year, exposure and
the folds' tail selection, and per (lever, signal) the median and IQR over seeds, as JSON under
bench/results/. `--collect DIR` reads runs already made as DIR/out-LEVER-SIGNAL-SEED (same commands).
Usage: python bench/learner_pipeline.py [--seeds 0 1 2] [--work DIR] [--collect DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from provenance import cpu_model, git_commit  # noqa: E402

PIPELINE = {"batch_size": 1024, "lr": 1e-3, "cost": 2e-4}  # config.PIPELINE_DQN
LEVERS = {
    "base": {},
    "tail": {"select_tail_share": 0.25},
    "abstain": {"abstain_cost_multiple": 1.0},
}


def run(work: Path, lever: str, signal: str, seed: int) -> Path:
    """One fresh pipeline run; its output folder."""
    params = work / f"{lever}.json"
    params.write_text(json.dumps({"dqn": {**PIPELINE, **LEVERS[lever]}}))
    out = work / f"out-{lever}-{signal}-{seed}"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "trainer_image")}
    subprocess.run(
        [sys.executable, "-m", "foxhunt", "pipeline", "--out", str(out), "--overwrite", "--sample-signal",
         signal, "--seed", str(seed), "--device", "cpu", "--hyperopt-params", str(params)],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    return out


def figures(out: Path) -> dict:
    """The run's stitched net figures and its folds' tail selection."""
    summary = json.loads((out / "summary.json").read_text())
    net = summary["stitched"]["policies"]["model"]["net"]
    return {
        "sharpe": net["sharpe"],
        "ci": [net["sharpe_ci_low"], net["sharpe_ci_high"]],
        "turnover_per_year": net["turnover_per_year"],
        "exposure": net["exposure"],
        "flat_folds": sum(1 for f in summary["folds"] if (f.get("selection") or {}).get("went_flat")),
        "selected_epochs": [(f.get("selection") or {}).get("selected_epoch") for f in summary["folds"]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--work", type=Path, default=Path("/tmp/learner_pipeline"))
    parser.add_argument("--collect", type=Path, default=None)
    args = parser.parse_args()
    work = args.collect or args.work
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for lever in LEVERS:
        for signal in ("on", "off"):
            runs = {}
            for seed in args.seeds:
                out = work / f"out-{lever}-{signal}-{seed}"
                if args.collect is None:
                    run(work, lever, signal, seed)
                if (out / "summary.json").exists() and json.loads((out / "summary.json").read_text()).get(
                    "stitched"
                ):
                    runs[seed] = figures(out)
            sharpes = [r["sharpe"] for r in runs.values()]
            q1, median, q3 = np.percentile(sharpes, [25, 50, 75]) if sharpes else (np.nan,) * 3
            rows.append({
                "lever": lever, "signal": signal, "runs": runs, "median": float(median), "iqr": float(q3 - q1),
                "above_flat": sum(1 for r in runs.values() if r["ci"][0] > 0),
                "below_flat": sum(1 for r in runs.values() if r["ci"][1] < 0),
            })  # fmt: skip
            print(
                f"{lever:8s} signal {signal:3s} median {median:7.2f} IQR {q3 - q1:6.2f} "
                + " ".join(
                    f"s{s}:{r['sharpe']:.2f}[{r['ci'][0]:.1f},{r['ci'][1]:.1f}]" for s, r in runs.items()
                )
                + " turnover/yr "
                + " ".join(f"{r['turnover_per_year']:.0f}" for r in runs.values())
                + " flat folds "
                + " ".join(str(r["flat_folds"]) for r in runs.values())
            )
    commit = git_commit()
    out = ROOT / "bench" / "results" / f"learner_pipeline-cpu-{datetime.now(UTC):%Y-%m-%d}-{commit[:7]}.json"
    payload = {"commit": commit, "date": datetime.now(UTC).isoformat(), "device": cpu_model(),
               "pipeline_dqn": PIPELINE, "levers": LEVERS, "rows": rows}  # fmt: skip
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(out)


if __name__ == "__main__":
    main()
