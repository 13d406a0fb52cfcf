"""Before/after figures of the learner's levers on the CPU signal fixture (tests/support/signal_arrays.py).

For each lever setting and each seed: one fold (12 training days, 4 validation days) on the arrays with
the planted regime and on their driftless twin; the validation net Sharpe after 1 bp, turnover and
exposure of the fold's policy, beside flat (0) and buy-and-hold. Prints a table and writes JSON under
bench/results/. Usage: python bench/learner_levers.py [--epochs 15] [--seeds 0 1 2] [--levers base "n-step 5" ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "trainer_image"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402
from provenance import cpu_model, git_commit  # noqa: E402
from support.signal_arrays import FOLDS, signal_arrays  # noqa: E402

from foxhunt.config import DQNConfig  # noqa: E402
from foxhunt.data.folds import generate_walk_forward_indices  # noqa: E402
from foxhunt.train import DQNTrainer  # noqa: E402
from foxhunt.train.device_data import to_device  # noqa: E402

# The fixture's measured learning settings (the module docstring of signal_arrays).
BASE = DQNConfig(hidden=32, batch_size=1024, lr=1e-3, cost=2e-4, steps_per_epoch=60, compile=False)
LEVERS = {
    "base": BASE,
    "tail 0.25": replace(BASE, select_tail_share=0.25),
    "cost-blind (cost 0)": replace(BASE, cost=0.0),
    "cost-blind + tail 0.25": replace(BASE, cost=0.0, select_tail_share=0.25),
    "gamma 0": replace(BASE, gamma=0.0),
    "default cost 1bp, 4 epochs": replace(BASE, cost=1e-4),
    "default cost 1bp, 4 epochs + tail 0.25": replace(BASE, cost=1e-4, select_tail_share=0.25),
    "abstain 1 cost": replace(BASE, abstain_cost_multiple=1.0),
    "abstain 2 costs": replace(BASE, abstain_cost_multiple=2.0),
    "tail 0.25 + abstain 1 cost": replace(BASE, select_tail_share=0.25, abstain_cost_multiple=1.0),
    "default cost 1bp, 4 epochs + abstain 1": replace(BASE, cost=1e-4, abstain_cost_multiple=1.0),
    "cost-blind + abstain 1": replace(BASE, cost=0.0, abstain_cost_multiple=1.0),
    "cost 3bp": replace(BASE, cost=3e-4),
    "cost 3bp gamma 0": replace(BASE, cost=3e-4, gamma=0.0),
    "gamma 0 + tail 0.25": replace(BASE, gamma=0.0, select_tail_share=0.25),
    # The tail selection's significance gate: trade only where the best tail Sharpe clears t errors.
    "tail 0.25 + gate 2": replace(BASE, select_tail_share=0.25, select_min_t=2.0),
    "tail 0.25 + gate 3": replace(BASE, select_tail_share=0.25, select_min_t=3.0),
    "tail 0.2 + gate 3": replace(BASE, select_tail_share=0.2, select_min_t=3.0),
    # Held-action targets: hold the action n bars, then bootstrap (n = 1 is "base").
    "n-step 5": replace(BASE, n_step=5),
    "n-step 15": replace(BASE, n_step=15),
    "n-step 5 + abstain 1 cost": replace(BASE, n_step=5, abstain_cost_multiple=1.0),
    "n-step 15 + abstain 1 cost": replace(BASE, n_step=15, abstain_cost_multiple=1.0),
}
SHORT = {
    "default cost 1bp, 4 epochs + abstain 1",
    "default cost 1bp, 4 epochs",
    "default cost 1bp, 4 epochs + tail 0.25",
}


def one_fold(config: DQNConfig, seed: int, signal: bool, epochs: int) -> dict:
    """Train one fold and score its chosen policy on validation at 1 bp."""
    arrays = signal_arrays(seed=0, signal=signal)
    fold = generate_walk_forward_indices(arrays.timestamp, FOLDS, close_returns=arrays.targets[:, 0])[0]
    data = to_device(arrays.features, arrays.targets, arrays.timestamp, torch.device("cpu"))
    trainer = DQNTrainer(data, config, max_train_rows=fold.train_rows, seed=seed, eval_cost=1e-4,
                         diagnostics=False)  # fmt: skip
    trainer.set_fold_range(fold)
    trainer.reset_for_fold(fold.fold)
    trainer.window.compute_norm_stats()
    for epoch in range(epochs):
        trainer.train_epoch(epoch, epochs)
    choice = trainer.policies.choose_policies()[0]
    result = trainer.policies.validate()
    return {
        "sharpe": result["sharpe"],
        "turnover": result["turnover"],
        "exposure": result["exposure"],
        "buy_and_hold": result["buy_and_hold"]["sharpe"],
        "selection": None if choice is None else choice.to_dict(),
    }


def spread(values: list[float]) -> dict:
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else [values[0]] * 3
    return {"median": q[1], "iqr": q[2] - q[0], "min": min(values), "max": max(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--levers", nargs="*", default=list(LEVERS))
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name in args.levers:
        epochs = 4 if name in SHORT else args.epochs
        for signal in (True, False):
            started = time.perf_counter()
            runs = [one_fold(LEVERS[name], s, signal, epochs) for s in args.seeds]
            row = {
                "lever": name,
                "data": "signal" if signal else "driftless twin",
                "epochs": epochs,
                "sharpe": spread([r["sharpe"] for r in runs]),
                "turnover": spread([r["turnover"] for r in runs]),
                "exposure": spread([r["exposure"] for r in runs]),
                "runs": runs,
                "seconds": time.perf_counter() - started,
            }
            rows.append(row)
            print(
                f"{name:40s} {row['data']:15s} Sharpe median {row['sharpe']['median']:8.2f} "
                f"IQR {row['sharpe']['iqr']:7.2f} [{row['sharpe']['min']:.1f}, {row['sharpe']['max']:.1f}] "
                f"turnover {row['turnover']['median']:7.0f} exposure {row['exposure']['median']:.2f} "
                f"flat folds {sum(1 for r in runs if r['selection'] and r['selection']['went_flat'])} "
                f"({row['seconds']:.0f}s)",
                flush=True,
            )
    commit = git_commit()
    out = ROOT / "bench" / "results" / f"learner_levers-cpu-{datetime.now(UTC):%Y-%m-%d}-{commit[:7]}.json"
    out.write_text(json.dumps({
        "commit": commit, "date": datetime.now(UTC).isoformat(), "device": cpu_model(),
        "seeds": args.seeds, "base": BASE.__dict__ if hasattr(BASE, "__dict__") else str(BASE), "rows": rows,
    }, indent=2, default=str) + "\n")  # fmt: skip
    print(out)


if __name__ == "__main__":
    main()
