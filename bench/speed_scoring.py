"""speed.py scoring: one fold's baselines and scoring (`evaluate_fold`) at a 185k-bar window, in this process.

    python bench/speed.py scoring [--val-bars 185000] [--repeats 3] [--device cuda] [--profile]

Cold (the first call) and warm (the median of the repeats), on the host or the GPU; on CUDA also the host
syncs of each part (host_syncs) and the device's figures against the host's. With `--profile`, one more warm
call of each part under torch.profiler: where its wall time goes (the ops' own host time, the device's
kernels, the rest Python) and the ops that take most of each.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from pathlib import Path

import harness as h

FOLD_SCORING_TARGET = 0.1  # issue 36: one fold's validation and scoring, 185k bars, warm


def largest_difference(got, want) -> float:
    """The largest relative difference between two evaluations' float figures (absolute where the wanted one
    is 0; two NaNs agree), walking their dataclasses and mappings; another word is an infinite difference."""
    if dataclasses.is_dataclass(want):
        pairs = [(getattr(got, f.name), getattr(want, f.name)) for f in dataclasses.fields(want)]
        return max((largest_difference(g, w) for g, w in pairs), default=0.0)
    if isinstance(want, dict):
        return max((largest_difference(got[k], want[k]) for k in want), default=0.0)
    if isinstance(want, float):
        if math.isnan(want) and math.isnan(got):
            return 0.0
        return abs(got - want) / (abs(want) if want != 0 else 1.0)
    return 0.0 if got == want else math.inf


def cold_and_warm(call, repeats: int, forget) -> dict:
    """`call()` once cold, then `repeats` times warm (median, min, max), wall and CPU seconds; `forget()`
    before each (the bootstrap's kept block draws: a new fold is a new window length)."""
    timed = []
    for _ in range(repeats + 1):
        forget()
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        timed.append((time.perf_counter() - wall, time.process_time() - cpu))
    return {"cold_seconds": timed[0][0], "cold_cpu_seconds": timed[0][1],
            "warm": h.spread(w for w, _ in timed[1:]), "warm_cpu": h.spread(c for _, c in timed[1:])}  # fmt: skip


def forget_block_draws() -> None:
    """A new fold is a new window length: its bootstrap block draws, and their device copy, are drawn anew."""
    from foxhunt.evaluate import sharpe
    from foxhunt.evaluate.device_series import _device_starts

    sharpe.bootstrap_starts.cache_clear()
    _device_starts.cache_clear()


def run_matmul_precision(device) -> str:
    """The float32 matmul precision a run scores its folds under: TF32 ("high") on CUDA, which the run's
    trainer sets at its build (`DQNTrainer`) before any fold is scored; the default elsewhere. Without it
    this process would fit the baselines' MLPs in full float32 on the CUDA cores, which no run does."""
    import torch

    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")
    return torch.get_float32_matmul_precision()


def scoring_fold(bars: int, val_bars: int, device) -> tuple:
    """Generated bars' features, one fold whose validation window is the last `val_bars`, the features and
    targets on `device`, and random positions for the window."""
    import numpy as np
    import torch

    from foxhunt.data.bars import generate_sample_bars
    from foxhunt.data.features import compute_features
    from foxhunt.data.folds import FoldRange

    table = compute_features(generate_sample_bars(bars))
    n = len(table)
    if val_bars + 1_000 > n:
        raise SystemExit(f"--val-bars {val_bars}: {n} rows leave no training slice")
    fold = FoldRange(0, 0, n - val_bars - 60, n - val_bars, n, 0.0)
    features, targets = (torch.from_numpy(a).to(device) for a in (table.features, table.targets))
    positions = np.random.default_rng(0).integers(-1, 2, val_bars).astype(np.float64)
    return table, fold, features, targets, positions


def scoring(args: argparse.Namespace, work: Path, record: dict) -> None:
    """One fold's validation work after training, in this process: baselines, scoring, both (cold, warm)."""
    import host_syncs
    import torch

    from foxhunt.evaluate.evaluation import MODEL, Scoring, evaluate_window
    from foxhunt.evaluate.records import window_records
    from foxhunt.evaluate.run_scores import evaluate_fold, fold_baselines

    device = torch.device("cuda" if record["device_type"] == "cuda" else "cpu")
    record["float32_matmul_precision"] = run_matmul_precision(device)
    table, fold, features, targets, positions = scoring_fold(args.bars, args.val_bars, device)
    # Where `foxhunt train` scores: a run on a GPU scores its windows there.
    score = Scoring(cost=1e-4, seed=0, device="cuda" if device.type == "cuda" else None)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    others: dict = {}

    def records() -> dict:  # as `evaluate_fold` builds them
        return window_records(
            0, fold.val_start, {MODEL: positions, **others}, table.timestamp, table.targets[:, 0]
        )

    def calls(score: Scoring) -> dict:
        return {
            "baselines": lambda: (fold_baselines(features, targets, fold, score), sync()),
            "scoring": lambda: evaluate_window(records(), score, 0),
            "fold": lambda: (
                evaluate_fold(features, targets, table.timestamp, fold, positions, score),
                sync(),
            ),
        }

    seconds: dict = {}
    for name, call in calls(score).items():
        if name == "scoring":
            others.update(fold_baselines(features, targets, fold, score))
        seconds[name] = cold_and_warm(call, args.repeats, forget_block_draws)
        print(
            f"{name}: cold {seconds[name]['cold_seconds']:.3f}s, warm {seconds[name]['warm']['median']:.3f}s"
        )
    # One warm call of each on the device path (on the CPU its torch twin, `Scoring.device` "cpu"), counted.
    twin = score if score.device else dataclasses.replace(score, device="cpu")
    counts = host_syncs.count_each(calls(twin), device, forget_block_draws)
    record["counts"] = {"scoring_device": twin.device, **counts}
    if score.device is not None:  # the device's figures against the host's, to 1e-9
        host = evaluate_window(records(), Scoring(cost=1e-4, seed=0), 0)
        record["device_vs_host_largest_relative_difference"] = largest_difference(
            evaluate_window(records(), score, 0), host
        )
    if args.profile:
        record["profile"] = {
            name: op_profile(call, device, forget_block_draws) for name, call in calls(score).items()
        }
    record.update(shape={"bars": args.bars, "train_rows": fold.train_rows, "val_bars": fold.val_rows,
                         "resamples": score.resamples, "scoring_device": score.device or "host",
                         "torch_threads": torch.get_num_threads()}, seconds=seconds)  # fmt: skip
    record["targets"]["fold_scoring_warm_seconds"] = h.target(
        seconds["fold"]["warm"]["median"],
        FOLD_SCORING_TARGET,
        how=f"`evaluate_fold` at {fold.val_rows:,} validation bars, warm median of {args.repeats}",
    )


def op_profile(call, device, forget, top: int = 12) -> dict:
    """One warm `call()` (after `forget()`, as the timed ones) under torch.profiler: its wall seconds, the
    seconds of the ops' own host time and of the device's kernels, and the `top` ops by each."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    forget()
    with profile(activities=activities) as prof:
        wall = time.perf_counter()
        call()
        if device.type == "cuda":
            torch.cuda.synchronize()
        wall = time.perf_counter() - wall
    ops = prof.key_averages()

    def device_us(e) -> float:  # torch ≥ 2.4 names it device time; older builds cuda time
        return float(getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0.0)))

    def ranked(seconds) -> list[dict]:
        rows = sorted(ops, key=seconds, reverse=True)[:top]
        return [{"op": e.key, "calls": e.count, "seconds": seconds(e)} for e in rows if seconds(e) > 0]

    host = lambda e: e.self_cpu_time_total / 1e6  # noqa: E731
    kernels = lambda e: device_us(e) / 1e6  # noqa: E731
    return {"wall_seconds": wall, "ops_host_seconds": sum(host(e) for e in ops),
            "device_kernel_seconds": sum(kernels(e) for e in ops),
            "top_by_host": ranked(host), "top_by_device": ranked(kernels)}  # fmt: skip
