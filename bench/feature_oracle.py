"""What the sample data lets a model earn: the generator oracle, the feature oracle and the naive baselines.

    python bench/feature_oracle.py [--seeds 0,1,2] [--bars 200000] [--out FILE]

On the default `foxhunt pipeline` data and windows (the generated sample, `SAMPLE_BARS` bars, the
`PIPELINE_FOLDS` walk-forward: 3 rolling folds of 60 training and 20 validation days), with the
signal on and off, for each generator seed: the stitched annualised Sharpe after the default costs
(1 bp per unit of position change) of

* the **generator oracle**: the sign of the expected next return as the generator planted it (it
  knows when news happened); flat where nothing is expected;
* the **feature oracle**: the best of the supervised baselines (`foxhunt.evaluate.supervised`: ridge and an
  MLP for the 15- and 60-bar forward return on the 42 features, fitted on each training slice,
  traded by the hold rule), each of which is reported too;
* buy-and-hold, the last return's sign, and the 1-bar ridge (`foxhunt.evaluate.baselines`).

Then the mean, min and max across seeds. Runs on the CPU (the baselines as a CPU run computes them).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from provenance import cpu_model, git_commit, write_result

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "trainer_image"))

from foxhunt.config import PIPELINE_FOLDS, SAMPLE_BARS, EvalConfig  # noqa: E402
from foxhunt.data import sample as sample_data  # noqa: E402
from foxhunt.data.bars import generate_sample_bars  # noqa: E402
from foxhunt.data.features import compute_features  # noqa: E402
from foxhunt.data.folds import generate_walk_forward_indices  # noqa: E402
from foxhunt.evaluate.baselines import fold_baselines  # noqa: E402
from foxhunt.evaluate.evaluation import MODEL, Scoring, evaluate_run  # noqa: E402
from foxhunt.evaluate.supervised import SUPERVISED_NAMES, feature_oracle  # noqa: E402

GENERATOR_ORACLE = "generator_oracle"
SHOWN = ("buy_and_hold", "last_return_sign", "ridge", *SUPERVISED_NAMES)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0,1,2", help="generator seeds, comma-separated")
    p.add_argument("--bars", type=int, default=SAMPLE_BARS, help="generated bars per sample")
    p.add_argument("--out", default=None, help="the JSON to write (default: print only)")
    return p.parse_args(argv)


def measure(seed: int, n_bars: int, signal: bool, scoring: Scoring) -> dict:
    """Every policy's stitched net Sharpe (and the generator oracle's gross) on one generated sample."""
    start = time.perf_counter()
    bars = generate_sample_bars(n_bars, seed=seed, signal=signal)
    planted = sample_data.sample_returns(n_bars, seed, signal=signal)
    table = compute_features(bars)
    # A feature row at bar t's close holds over bar t + 1: the oracle's position is sign(E[r[t + 1]]).
    bar_of_row = np.searchsorted(bars.timestamp, table.timestamp)
    expected_next = np.append(planted.expected[1:], 0.0)[bar_of_row]
    folds = generate_walk_forward_indices(table.timestamp, PIPELINE_FOLDS, close_returns=table.targets[:, 0])
    fitted = time.perf_counter()
    baselines = {
        f.fold: fold_baselines(table.features, table.targets, f, scoring.cost_per_unit) for f in folds
    }
    baseline_seconds = time.perf_counter() - fitted
    oracle = {f.fold: np.sign(expected_next[f.val_start : f.val_end]) for f in folds}
    run = evaluate_run(
        table.features, table.targets, table.timestamp, folds, oracle, scoring, baselines=baselines
    )
    policies = run.stitched.policies
    net = {GENERATOR_ORACLE if name == MODEL else name: ev.net.sharpe for name, ev in policies.items()}
    best = feature_oracle(net)
    return {
        "seed": seed,
        "signal": "on" if signal else "off",
        "validation_bars": run.stitched.n_bars,
        "folds": len(folds),
        "generator_oracle_gross": policies[MODEL].gross.sharpe,
        "feature_oracle": best[1],
        "feature_oracle_model": best[0],
        "net_sharpe": net,
        "exposure": {GENERATOR_ORACLE if n == MODEL else n: ev.net.exposure for n, ev in policies.items()},
        "turnover_per_year": {
            GENERATOR_ORACLE if n == MODEL else n: ev.net.turnover_per_year for n, ev in policies.items()
        },
        "sharpe_se": policies[MODEL].net.sharpe_se,
        "baseline_seconds": baseline_seconds,
        "seconds": time.perf_counter() - start,
    }


def spread(rows: list[dict], pick) -> dict:
    values = [pick(r) for r in rows]
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values), "values": values}


def summarise(rows: list[dict]) -> dict:
    """Mean, min and max across seeds of each figure, per signal setting."""
    out = {}
    for signal in ("on", "off"):
        sel = [r for r in rows if r["signal"] == signal]
        if not sel:
            continue
        out[signal] = {
            GENERATOR_ORACLE: spread(sel, lambda r: r["net_sharpe"][GENERATOR_ORACLE]),
            "feature_oracle": spread(sel, lambda r: r["feature_oracle"]),
            **{name: spread(sel, lambda r, n=name: r["net_sharpe"][n]) for name in SHOWN},
        }
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    eval_config = EvalConfig()
    scoring = Scoring(cost=eval_config.cost, spread=eval_config.spread, resamples=0)
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    for signal in (True, False):
        for seed in seeds:
            row = measure(seed, args.bars, signal, scoring)
            rows.append(row)
            shown = " ".join(f"{n} {row['net_sharpe'][n]:.2f}" for n in SHOWN)
            print(
                f"signal {row['signal']:>3} seed {seed}: generator oracle {row['net_sharpe'][GENERATOR_ORACLE]:.2f} "
                f"(gross {row['generator_oracle_gross']:.2f}), feature oracle {row['feature_oracle']:.2f} "
                f"({row['feature_oracle_model']}); {shown}; ± {row['sharpe_se']:.2f} se; "
                f"baselines {row['baseline_seconds']:.1f}s",
                flush=True,
            )
    summary = summarise(rows)
    for signal, figures in summary.items():
        print(f"signal {signal}, across seeds {seeds} (mean [min, max]):")
        for name, s in figures.items():
            print(f"  {name:>18}: {s['mean']:7.2f} [{s['min']:.2f}, {s['max']:.2f}]")
    result = {
        "benchmark": "feature_oracle",
        "commit": git_commit(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": f"cpu: {cpu_model()}",
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "seeds": seeds,
        "bars": args.bars,
        "folds": {
            "train_days": PIPELINE_FOLDS.train_days,
            "val_days": PIPELINE_FOLDS.val_days,
            "step_days": PIPELINE_FOLDS.step_days,
            "max_folds": PIPELINE_FOLDS.max_folds,
            "mode": PIPELINE_FOLDS.mode,
        },
        "cost_per_unit": scoring.cost_per_unit,
        "generator": {
            "sigma": sample_data.SAMPLE_SIGMA,
            "news_rate": sample_data.SAMPLE_NEWS_RATE,
            "news_drift": sample_data.SAMPLE_NEWS_DRIFT,
            "news_bars": sample_data.NEWS_BARS,
            "news_jump_sigmas": sample_data.NEWS_JUMP_SIGMAS,
        },
        "runs": rows,
        "summary": summary,
    }
    write_result(args.out, result, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
