"""What share of the book's oracle the pooled decision lets a universe keep, per instrument count K
(`foxhunt.evaluate.universe_simulation`: K independent instruments, one shared policy, its pooled tail and
evidence counted at the instruments' effective share, the equal-risk book; two years, the 21 expanding folds).

    python bench/universe_power.py [--instruments 1 4 8 16] [--ts 2 2.5 3] [--runs 300] [--minutes 10]
    CPU check: --instruments 1 2 --ts 3 --runs 2 --calibration-runs 2 --minutes 60

Every run is simulated once and decided at every t (`select_min_t` = `select_pool_t` = t). Noise (no drift,
positions held 240 bars): how often the book lies below / above flat outside its interval. Edge: one
per-instrument drift for every K, calibrated (a secant, common random numbers) so that at `--calibrate-k`
(8) the ungated book of a skill-1 learner (the oracle's positions in every window) has a mean stitched net
Sharpe of `--target`, by default the sample universe's book feature oracle (1.12: 8 sample instruments at ¼×,
H200; `--calibrate-k 1 --target 1.24`: one sample instrument's ¼× oracle, as gate_power's); per run the
book's share of the book oracle (undefined where the oracle is not above 0), and how often a run meets issue
35's bar (share ≥ 80% and above flat outside the interval) and three seeds all do.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import gate_power as gp
import harness as h
import numpy as np

sys.path.insert(0, str(h.ROOT / "trainer_image"))

from foxhunt.config import DQNConfig  # noqa: E402
from foxhunt.evaluate.gate_simulation import Scenario, coarsened, rate  # noqa: E402
from foxhunt.evaluate.universe_simulation import book_record, decide_universe, universe_folds  # noqa: E402

BOOK_ORACLE = 1.12  # the sample universe's book feature oracle, 8 instruments at ¼× (issue 35, H200)
GOAL = 0.8  # issue 35: every seed's book ≥ 80% of the book's feature oracle
SEEDS = 3
HOLDING = 240.0


def run_figures(s: Scenario, shape, k: int, ts: list[float], rng: np.random.Generator) -> dict:
    """One universe run: its book oracle and ungated book, and per t the book's record and folds traded."""
    run = universe_folds(shape, s, k, rng)
    per_year, every = shape.bars_per_year, np.ones(len(run.folds), dtype=bool)
    out = {
        "share": run.share,
        "oracle": book_record(run, every, s.cost, per_year, oracle=True).sharpe,
        "ungated": book_record(run, every, s.cost, per_year).sharpe,
        "by_t": [],
    }
    for t in ts:
        trades = decide_universe(run.folds, replace(DQNConfig(), select_min_t=t, select_pool_t=t), per_year)
        record = book_record(run, trades, s.cost, per_year)
        out["by_t"].append((int(trades.sum()), record.sharpe, record.above_flat, record.below_flat))
    return out


def sweep(scenario: Scenario, k: int, minutes: int, ts: list[float], runs: int, seed: int) -> dict:
    """`runs` seeded universe runs of K instruments, summarised per t (gate_power.t_summary, on the book)."""
    shape, s = coarsened(scenario, minutes)
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    figures = [run_figures(s, shape, k, ts, rng) for _ in range(runs)]
    by_t = {}
    for i, t in enumerate(ts):
        cell = gp.t_summary(figures, i, GOAL)
        meets = sum(
            r["by_t"][i][2] and (sh := gp.ratio(r["by_t"][i][1], r["oracle"])) is not None and sh >= GOAL
            for r in figures
        )
        cell["meets_goal_and_above_flat"] = rate(meets, runs)
        cell["three_seeds_meet"] = (meets / runs) ** SEEDS
        by_t[f"{t:g}"] = cell
    return {
        "instruments": k,
        "scenario": asdict(scenario),
        "simulated": asdict(s),
        "runs": runs,
        "mean_effective_share": float(np.mean([r["share"] for r in figures])),
        "mean_book_oracle_sharpe": float(np.mean([r["oracle"] for r in figures])),
        "mean_ungated_book_sharpe": float(np.mean([r["ungated"] for r in figures])),
        "by_t": by_t,
        "seconds": time.perf_counter() - started,
    }


def ungated_book(drift: float, k: int, minutes: int, runs: int, seed: int) -> float:
    """The skill-1 learner's mean ungated book Sharpe at this per-instrument drift (seeded: common numbers)."""
    shape, s = coarsened(Scenario(holding_bars=HOLDING, skill=1.0, drift_sharpe=drift), minutes)
    rng = np.random.default_rng(seed)
    every = np.ones(len(shape.folds), dtype=bool)
    return float(np.mean([
        book_record(universe_folds(shape, s, k, rng), every, s.cost, shape.bars_per_year).sharpe
        for _ in range(runs)
    ]))  # fmt: skip


