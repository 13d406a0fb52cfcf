"""Seconds of one fold's validation and scoring at issue 23's shape: a 185,000-bar validation window.

    python bench/fold_scoring.py [--bars 400000] [--val-bars 185000] [--repeats 3] [--device cpu] [--out FILE]

Generated sample bars, their features, one fold: the training slice is every row before the window
(less the 60-bar purge). What `foxhunt train` does per fold after training, timed in parts:
`baselines` (the 1-bar ridge and the supervised ridges and MLPs fitted on the training slice, every
baseline's positions), `scoring` (`evaluation.evaluate_window`: the model and eight baselines, gross and
net, bootstrap intervals and paired tests with 1,000 resamples), and both together
(`run_scores.evaluate_fold`). The model's positions are random (the DQN's greedy rollout is timed by the
trainer's own benchmarks). Cold: the first call in this process; warm: the median of `--repeats` calls
after it, each with the bootstrap's kept block draws forgotten (a new fold is a new window length).
For a before figure, run it with PYTHONPATH at an older commit's `trainer_image`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import datetime, timezone

import numpy as np
from provenance import device_name, git_commit, write_result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--bars", type=int, default=400_000, help="generated bars (the fold's training slice is the rest)"
    )
    p.add_argument("--val-bars", type=int, default=185_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--device", default="cpu", help="where the baselines are fitted (cpu, cuda)")
    p.add_argument("--out", default=None, help="the JSON to write (default: print only)")
    return p.parse_args(argv)


def timed(call) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of `call()`; on a shared machine the CPU time is the steadier."""
    start, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - start, time.process_time() - cpu


def largest_difference(got, want) -> float:
    """The largest relative difference between two evaluations' float figures (absolute where the wanted
    one is 0; two NaNs agree), walking their dataclasses and mappings."""
    import dataclasses
    import math

    if dataclasses.is_dataclass(want):
        fields = dataclasses.fields(want)
        return max(
            (largest_difference(getattr(got, f.name), getattr(want, f.name)) for f in fields), default=0.0
        )
    if isinstance(want, dict):
        return max((largest_difference(got[k], want[k]) for k in want), default=0.0)
    if isinstance(want, float):
        if math.isnan(want) and math.isnan(got):
            return 0.0
        return abs(got - want) / (abs(want) if want != 0 else 1.0)
    return 0.0 if got == want else math.inf


def main(argv: list[str] | None = None) -> int:
    """Build the fold, time its parts cold and warm, print and write the figures."""
    import torch

    from foxhunt.data.bars import generate_sample_bars
    from foxhunt.data.features import compute_features
    from foxhunt.data.folds import FoldRange
    from foxhunt.evaluate import sharpe
    from foxhunt.evaluate.evaluation import MODEL, Scoring, evaluate_window
    from foxhunt.evaluate.records import fold_record
    from foxhunt.evaluate.run_scores import evaluate_fold, fold_baselines

    args = parse_args(argv)
    device = torch.device(args.device)
    table = compute_features(generate_sample_bars(args.bars))
    n = len(table)
    if args.val_bars + 1_000 > n:
        raise SystemExit(f"--val-bars {args.val_bars}: {n} rows leave no training slice")
    fold = FoldRange(0, 0, n - args.val_bars - 60, n - args.val_bars, n, 0.0)
    features = torch.from_numpy(table.features).to(device)
    targets = torch.from_numpy(table.targets).to(device)
    positions = np.random.default_rng(0).integers(-1, 2, args.val_bars).astype(np.float64)
    host_scoring = Scoring(cost=1e-4, seed=0)
    # Where `foxhunt train` scores: a run on a GPU scores its windows there (`run_scores.run_scoring`).
    scoring = Scoring(cost=1e-4, seed=0, device=str(device) if device.type == "cuda" else None)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def baselines() -> dict:
        out = fold_baselines(features, targets, fold, scoring)
        sync()
        return out

    others = {}

    def forget_draws() -> None:
        kept = getattr(sharpe, "bootstrap_starts", None)  # absent before issue 23: nothing kept to forget
        if kept is not None:
            kept.cache_clear()

    def score_window() -> None:
        forget_draws()
        records = {
            name: fold_record(0, fold.val_start, pos, table.timestamp, table.targets[:, 0])
            for name, pos in {MODEL: positions, **others}.items()
        }
        evaluate_window(records, scoring, 0)

    def whole_fold() -> None:
        forget_draws()
        evaluate_fold(features, targets, table.timestamp, fold, positions, scoring)
        sync()

    figures: dict[str, dict[str, float]] = {}
    for name, call in (("baselines", baselines), ("scoring", score_window), ("fold", whole_fold)):
        if name == "scoring":
            others.update(baselines())
        cold, cold_cpu = timed(call)
        warm_runs = [timed(call) for _ in range(args.repeats)]
        warm = statistics.median(w for w, _ in warm_runs)
        warm_cpu = statistics.median(c for _, c in warm_runs)
        figures[name] = {
            "cold_seconds": cold,
            "warm_seconds": warm,
            "cold_cpu_seconds": cold_cpu,
            "warm_cpu_seconds": warm_cpu,
        }
        print(
            f"{name:>9}: cold {cold:.3f} s ({cold_cpu:.3f} s CPU), warm {warm:.3f} s ({warm_cpu:.3f} s CPU; "
            f"median of {args.repeats})",
            flush=True,
        )
    agreement = None
    if scoring.device is not None:  # the device's figures against the host's, the target's 1e-9
        records = {
            name: fold_record(0, fold.val_start, pos, table.timestamp, table.targets[:, 0])
            for name, pos in {MODEL: positions, **others}.items()
        }
        got, want = evaluate_window(records, scoring, 0), evaluate_window(records, host_scoring, 0)
        agreement = largest_difference(got, want)
        print(
            f"device against host: largest relative difference {agreement:.2e} over every figure", flush=True
        )
    result = {
        "benchmark": "fold_scoring",
        "commit": git_commit(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": device_name(device),
        "torch_threads": torch.get_num_threads(),
        "load_average_at_end": os.getloadavg()[0],
        "bars": args.bars,
        "train_rows": fold.train_rows,
        "val_bars": fold.val_rows,
        "resamples": scoring.resamples,
        "scoring_device": scoring.device or "host",
        "device_vs_host_largest_relative_difference": agreement,
        "repeats": args.repeats,
        "seconds": figures,
    }
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
