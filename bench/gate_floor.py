"""The smallest edge a fold can trade on: per fold of the default two-year shape, the pooled net Sharpe the
pooled decision must clear (`train.evidence.sharpe_gate` over the bars it pools), alone and with K instruments.

    python bench/gate_floor.py [--bars 753120] [--instruments 1 4 8 16] [--correlation 0 0.3]
    CPU check: --bars 260000

Fold k pools its own held-back tail (`train.selection.head_end` at the shipped `select_tail_share`) and the
validation windows of folds 0..k−1, every bar of every instrument taking part, counted at
`train.evidence.effective_share` for K instruments whose 1-bar returns correlate `--correlation` pairwise
(0: independent; FX majors run nearer 0.3–0.6). The gate is `select_min_sharpe` + `select_pool_t` standard
errors of a zero Sharpe over those bars, so a learner whose true edge lies under a fold's gate trades there
only on luck: what a target above the floor asks of the data, not of the learner. Arithmetic on the shipped
settings and the fold plan; no training.
"""

from __future__ import annotations

import argparse
import sys

import harness as h

sys.path.insert(0, str(h.ROOT / "trainer_image"))

from foxhunt.config import DQNConfig, FoldConfig  # noqa: E402
from foxhunt.data.folds import generate_walk_forward_indices  # noqa: E402
from foxhunt.data.sample import fx_minutes  # noqa: E402
from foxhunt.evaluate.records import bars_per_year  # noqa: E402
from foxhunt.train.evidence import effective_share, sharpe_gate  # noqa: E402
from foxhunt.train.selection import head_end  # noqa: E402

TWO_YEAR_BARS = 753_120  # the power table's two years of generated weekday minute bars


def fold_gates(bars: int, instruments: list[int], correlations: list[float]) -> dict:
    """Per fold its pooled bars (one instrument) and the gate per (K, ρ), at the shipped settings."""
    dqn, folds_config = DQNConfig(), FoldConfig()
    timestamp = fx_minutes(bars)
    per_year = bars_per_year(timestamp)
    rows, earlier = [], 0
    for f in generate_walk_forward_indices(timestamp, folds_config):
        pooled = (f.train_end - head_end(f, dqn.select_tail_share)) + earlier
        gates = {}
        for k in instruments:
            for rho in correlations:
                share = effective_share([[1.0 if i == j else rho for j in range(k)] for i in range(k)])
                gate = sharpe_gate(dqn.select_min_sharpe, dqn.select_pool_t, k * pooled * share, per_year)
                gates[f"K{k}_rho{rho:g}"] = gate
        rows.append({"fold": f.fold, "pooled_bars_one_instrument": pooled, "gates": gates})
        earlier += f.val_rows
    return {"bars_per_year": per_year, "select_pool_t": dqn.select_pool_t,
            "select_tail_share": dqn.select_tail_share, "folds": rows}  # fmt: skip


def measure(args: argparse.Namespace, work, record: dict) -> None:
    """The table, printed and kept in `record['gates']`."""
    record["shape"] = {"bars": args.bars, "instruments": args.instruments, "correlations": args.correlation}
    record["gates"] = fold_gates(args.bars, args.instruments, args.correlation)
    keys = list(record["gates"]["folds"][0]["gates"])
    print("fold  pooled bars  " + "  ".join(f"{k:>12}" for k in keys))
    for row in record["gates"]["folds"]:
        cells = "  ".join(f"{row['gates'][k]:>12.2f}" for k in keys)
        print(f"{row['fold']:>4}  {row['pooled_bars_one_instrument']:>11,}  {cells}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    h.common_args(p, repeats=1, device="cpu")
    p.add_argument("--bars", type=int, default=TWO_YEAR_BARS, help="generated weekday minute bars")
    p.add_argument("--instruments", nargs="+", type=int, default=[1, 4, 8, 16])
    p.add_argument("--correlation", nargs="+", type=float, default=[0.0, 0.3], help="pairwise |ρ|")
    return h.run_benchmark("gate_floor", p.parse_args(argv), measure, "cpu")


if __name__ == "__main__":
    sys.exit(main())
