"""bench/population_gpu.py's arithmetic and its table: throughput against the lone trainer, the verdict
against issue 13's 1.5×, the table's lines, the JSON's default name."""

from __future__ import annotations

import re
from pathlib import Path

TARGET_SPEEDUP = 1.5  # issue 13: a population's aggregate gradient samples/s against one trial at a time
LABELS = {
    "build_cold_seconds": "the trainer's construction (torch.compile of the step and CUDA-graph capture on "
    "CUDA, warm-up, first reset); dynamo reset before it, and this shape never compiled in this process "
    "(its Inductor and Triton caches start empty)",
    "build_warm_cache_seconds": "the same shape built again (diagnostics=False): dynamo traces again, "
    "Inductor and Triton find this process's caches",
    "step": "warm: after the build, a collection and a few replays; R replays between two synchronizes, "
    "K repeats, median",
    "collect": "warm: one epoch's collection (every training bar, every member), synchronized, after one "
    "untimed collection; median of K",
    "diagnostics": "warm: one member's epoch_diagnostics() + a synchronize; median over members and repeats",
    "epoch": "warm: train_epoch's wall (collection, steps, the accumulators' read, diagnostics when on) "
    "after one untimed epoch; median of K",
    "speedup_vs_lone": "P × the lone trainer's seconds over the population's: aggregate throughput ratio",
}


def compare(record: dict, lone: dict) -> None:
    """Each throughput against the lone trainer's: P × its seconds over ours (aggregate ratio)."""
    size = record["size"]
    record["step"]["speedup_vs_lone"] = (
        record["step"]["samples_per_second"] / lone["step"]["samples_per_second"]
    )
    record["collect"]["speedup_vs_lone"] = (
        size * lone["collect"]["seconds_median"] / record["collect"]["seconds_median"]
    )
    record["diagnostics"]["per_member_vs_lone"] = (
        record["diagnostics"]["per_member_seconds_median"] / lone["diagnostics"]["per_member_seconds_median"]
    )
    for key in ("epoch_with_diagnostics", "epoch_without_diagnostics"):
        ours, theirs = record[key], lone[key]
        ours["speedup_vs_lone"] = ours["samples_per_second"] / theirs["samples_per_second"]
    step_gain = record["step"]["speedup_vs_lone"] - 1.0
    kept = (
        (record["epoch_without_diagnostics"]["speedup_vs_lone"] - 1.0) / step_gain if step_gain > 0 else None
    )
    record["step_gain_kept_in_epoch"] = kept  # share of the step's gain left in a diagnostics-free epoch


def verdict(records: list[dict], target: float = TARGET_SPEEDUP) -> dict:
    """Whether the best population reaches `target` × the lone trainer's aggregate gradient samples/s."""
    populations = [r for r in records if r["kind"] == "population"]
    best = max(populations, key=lambda r: r["step"]["speedup_vs_lone"])
    speedup = best["step"]["speedup_vs_lone"]
    epoch = best["epoch_with_diagnostics"]["speedup_vs_lone"]
    return {
        "target": target,
        "metric": "aggregate gradient samples/s of warm step replays, population over the lone trainer",
        "best_size": best["size"],
        "speedup": speedup,
        "met": speedup >= target,
        "by_size": {str(r["size"]): r["step"]["speedup_vs_lone"] for r in populations},
        "best_epoch_speedup_with_diagnostics": epoch,
        "best_epoch_speedup_without_diagnostics": best["epoch_without_diagnostics"]["speedup_vs_lone"],
        "epoch_met": epoch >= target,
    }


HEADER = (
    f"{'trainer':<10}{'build s':>14}{'step ms':>9}{'grad samples/s':>16}{'×lone':>7}{'collect ms':>12}"
    f"{'diag ms/mbr':>12}{'epoch ms diag/plain':>21}{'epoch ×lone diag/plain':>24}"
)


def table_line(r: dict) -> str:
    """One trainer's figures on one line of the table."""
    ms = 1e3
    build = f"{r['build']['cold_seconds']:.1f}/{r['build']['warm_cache_seconds']:.1f}"
    epochs = (
        f"{r['epoch_with_diagnostics']['seconds_median'] * ms:.1f}/"
        f"{r['epoch_without_diagnostics']['seconds_median'] * ms:.1f}"
    )
    gains = "/".join(
        f"{r[k]['speedup_vs_lone']:.2f}×" for k in ("epoch_with_diagnostics", "epoch_without_diagnostics")
    )
    return (
        f"{r['trainer']:<10}{build:>14}{r['step']['seconds_per_step_median'] * ms:>9.3f}"
        f"{r['step']['samples_per_second']:>16,.0f}{r['step']['speedup_vs_lone']:>6.2f}×"
        f"{r['collect']['seconds_median'] * ms:>12.1f}{r['diagnostics']['per_member_seconds_median'] * ms:>12.2f}"
        f"{epochs:>21}{gains:>24}"
    )


def device_tag(name: str, device_type: str) -> str:
    """'NVIDIA H200' → 'h200'; 'cpu' for the CPU."""
    if device_type != "cuda":
        return "cpu"
    return re.sub(r"[^a-z0-9]+", "-", name.lower().replace("nvidia", "")).strip("-") or "cuda"


def default_out(report: dict) -> Path:
    """bench/results/population_gpu-<device>-<date>-<commit>.json."""
    commit = report["commit"]
    short = commit[:7] + ("-dirty" if commit.endswith("-dirty") else "")
    name = f"population_gpu-{report['device_tag']}-{report['date'][:10]}-{short}.json"
    return Path(__file__).resolve().parent / "results" / name
