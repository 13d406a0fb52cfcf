"""The trainer's step: the lone trainer's step time and a population's aggregate gradient samples/s.

    python bench/step.py lone                       (the lone trainer at the default settings, 4M rows)
    python bench/step.py population [--sizes 1,2,4,8,32,64]
    CPU check: --device cpu --rows 4000 --batch 256 --hidden 16 --sizes 1,2 --repeats 2 --replays 2

One process, synthetic float32 data made on the device (features (n, 42), 1-bar returns (n, 4); one fold of
`--rows` training rows, a 60-bar purge and validation rows in the plan's proportions). The lone `DQNTrainer`
runs the default settings; a `DQNTrainer` of P members runs distinct shape-free settings (lr, gamma, tau),
so no member's work can be shared. Per trainer: (1) the warm step: R replays of `step.run()` between two
synchronizes, K repeats, median seconds per step; aggregate gradient samples/s = P × batch × steps / seconds;
(2) one epoch's collection and every member's diagnostics as an epoch runs them; (3) whole epochs
(`train_epoch`) with diagnostics and, on a second build without, as aggregate samples/s; (4) the build,
cold (dynamo reset, empty Inductor and Triton caches of the run's own) and again with the caches warm.
Every ratio is P × the lone trainer's seconds over the population's; `verdict` says whether the best P
reaches issue 13's 1.5×, and the `targets` block holds issue 36's: the lone step ≤ 0.20 ms, the best
population ≥ 200M gradient samples/s.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

import harness as h
import numpy as np
import torch

from foxhunt.config import DQNConfig
from foxhunt.data.folds import FoldRange
from foxhunt.train import DeviceData, DQNTrainer, resolve_device, synchronize

N_FEATURES, N_TARGETS = 42, 4
MINUTE_NS = 60_000_000_000
VAL_SHARE = 0.185 / 4.0  # validation rows per training row, as the plan's 185k after 4.0M
PURGE_BARS = 60
WARM_REPLAYS = 10  # replays after build and collection before any step is timed
TARGET_SPEEDUP = 1.5  # issue 13: a population's aggregate gradient samples/s against one trial at a time
TARGET_STEP_SECONDS = 0.20e-3  # issue 36: the lone trainer's step
TARGET_SAMPLES_PER_SECOND = 200e6  # issue 36: the best population's aggregate gradient samples/s
LABELS = {
    "build_cold_seconds": "construction (compile and CUDA-graph capture on CUDA, warm-up, first reset); dynamo "
    "reset before it, empty Inductor and Triton caches",
    "build_warm_cache_seconds": "the same shape built again (diagnostics=False): the caches warm",
    "step": "warm: R replays between two synchronizes, K repeats, median",
    "collect": "warm: one epoch's collection after one untimed one; median of K",
    "diagnostics": "warm: every member's diagnostics as an epoch runs them, one host read; median of K",
    "epoch": "warm: train_epoch's wall after one untimed epoch; median of K",
    "speedup_vs_lone": "P × the lone trainer's seconds over the population's: aggregate throughput ratio",
}


def sizes(text: str) -> list[int]:
    """'1,2,4,8' → [1, 2, 4, 8]; every size a positive integer."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected population sizes of at least 1, got {text!r}")
    return values


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("lone", "population"), help="the lone trainer only, or populations too")
    p.add_argument("--out", default=None, help="the JSON (default bench/results/step-…json)")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--rows", type=int, default=4_000_000, help="training rows of the fold")
    p.add_argument("--batch", type=int, default=DQNConfig().batch_size)
    p.add_argument("--hidden", type=int, default=DQNConfig().hidden)
    p.add_argument("--sizes", type=sizes, default=[1, 2, 4, 8], help="population sizes, e.g. 1,2,4,8")
    p.add_argument("--repeats", type=int, default=5, help="K: timed repeats of every figure")
    p.add_argument("--replays", type=int, default=250, help="R: step replays per timed repeat")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.rows < 1000 or args.batch < 1 or args.hidden < 1 or args.repeats < 1 or args.replays < 1:
        p.error("--rows must be at least 1000; --batch, --hidden, --repeats and --replays at least 1")
    return args


