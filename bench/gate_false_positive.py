"""How often the trading decision trades on noise, and on an edge: the seeded simulation of
`foxhunt.evaluate.gate_simulation` at the default shape (two years of minute bars, 21 default folds,
expanding as shipped: each fold's tail the last quarter of every bar before it; `--mode rolling` the older
month-long tails).

    python bench/gate_false_positive.py [--runs 1000] [--power-runs 300] [--seed 0] [--mode expanding]
    CPU check: --runs 3 --power-runs 2

Per scenario (epochs E = 1 or 50, cost 0 or the evaluation's 1 bp, mean holding 30 or 240 minute bars,
flat half the time, consecutive epochs' latents correlated 0.9): per decision (today's per-fold gate,
the pooled decision, the pooled decision with earlier tails at full weight) the share of folds that
trade, of runs in which any fold trades (Wilson 95% intervals), and the traded folds' mean out-of-sample
Sharpe. The power side plants a drift (holding its sign: annualised Sharpe 8) that every candidate's
position follows with correlation `skill`. Driftless scenarios: every trade is a false positive.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict
from pathlib import Path

import harness as h

sys.path.insert(0, str(h.ROOT / "trainer_image"))

from foxhunt.config import FoldConfig  # noqa: E402
from foxhunt.evaluate.gate_simulation import Scenario, default_shape, simulate  # noqa: E402

NOISE = {
    "E1-cost0-hold30": Scenario(epochs=1, cost=0.0),
    "E50-cost0-hold30": Scenario(epochs=50, cost=0.0),
    "E1-cost1bp-hold30": Scenario(epochs=1),
    "E50-cost1bp-hold30": Scenario(epochs=50),
    "E1-cost1bp-hold240": Scenario(epochs=1, holding_bars=240.0),
    "E50-cost1bp-hold240": Scenario(epochs=50, holding_bars=240.0),
    "E50-cost1bp-hold240-foldcorr0.5": Scenario(epochs=50, holding_bars=240.0, fold_correlation=0.5),
}
POWER = {
    f"E50-cost1bp-hold240-drift8-skill{k}": Scenario(holding_bars=240.0, drift_sharpe=8.0, skill=k)
    for k in (0.2, 0.4, 0.6)
}
DECISIONS = ("per_fold", "pooled", "pooled_with_tails")


def measure(args: argparse.Namespace, work: Path, record: dict) -> None:
    """Every scenario's summary into `record['scenarios']`, the table printed as it goes."""
    shape = default_shape(mode=args.mode)
    record["shape"] = {"bars": shape.bars, "bars_per_year": shape.bars_per_year,
                       "mode": args.mode, "folds": list(shape.folds)}  # fmt: skip
    record["scenarios"] = {}
    print(f"{'scenario':<38} {'decision':<18} {'fold rate':>22} {'run rate':>22} {'traded OOS':>10}")
    jobs = [(name, s, args.runs) for name, s in NOISE.items()] + [
        (n, s, args.power_runs) for n, s in POWER.items()
    ]
    for i, (name, scenario, runs) in enumerate(jobs):
        started = time.perf_counter()
        summary = simulate(shape, scenario, runs, args.seed + i)
        summary["scenario"] = asdict(scenario)
        summary["seconds"] = time.perf_counter() - started
        record["scenarios"][name] = summary
        for d in DECISIONS:
            f, r = summary[d]["fold_rate"], summary[d]["run_rate"]
            print(
                f"{name:<38} {d:<18} {_pct(f):>22} {_pct(r):>22} {summary[d]['mean_traded_sharpe']:>10.3f}",
                flush=True,
            )
        h.write(record, args.out)  # a session cut short keeps what ran


def _pct(r: dict) -> str:
    """'2.21% [1.9, 2.6]'."""
    if r["rate"] is None:
        return "-"
    return f"{100 * r['rate']:.2f}% [{100 * r['low']:.2f}, {100 * r['high']:.2f}]"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    h.common_args(p, repeats=1, device="cpu")
    p.add_argument("--runs", type=int, default=1000, help="simulated runs per noise scenario")
    p.add_argument("--power-runs", type=int, default=300, help="simulated runs per planted-drift scenario")
    p.add_argument("--seed", type=int, default=0, help="the first scenario's seed (the i-th: seed + i)")
    p.add_argument("--mode", default=FoldConfig().mode, choices=("rolling", "expanding"), help="fold windows")
    args = p.parse_args(argv)
    return h.run_benchmark("gate_false_positive", args, measure, "cpu")


if __name__ == "__main__":
    sys.exit(main())
