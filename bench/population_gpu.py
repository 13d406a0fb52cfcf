"""Populations benchmark (issue 13): P trials as one batched model against one trial at a time.

    python bench/population_gpu.py                  (the H200 shape: 4M training rows, batch 8192, P = 1, 2, 4, 8)
    python bench/population_gpu.py --device cpu --rows 20000 --batch 256 --hidden 32 --sizes 1,2 \
        --repeats 2 --replays 2 --out /tmp/population.json                                 (CPU check)

Equal work on both sides: the same batch, hidden width and data (synthetic float32 features (n, 42)
and targets (n, 4) made on the device; one fold of `--rows` training rows, a purge gap and
validation rows in the proportions of perf_targets.issue_folds). The lone `DQNTrainer` runs the
default settings; a `DQNTrainer` of P runs P members with distinct shape-free settings (lr,
gamma, tau spread around the defaults), so no member's work can be shared with another's.

For the lone trainer and each P: (1) warm step throughput: R replays of `step.run()` between two
synchronizes, K repeats, median seconds per step, aggregate gradient samples/s = P × batch × steps /
seconds and its ratio to the lone trainer's; (2) one epoch's collection (median of K) and every
member's diagnostics as an epoch runs them (`epoch_figures`, one host read) + a synchronize; (3) whole epochs (`train_epoch`, median of K) with
diagnostics and, on a second build with `diagnostics=False`, without, as aggregate samples/s per
epoch: how much of the step's gain survives the epoch; (4) build seconds, cold (this shape never
compiled in this process: fresh Inductor and Triton caches for the run) and again with the caches warm.

One JSON (commit, device, torch, date, labels saying what is cold and what warm, medians and every
repeat) rewritten after each trainer, a table printed as it goes, and a verdict computed from the
figures: does the best P reach 1.5× the lone trainer's aggregate gradient samples/s? The ratios, the
verdict and the table's lines are in population_report.py. At the defaults the run is estimated at
3–4 minutes on an H200 (not yet measured), most of it the ten builds' compiles; --sizes, --rows,
--repeats and --replays shrink it.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch
from population_report import HEADER, LABELS, compare, default_out, device_tag, table_line, verdict
from provenance import device_name, git_commit

from foxhunt.config import DQNConfig
from foxhunt.data.folds import FoldRange
from foxhunt.train import DeviceData, DQNTrainer, resolve_device, synchronize

N_FEATURES, N_TARGETS = 42, 4
MINUTE_NS = 60_000_000_000
VAL_SHARE = 0.185 / 4.0  # validation rows per training row, as issue_folds' 185k after 4.0M
PURGE_BARS = 60
WARM_REPLAYS = 10  # replays after build and collection before any step is timed


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
    p.add_argument("--out", default=None, help="the JSON (default bench/results/population_gpu-…json)")
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
    trainer.window.set_fold_range(fold)
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
        "collect": {**summary(collect), "rows": trainer.window.fold_range.train_rows - 1},
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


def provenance(args: argparse.Namespace, device: torch.device, fold: FoldRange) -> dict:
    name = device_name(device)
    return {
        "benchmark": "population",
        "commit": git_commit(),
        "device": name,
        "device_type": device.type,
        "device_tag": device_tag(name, device.type),
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cold": "only build.cold_seconds; every other figure is warm (see labels)",
        "labels": LABELS,
        "dqn": asdict(DQNConfig(batch_size=args.batch, hidden=args.hidden)),  # the lone trainer's settings
        "shape": {
            "train_rows": fold.train_rows,
            "val_rows": fold.val_rows,
            "batch_size": args.batch,
            "hidden": args.hidden,
            "sizes": args.sizes,
            "repeats": args.repeats,
            "replays": args.replays,
            "data": "synthetic: features N(0, 1) (n, 42), targets N(0, 1e-4) (n, 4), float32, made on the device",
        },
        "complete": False,
    }


def save(report: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


def run(args: argparse.Namespace, device: torch.device) -> Path:
    """Measure the lone trainer, then each population; the JSON after each, the table as it goes."""
    data, fold = synthetic_data(args.rows, device, args.seed)
    report = provenance(args, device, fold)
    out = Path(args.out) if args.out else default_out(report)
    print(f"{report['device']}, torch {report['torch']}, commit {report['commit']}", flush=True)
    print(
        f"{fold.train_rows:,} training rows, {fold.val_rows:,} validation rows, batch {args.batch}",
        flush=True,
    )
    base = DQNConfig(batch_size=args.batch, hidden=args.hidden)
    report["trainers"] = records = []
    for size in [None, *args.sizes]:
        name = "lone" if size is None else f"P={size}"
        print(f"measuring {name} …", flush=True)
        record = measure_trainer(name, member_configs(base, size or 1), size is None, data, fold, args)
        compare(record, records[0] if records else record)
        records.append(record)
        if len(records) == 1:
            print(HEADER, flush=True)
        print(table_line(record), flush=True)
        save(report, out)
    report["verdict"] = verdict(records)
    report["complete"] = True
    save(report, out)
    v = report["verdict"]
    print(
        f"best P={v['best_size']}: {v['speedup']:.2f}× the lone trainer's gradient samples/s "
        f"(target {v['target']:g}×: {'met' if v['met'] else 'not met'}); whole epoch "
        f"{v['best_epoch_speedup_with_diagnostics']:.2f}× with diagnostics, "
        f"{v['best_epoch_speedup_without_diagnostics']:.2f}× without",
        flush=True,
    )
    print(f"wrote {out}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure on the device asked for; 2 when it is not there."""
    args = parse_args(argv)
    try:
        device = resolve_device(args.device)
    except ValueError as error:
        print(f"population_gpu: {error} (--device cpu runs the CPU check)", file=sys.stderr)
        return 2
    with fresh_compile_caches(device):
        run(args, device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