def member_configs(base: DQNConfig, size: int) -> list[DQNConfig]:
    """`size` members of `base`'s shape with distinct shape-free settings; a lone member is `base` itself."""
    if size == 1:
        return [base]
    spread = [i / (size - 1) for i in range(size)]  # 0 … 1; 0.5 would be the defaults
    return [
        replace(
            base,
            lr=base.lr * 10 ** (f - 0.5),
            gamma=base.gamma - 0.05 + 0.1 * f,
            tau=base.tau * (0.5 + f),
        )
        for f in spread
    ]


def synthetic_data(train_rows: int, device: torch.device, seed: int) -> tuple[DeviceData, FoldRange]:
    """Random features and 1-bar returns (bp-sized) made on the device, and one fold over them."""
    val_rows = max(256, round(train_rows * VAL_SHARE))
    rows = train_rows + PURGE_BARS + val_rows
    gen = torch.Generator(device=device).manual_seed(seed)
    features = torch.randn(rows, N_FEATURES, generator=gen, device=device)
    targets = torch.randn(rows, N_TARGETS, generator=gen, device=device) * 1e-4
    timestamp = np.arange(rows, dtype=np.int64) * MINUTE_NS
    synchronize(device)
    data = DeviceData(features, targets, timestamp, features.nbytes + targets.nbytes)
    fold = FoldRange(0, 0, train_rows, train_rows + PURGE_BARS, rows, 0.0)
    return data, fold


def release(device: torch.device) -> None:
    """Free what the last trainer held (its graph's pool too), and forget its compiled step."""
    if device.type == "cuda":
        torch._dynamo.reset()  # each build compiles as in a fresh process: static shapes, no stale guards
    gc.collect()  # a trainer and its step's bound methods form a cycle
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def timed(device: torch.device, work) -> float:
    """Wall seconds of `work()` between two synchronizes."""
    synchronize(device)
    started = time.perf_counter()
    work()
    synchronize(device)
    return time.perf_counter() - started


def build(configs: list[DQNConfig], lone: bool, data: DeviceData, fold: FoldRange, diagnostics: bool):
    """A trainer pointed at the fold, normalised; and its build seconds (construction only)."""
    release(data.features.device)
    kwargs = {"max_train_rows": fold.train_rows, "seed": 0, "diagnostics": diagnostics}
    started = time.perf_counter()
    trainer = DQNTrainer(data, configs[0] if lone else configs, **kwargs)
    synchronize(data.features.device)
    seconds = time.perf_counter() - started
    trainer.set_fold_range(fold)  # as a run points it: the learnt head, the held-back tail scored each epoch
    trainer.reset_for_fold(fold.fold)
    trainer.window.compute_norm_stats()
    return trainer, seconds


def summary(seconds: list[float]) -> dict:
    return {"repeats_seconds": seconds, "seconds_median": statistics.median(seconds)}


def measure_steps(trainer, size: int, args: argparse.Namespace) -> dict:
    """Warm replays of the captured step: median seconds per step, aggregate gradient samples/s."""
    device = trainer.device
    per_replay = trainer.config.steps_per_graph
    for _ in range(WARM_REPLAYS):
        trainer.step.run()

    def replays() -> None:
        for _ in range(args.replays):
            trainer.step.run()

    seconds = [timed(device, replays) for _ in range(args.repeats)]
    steps = args.replays * per_replay
    per_step = statistics.median(seconds) / steps
    return {
        **summary(seconds),
        "replays": args.replays,
        "steps_per_replay": per_replay,
        "seconds_per_step_median": per_step,
        "samples_per_second": size * args.batch / per_step,
    }