def calibrate(target: float, k: int, minutes: int, runs: int, seed: int, steps: int = 2) -> dict:
    """The per-instrument drift whose skill-1 ungated book at K = k has mean Sharpe `target` (a secant)."""
    points = [(d, ungated_book(d, k, minutes, runs, seed)) for d in (0.5, 1.0)]
    for _ in range(steps - 1):
        (d0, s0), (d1, s1) = points[-2:]
        drift = d1 + (target - s1) * (d1 - d0) / (s1 - s0)
        points.append((drift, ungated_book(drift, k, minutes, runs, seed)))
    best = min(points, key=lambda p: abs(p[1] - target))
    return {"target": target, "instruments": k, "drift_sharpe": best[0], "runs": runs, "seed": seed,
            "points": [{"drift_sharpe": d, "mean_ungated_book": s} for d, s in points]}  # fmt: skip


def measure(args: argparse.Namespace, work: Path, record: dict) -> None:
    """The calibration, then per K the noise and the edge swept over the ts, and the table."""
    shape, _ = coarsened(Scenario(), args.minutes)
    record["shape"] = {"bars": shape.bars, "bars_per_year": shape.bars_per_year, "minutes_a_bar": args.minutes,
                       "folds": len(shape.folds)}  # fmt: skip
    cal = calibrate(args.target, args.calibrate_k, args.minutes, args.calibration_runs, args.seed + 100)
    record["calibration"] = cal
    print(f"calibration: per-instrument drift Sharpe {cal['drift_sharpe']:.3f} ({cal['points']})", flush=True)
    edge = Scenario(holding_bars=HOLDING, skill=1.0, drift_sharpe=cal["drift_sharpe"])
    record["cells"] = {}
    for j, k in enumerate(args.instruments):
        for name, scenario in (("noise", Scenario(holding_bars=HOLDING)), ("edge", edge)):
            cell = sweep(scenario, k, args.minutes, args.ts, args.runs, args.seed + 10 * j + (name == "edge"))
            record["cells"][f"{name}-K{k}"] = cell
            gp._print_scenario(f"{name} K={k} (share {cell['mean_effective_share']:.3f})", _named(cell))
            h.write(record, args.out)
    record["table"] = table(record["cells"], args.instruments, args.ts)
    print("\n   K    t  book share median [IQR]  meets 80%+above  3 seeds  noise below / above")
    for r in record["table"]:
        print(f"{r['K']:>4} {r['t']:>4g}  {gp._fmt(r['share_median'])} [{gp._fmt(r['share_q1'])}, "
              f"{gp._fmt(r['share_q3'])}]  {gp._fmt(r['meets'], True):>15}  {gp._fmt(r['three_seeds'], True):>7}"
              f"  {gp._fmt(r['noise_below'], True)} / {gp._fmt(r['noise_above'], True)}")  # fmt: skip


def _named(cell: dict) -> dict:
    """A cell under gate_power's printed names (mean shadow: the ungated book here)."""
    return {**cell, "mean_shadow_sharpe": cell["mean_ungated_book_sharpe"],
            "mean_oracle_sharpe": cell["mean_book_oracle_sharpe"], "mean_ungated_sharpe": cell["mean_ungated_book_sharpe"]}  # fmt: skip


def table(cells: dict, instruments: list[int], ts: list[float]) -> list[dict]:
    """Per (K, t): the edge's book share of the book oracle, the runs meeting issue 35's bar, the noise's rates."""
    rows = []
    for k in instruments:
        for t in ts:
            e, n = cells[f"edge-K{k}"]["by_t"][f"{t:g}"], cells[f"noise-K{k}"]["by_t"][f"{t:g}"]
            q = e["share_of_oracle"]
            rows.append({"K": k, "t": t, "share_median": q["median"], "share_q1": q["q1"], "share_q3": q["q3"],
                         "meets": e["meets_goal_and_above_flat"]["rate"], "three_seeds": e["three_seeds_meet"],
                         "noise_below": n["below_flat"]["rate"], "noise_above": n["above_flat"]["rate"]})  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    h.common_args(p, repeats=1, device="cpu")
    p.add_argument("--instruments", nargs="+", type=int, default=[1, 4, 8, 16], help="K")
    p.add_argument("--ts", nargs="+", type=float, default=[2.0, 2.5, 3.0], help="select_pool_t")
    p.add_argument("--runs", type=int, default=300, help="simulated runs per cell (noise, edge) per K")
    p.add_argument("--calibration-runs", type=int, default=100, help="runs per point of the calibration")
    p.add_argument("--calibrate-k", type=int, default=8, help="K whose ungated book is calibrated")
    p.add_argument("--target", type=float, default=BOOK_ORACLE, help="its mean ungated book Sharpe")
    p.add_argument("--minutes", type=int, default=10, help="minutes a simulated bar (coarsened)")
    p.add_argument("--seed", type=int, default=0, help="the first cell's seed")
    return h.run_benchmark("universe_power", p.parse_args(argv), measure, "cpu")


if __name__ == "__main__":
    sys.exit(main())
