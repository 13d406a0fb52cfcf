"""Where a training step's time goes on the GPU: step seconds per variant and the top CUDA kernels.

python bench/step_profile.py --bars 4000000 --out bench/results/step_profile-h200.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from foxhunt.config import DQNConfig, FoldConfig
from foxhunt.data.bars import generate_sample_bars
from foxhunt.data.features import compute_features
from foxhunt.data.folds import generate_walk_forward_indices
from foxhunt.train import DQNTrainer, synchronize, to_device


def time_steps(trainer: DQNTrainer, steps: int) -> float:
    """Mean seconds per training step over `steps` graph replays (after three warm-ups)."""
    for _ in range(3):
        trainer.step.run()
    synchronize(trainer.device)
    t0 = time.perf_counter()
    replays = math.ceil(steps / trainer.config.steps_per_graph)
    for _ in range(replays):
        trainer.step.run()
    synchronize(trainer.device)
    return (time.perf_counter() - t0) / (replays * trainer.config.steps_per_graph)


def top_kernels(trainer: DQNTrainer, steps: int = 50, top: int = 20) -> list[dict]:
    """CUDA kernels of `steps` replays, by total device time."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            trainer.step.run()
        synchronize(trainer.device)
    rows = []
    for e in prof.key_averages():
        device_us = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if device_us > 0:
            rows.append(
                {"kernel": e.key[:120], "calls_per_step": e.count / steps, "us_per_step": device_us / steps}
            )
    return sorted(rows, key=lambda r: -r["us_per_step"])[:top]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bars", type=int, default=4_000_000)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--out", default="bench/results/step_profile.json")
    args = parser.parse_args(argv)
    torch._dynamo.config.cache_size_limit = 64
    table = compute_features(generate_sample_bars(args.bars, seed=0))
    data = to_device(table.features, table.targets, table.timestamp, torch.device("cuda"))
    fr = generate_walk_forward_indices(
        table.timestamp,
        FoldConfig(train_days=3000, val_days=300, step_days=300, mode="expanding", max_folds=1),
    )[0]
    base = DQNConfig()
    variants = {
        "graph_fp32": replace(base, compile=False),
        "graph_compiled_tf32": base,
        "graph_compiled_bf16": replace(base, bf16=True),
    }
    result = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "bars": args.bars,
        "train_rows": fr.train_rows,
        "steps_per_epoch": math.ceil(fr.train_rows / base.batch_size),
        "variants": {},
    }
    for name, config in variants.items():
        trainer = DQNTrainer(data, config, max_train_rows=fr.train_rows, seed=0)
        trainer.window.set_fold_range(fr)
        trainer.reset_for_fold(0)
        trainer.window.compute_norm_stats()
        t0 = time.perf_counter()
        trainer.collect(0.5)
        synchronize(trainer.device)
        collect = time.perf_counter() - t0
        step = time_steps(trainer, args.steps)
        entry = {
            "step_seconds": step,
            "collect_seconds": collect,
            "epoch_seconds_estimate": collect + step * result["steps_per_epoch"],
        }
        if name in ("graph_compiled_tf32", "graph_compiled_bf16"):
            entry["top_kernels"] = top_kernels(trainer)
        result["variants"][name] = entry
        print(
            f"{name:>26}: step {step * 1e3:.3f} ms, collect {collect * 1e3:.1f} ms, "
            f"epoch ≈ {entry['epoch_seconds_estimate'] * 1e3:.1f} ms",
            flush=True,
        )
        del trainer
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    for name in ("graph_compiled_tf32", "graph_compiled_bf16"):
        print(f"\ntop kernels, {name} (us per step):")
        for row in result["variants"][name]["top_kernels"][:12]:
            print(f"  {row['us_per_step']:8.1f}  x{row['calls_per_step']:.0f}  {row['kernel']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