def measure_collection_and_diagnostics(trainer, members: list, repeats: int) -> dict:
    """One epoch's collection (median of K) and the members' diagnostics as an epoch runs them
    (`epoch_figures`: one scan per member, one host read for all; median of K, and per member)."""
    device = trainer.device
    trainer.collect(1.0)  # untimed: the replay fills, every collection kernel has run
    collect = [timed(device, lambda: trainer.collect(0.5)) for _ in range(repeats)]
    from foxhunt.train.diagnostics import FoldHistory

    def diagnose_all() -> None:  # what an epoch runs: every member's diagnostics, one host read
        trainer.policies.epoch_figures(0, {member: FoldHistory() for member in members})

    diagnose_all()  # untimed, as the collection above
    per_epoch = [timed(device, diagnose_all) for _ in range(repeats)]
    per_member = [seconds / len(members) for seconds in per_epoch]
    return {
        "collect": {**summary(collect), "rows": trainer.window.transitions},
        "diagnostics": {
            "repeats_seconds": per_epoch,  # all members at once, as an epoch runs them
            "per_member_seconds_median": statistics.median(per_member),
            "per_epoch_seconds": statistics.median(per_epoch),
        },
    }


def measure_epochs(trainer, size: int, repeats: int) -> dict:
    """Whole epochs through train_epoch after one untimed epoch; aggregate samples/s of the median epoch."""
    epochs = repeats + 1
    trainer.train_epoch(0, epochs)
    seconds, stopped = [], 0
    for epoch in range(1, epochs):
        synchronize(trainer.device)
        started = time.perf_counter()
        stats = trainer.train_epoch(epoch, epochs)
        synchronize(trainer.device)
        seconds.append(time.perf_counter() - started)
        stopped = sum(s is None for s in stats)
    spg = trainer.config.steps_per_graph
    steps = math.ceil(trainer.window.steps_per_epoch(trainer.config) / spg) * spg
    median = statistics.median(seconds)
    return {
        **summary(seconds),
        "steps": steps,
        "samples_per_second": size * steps * trainer.config.batch_size / median,
        "members_stopped": stopped,  # stopped by their divergence guard: work done, results not read
    }


def measure_trainer(name: str, configs: list[DQNConfig], lone: bool, data, fold, args) -> dict:
    """Every figure of one trainer (the lone one, or a population of len(configs)); two builds."""
    device, size = data.features.device, len(configs)
    trainer, cold = build(configs, lone, data, fold, diagnostics=True)
    print(f"  {name}: built in {cold:.2f}s", flush=True)
    members = list(range(trainer.size))  # member indices: P = 1 for the lone trainer
    record = {
        "trainer": name,
        "kind": "lone" if lone else "population",
        "size": size,
        "settings": [{k: asdict(c)[k] for k in ("lr", "gamma", "tau")} for c in configs],
        **measure_collection_and_diagnostics(trainer, members, args.repeats),
        "step": measure_steps(trainer, size, args),
        "epoch_with_diagnostics": measure_epochs(trainer, size, args.repeats),
    }
    record["graph_captures"], record["compiles"] = trainer.graph_captures, trainer.compiles
    if device.type == "cuda":
        record["peak_memory_bytes"] = torch.cuda.max_memory_allocated(device)
    del trainer, members
    trainer, warm = build(configs, lone, data, fold, diagnostics=False)
    record["epoch_without_diagnostics"] = measure_epochs(trainer, size, args.repeats)
    del trainer
    release(device)
    record["build"] = {"cold_seconds": cold, "warm_cache_seconds": warm}
    return record


@contextlib.contextmanager
def fresh_compile_caches(device: torch.device):
    """On CUDA, empty Inductor, Triton and CUDA caches of this run's own, so the first build of a shape is cold."""
    if device.type != "cuda":
        yield
        return
    names = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "CUDA_CACHE_PATH")
    saved = {k: os.environ.get(k) for k in names}
    folder = Path(tempfile.mkdtemp(prefix="foxhunt-population-bench-"))
    os.environ.update({k: str(folder / k.lower()) for k in names})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(folder, ignore_errors=True)


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
    f"{'diag ms/mbr':>12}{'epoch ×lone diag/plain':>24}"
)


