"""Issue 23: the per-epoch work around the step — the greedy diagnostics and the tail selection's score —
counted at a fixed shape: torch ops dispatched, host reads (`tolist`, `item`, `float` of a tensor) and
seconds, per epoch of one member.

Paths: `per_call` is what an epoch ran before (epoch_diagnostics + its read, then tail_score: one rollout
per range, the tail's full metrics beside buy-and-hold and flat, four host reads); `merged` is
`MemberPolicies.epoch_figures` (one scan, one read) run eagerly, also with only one of the two due;
`graphed` the same replayed from its CUDA graph (what a GPU run does from a fold's second epoch; on a GPU
only); `neither` is an epoch that needs none. The shape: real EURUSD minute bars (tests/data), one fold of `--train-days` and
`--val-days`, the default select_tail_share; the network of `--hidden` (the trainer is not trained: the
work does not depend on the weights). On a GPU the ops are the kernel launches that bound it.

    python bench/epoch_overhead.py --device cpu --out bench/results/epoch_overhead-cpu-DATE-COMMIT.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from provenance import device_name, git_commit, write_result
from torch.utils._python_dispatch import TorchDispatchMode

from foxhunt.config import DQNConfig, FoldConfig
from foxhunt.data.bars import read_bars_file
from foxhunt.data.features import compute_features
from foxhunt.data.folds import generate_walk_forward_indices
from foxhunt.train.device_data import synchronize, to_device
from foxhunt.train.diagnostics import FoldHistory, record_diagnostics
from foxhunt.train.dqn import DQNTrainer

EURUSD = Path(__file__).resolve().parents[1] / "tests" / "data" / "EURUSD_M1_2018_head.parquet"
HOST_READS = ("tolist", "item", "__float__")


class OpCount(TorchDispatchMode):
    """Counts the torch ops dispatched (each a kernel launch or a view on a GPU)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        return func(*args, **(kwargs or {}))


def count_host_reads(work) -> int:
    """Calls of Tensor.tolist / item / __float__ while `work()` runs."""
    reads = [0]
    saved = {name: getattr(torch.Tensor, name) for name in HOST_READS}

    def counting(original):
        def read(self, *args):
            reads[0] += 1
            return original(self, *args)

        return read

    try:
        for name, original in saved.items():
            setattr(torch.Tensor, name, counting(original))
        work()
    finally:
        for name, original in saved.items():
            setattr(torch.Tensor, name, original)
    return reads[0]


def per_call(trainer: DQNTrainer, diagnose: bool, tail: bool) -> None:
    if diagnose:
        record_diagnostics(FoldHistory(), trainer.policies.epoch_diagnostics(0), time.perf_counter())
    if tail:
        trainer.policies.tail_score(0)


def merged(trainer: DQNTrainer, diagnose: bool, tail: bool, graphed: bool = False) -> None:
    trainer.configs[0] = DQNConfig(
        **{**trainer.configs[0].__dict__, "select_tail_share": 0.25 if tail else 0.0}
    )
    replayed = getattr(trainer.policies, "replayed", None)  # absent before the epoch graph
    if replayed is not None:
        replayed.graphed = graphed and trainer.device.type == "cuda"
    trainer.policies.epoch_figures(0, {0: FoldHistory() if diagnose else None})


def graphed(trainer: DQNTrainer, diagnose: bool, tail: bool) -> None:
    merged(trainer, diagnose, tail, graphed=True)


def measure(trainer: DQNTrainer, path, diagnose: bool, tail: bool, repeats: int) -> dict:
    def work() -> None:
        path(trainer, diagnose, tail)
        synchronize(trainer.device)

    work()  # warm (with the epoch graph: its eager first call)
    work()  # with the epoch graph: its capture
    with OpCount() as count:
        work()
    reads = count_host_reads(work)
    seconds = []
    for _ in range(repeats):
        started_wall, started_cpu = time.perf_counter(), time.process_time()
        work()
        seconds.append((time.perf_counter() - started_wall, time.process_time() - started_cpu))
    return {
        "ops": count.ops,
        "host_reads": reads,
        "wall_ms": statistics.median(s[0] for s in seconds) * 1e3,
        "cpu_ms": statistics.median(s[1] for s in seconds) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--train-days", type=float, default=60.0)
    parser.add_argument("--val-days", type=float, default=20.0)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    table = compute_features(read_bars_file(str(EURUSD))[0])
    fold = generate_walk_forward_indices(
        table.timestamp, FoldConfig(train_days=args.train_days, val_days=args.val_days, max_folds=1)
    )[0]
    data = to_device(table.features, table.targets, table.timestamp, device)
    config = DQNConfig(hidden=args.hidden, compile=False)
    trainer = DQNTrainer(data, config, max_train_rows=fold.train_rows, seed=0)
    trainer.set_fold_range(fold)
    trainer.reset_for_fold(fold.fold)
    trainer.window.compute_norm_stats()
    result: dict = {
        "commit": git_commit(),
        "device": device_name(device),
        "torch": torch.__version__,
        "threads": args.threads,
        "shape": {
            "hidden": args.hidden,
            "train_rows": fold.train_rows,
            "tail_rows": fold.train_end - trainer.window.learn_end,
            "val_rows": fold.val_rows,
        },
    }
    cases = {"both": (True, True), "diagnostics_only": (True, False), "tail_only": (False, True)}
    for case, (diagnose, tail) in cases.items():
        result[f"per_call_{case}"] = measure(trainer, per_call, diagnose, tail, args.repeats)
        if hasattr(trainer.policies, "epoch_figures"):
            result[f"merged_{case}"] = measure(trainer, merged, diagnose, tail, args.repeats)
        if hasattr(trainer.policies, "replayed") and device.type == "cuda":
            result[f"graphed_{case}"] = measure(trainer, graphed, diagnose, tail, args.repeats)
    if hasattr(trainer.policies, "epoch_figures"):
        result["merged_neither"] = measure(trainer, merged, False, False, args.repeats)
    for key, value in result.items():
        print(f"{key}: {value}")
    write_result(args.out, result)


if __name__ == "__main__":
    sys.exit(main())
