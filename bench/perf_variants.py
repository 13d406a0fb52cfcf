"""The step's switches measured one at a time, in one process, at equal batch size: which default wins.

Each variant changes one DQN setting from the base (steps per graph 2 or 4, paired next-state values
off or on, fused activations off or on, bf16 on), builds its own trainer (compile and capture
included, timed), and trains the largest fold for a few epochs, several times from the fold's
fresh start. Reported per variant: the median epoch (collection + steps), the median step from
timed graph replays, collection, the build, and the last loss (a sanity check: the same algorithm
must land in the same place). The choice is the fastest median epoch, kept only when it beats
the base by more than the noise margin.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, replace

import torch

from foxhunt.config import DQNConfig
from foxhunt.train import DQNTrainer, synchronize

NOISE_MARGIN = 0.02  # a variant must beat the base epoch by more than 2% to be chosen


def variant_changes(base: DQNConfig) -> dict[str, dict]:
    """Variant name → the settings it changes from `base` (the base itself first)."""
    return {
        "base": {},
        "steps_per_graph=2": {"steps_per_graph": 2},
        "steps_per_graph=4": {"steps_per_graph": 4},
        f"paired_next_state={not base.paired_next_state}": {"paired_next_state": not base.paired_next_state},
        f"fused_activation={not base.fused_activation}": {"fused_activation": not base.fused_activation},
        "bf16=True": {"bf16": True},
    }


def step_seconds(trainer: DQNTrainer, steps: int = 200) -> float:
    """Seconds per training step over `steps` graph replays, read after a device sync."""
    replays = max(1, math.ceil(steps / trainer.config.steps_per_graph))
    trainer.step.run()
    synchronize(trainer.device)
    started = time.perf_counter()
    for _ in range(replays):
        trainer.step.run()
    synchronize(trainer.device)
    return (time.perf_counter() - started) / (replays * trainer.config.steps_per_graph)


def top_kernels(trainer: DQNTrainer, replays: int = 50, top: int = 15) -> list[dict]:
    """The CUDA kernels of `replays` graph replays by device time per step (where the step's time goes)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            trainer.step.run()
        synchronize(trainer.device)
    steps = replays * trainer.config.steps_per_graph
    rows = []
    for event in prof.key_averages():
        device_us = getattr(event, "device_time_total", None) or getattr(event, "cuda_time_total", 0)
        if device_us > 0:
            rows.append(
                {
                    "kernel": event.key[:120],
                    "calls_per_step": event.count / steps,
                    "us_per_step": device_us / steps,
                }
            )
    return sorted(rows, key=lambda r: -r["us_per_step"])[:top]


def measure_variant(
    data, config: DQNConfig, fold, epochs: int, repeats: int, seed: int = 0
) -> tuple[dict, DQNTrainer]:
    """Build one trainer for `config` and time `repeats` × `epochs` epochs of `fold` from its fresh start."""
    synchronize(data.features.device)
    started = time.perf_counter()
    trainer = DQNTrainer(data, config, max_train_rows=fold.train_rows, seed=seed, diagnostics=False)
    synchronize(trainer.device)
    build = time.perf_counter() - started
    epoch_medians, collect, losses = [], [], []
    trainer.window.set_fold_range(fold)
    for _ in range(repeats):
        trainer.reset_for_fold(fold.fold)
        trainer.window.compute_norm_stats()
        for epoch in range(epochs):
            trainer.train_epoch(epoch, epochs)
        epoch_medians.append(statistics.median(trainer.histories[0].epoch_seconds))
        collect.append(statistics.median(trainer.histories[0].collect_seconds))
        losses.append(trainer.histories[0].loss[-1])
    timed_steps = 200 if trainer.cuda else 4  # a CPU step at batch 8192 takes a good part of a second
    steps = [step_seconds(trainer, timed_steps) for _ in range(repeats)]
    result = {
        "epoch_seconds": statistics.median(epoch_medians),
        "epoch_seconds_repeats": epoch_medians,
        "step_seconds": statistics.median(steps),
        "collect_seconds": statistics.median(collect),
        "steps_per_epoch": math.ceil(trainer.window.steps_per_epoch(trainer.config) / config.steps_per_graph)
        * config.steps_per_graph,
        "build_seconds": build,
        "last_loss": statistics.median(losses),
    }
    return result, trainer


def profile_kernels(trainers: dict[str, DQNTrainer], results: dict[str, dict]) -> None:
    """Each kept trainer's top kernels into its result, after every timing (the profiler may slow what follows)."""
    for name, trainer in trainers.items():
        try:
            results[name]["top_kernels"] = top_kernels(trainer) if trainer.cuda else []
        except Exception as exc:  # the profile is a diagnosis, never a reason to lose the timings
            results[name]["top_kernels"] = [{"error": f"{type(exc).__name__}: {exc}"}]


def run_matrix(data, base: DQNConfig, fold, *, epochs: int, repeats: int, deadline: float, log=print) -> dict:
    """Every variant of `base` that fits before `deadline` (perf_counter); failures are recorded, not raised."""
    results: dict[str, dict] = {}
    trainers: dict[str, DQNTrainer] = {}
    for name, changes in variant_changes(base).items():
        if time.perf_counter() > deadline:
            results[name] = {"changes": changes, "skipped": "time budget spent"}
            continue
        try:
            measured, trainers[name] = measure_variant(data, replace(base, **changes), fold, epochs, repeats)
        except Exception as exc:  # one variant's failure must not cost the others' figures
            results[name] = {"changes": changes, "error": f"{type(exc).__name__}: {exc}"}
            log(f"variant {name}: failed: {exc}")
            continue
        results[name] = {"changes": changes, **measured}
        log(
            f"variant {name}: epoch {measured['epoch_seconds'] * 1e3:.1f} ms, "
            f"step {measured['step_seconds'] * 1e6:.0f} µs, collect {measured['collect_seconds'] * 1e3:.1f} ms, "
            f"build {measured['build_seconds']:.1f} s"
        )
    profile_kernels(trainers, results)
    trainers.clear()
    if data.features.is_cuda:
        torch.cuda.empty_cache()
    return {"base": asdict(base), "fold_train_rows": fold.train_rows, "variants": results, **choose(results)}


def choose(results: dict[str, dict]) -> dict:
    """The fastest measured variant when it beats the base by more than NOISE_MARGIN, else the base; when
    the base itself failed, the fastest variant that ran (so `--adopt-best` still measures working code)."""
    measured = {n: r for n, r in results.items() if "epoch_seconds" in r}
    if not measured:
        return {"choice": "base", "choice_changes": {}, "choice_gain": 0.0, "why": "no variant ran"}
    best = min(measured, key=lambda n: measured[n]["epoch_seconds"])
    if "base" not in measured:
        why = f"the base did not run ({results.get('base', {}).get('error', 'skipped')}); fastest that ran"
        return {"choice": best, "choice_changes": results[best]["changes"], "choice_gain": None, "why": why}
    gain = 1.0 - measured[best]["epoch_seconds"] / measured["base"]["epoch_seconds"]
    if best == "base" or gain <= NOISE_MARGIN:
        return {"choice": "base", "choice_changes": {}, "choice_gain": 0.0, "why": "no variant beat the base"}
    why = f"{gain:.1%} faster epoch than the base (margin {NOISE_MARGIN:.0%})"
    return {"choice": best, "choice_changes": results[best]["changes"], "choice_gain": gain, "why": why}