def table_line(r: dict) -> str:
    """One trainer's figures on one line of the table."""
    build = f"{r['build']['cold_seconds']:.1f}/{r['build']['warm_cache_seconds']:.1f}"
    gains = "/".join(
        f"{r[k]['speedup_vs_lone']:.2f}×" for k in ("epoch_with_diagnostics", "epoch_without_diagnostics")
    )
    return (
        f"{r['trainer']:<10}{build:>14}{r['step']['seconds_per_step_median'] * 1e3:>9.3f}"
        f"{r['step']['samples_per_second']:>16,.0f}{r['step']['speedup_vs_lone']:>6.2f}×"
        f"{r['collect']['seconds_median'] * 1e3:>12.1f}{r['diagnostics']['per_member_seconds_median'] * 1e3:>12.2f}"
        f"{gains:>24}"
    )


def targets(records: list[dict]) -> dict:
    """Issue 36's two figures of the step: the lone trainer's step seconds, the best population's samples/s."""
    lone = records[0]["step"]["seconds_per_step_median"]
    found = {
        "lone_step_seconds": h.target(lone, TARGET_STEP_SECONDS, how="the lone trainer's warm step, median")
    }
    populations = [r for r in records if r["kind"] == "population"]
    if populations:
        best = max(populations, key=lambda r: r["step"]["samples_per_second"])
        found["population_samples_per_second"] = h.target(
            best["step"]["samples_per_second"], TARGET_SAMPLES_PER_SECOND, higher=True,
            how=f"P = {best['size']}, warm step replays ({best['step']['speedup_vs_lone']:.2f}× the lone trainer)",
        )  # fmt: skip
    return found


def run(args: argparse.Namespace, device: torch.device) -> Path:
    """Measure the lone trainer, then each population; the JSON after each, the table as it goes."""
    data, fold = synthetic_data(args.rows, device, args.seed)
    record = h.provenance("step" if args.what == "lone" else "population_gpu", device.type)
    record.update(
        labels=LABELS, complete=False, dqn=asdict(DQNConfig(batch_size=args.batch, hidden=args.hidden))
    )
    record["shape"] = {"train_rows": fold.train_rows, "val_rows": fold.val_rows, "batch_size": args.batch,
                       "hidden": args.hidden, "sizes": args.sizes if args.what == "population" else [],
                       "repeats": args.repeats, "replays": args.replays}  # fmt: skip
    out = h.default_out(record) if args.out is None else Path(args.out)
    base = DQNConfig(batch_size=args.batch, hidden=args.hidden)
    record["trainers"] = records = []
    for size in [None, *record["shape"]["sizes"]]:
        name = "lone" if size is None else f"P={size}"
        print(f"measuring {name} …", flush=True)
        trainer = measure_trainer(name, member_configs(base, size or 1), size is None, data, fold, args)
        compare(trainer, records[0] if records else trainer)
        records.append(trainer)
        print(*([HEADER] if len(records) == 1 else []), table_line(trainer), sep="\n", flush=True)
        record["targets"] = targets(records)
        h.write(record, out)
    if len(records) > 1:
        record["verdict"] = verdict(records)
    record["complete"] = True
    h.write(record, out)
    for key, t in record["targets"].items():
        print(f"{key}: {t['measured']:.4g} (target {t['target']:g}: {'met' if t['met'] else 'not met'})")
    return out


def on_device(name: str, args: argparse.Namespace, measure) -> int:
    """`measure(args, device)` on the device `args.device` names, its compile caches fresh; 2 (and why) when
    that device is not there. `bench/step_kernels.py` measures through it too."""
    try:
        device = resolve_device(args.device)
    except ValueError as error:
        print(f"{name}: {error} (--device cpu runs the CPU check)", file=sys.stderr)
        return 2
    with fresh_compile_caches(device):
        measure(args, device)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Measure on the device asked for; 2 when it is not there."""
    return on_device("step", parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
