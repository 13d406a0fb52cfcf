"""Walk-forward benchmark: the persistent flow against the naive flow it replaced, eager against graph.

One process, one device. For each size of generated bars (and the real EURUSD file) it
times the real `foxhunt.run.pipeline.train` run (load → device, per-fold phases, epochs,
samples/s, peak device memory), then, on the main size, the naive flow (per fold: copy the
rows out, norm stats on the CPU, upload again, build and capture a new trainer) and the
training step eager vs as a CUDA graph. Prints a table last and writes one JSON.

    python bench/walk_forward_gpu.py --out bench/results/walk_forward-h200.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch
from provenance import device_name, git_commit

from foxhunt.config import PHASES, DQNConfig, FoldConfig
from foxhunt.data.bars import NS_PER_DAY, generate_sample_bars, read_bars
from foxhunt.data.features import compute_features
from foxhunt.data.folds import FoldRange, generate_walk_forward_indices
from foxhunt.data.fxcache import read_fxcache, write_fxcache
from foxhunt.run.pipeline import TrainSettings, train
from foxhunt.train import DeviceData, DQNTrainer, resolve_device, synchronize, to_device

TARGETS = {"load_seconds": 1.0, "transition_seconds": 0.005, "epoch_seconds": 0.1, "run_seconds": 30.0}


def quiet(_: str) -> None:
    """Progress sink: the benchmark prints its own table."""


def bench_folds(timestamp: np.ndarray, n_folds: int) -> FoldConfig:
    """Expanding folds sized to the data: training on 70–90% of the span, validating on 10% slices."""
    span_days = (int(timestamp[-1]) - int(timestamp[0])) / NS_PER_DAY
    val = span_days * 0.9 / (7 + n_folds)  # 3 folds: first train = 70% of the span
    return FoldConfig(train_days=val * 7, val_days=val, step_days=val, mode="expanding", max_folds=n_folds)


def make_fxcache(
    path: Path, n_bars: int | None, bars_file: str | None, n_folds: int
) -> tuple[dict, FoldConfig]:
    """Bars → features → fxcache on local disk; returns the timings and the folds sized to these bars."""
    t0 = time.perf_counter()
    bars = read_bars([bars_file]) if bars_file else generate_sample_bars(n_bars, seed=0)
    t1 = time.perf_counter()
    table = compute_features(bars)
    t2 = time.perf_counter()
    write_fxcache(str(path), table, source_uri=bars.source, source_hash=bars.content_hash)
    t3 = time.perf_counter()
    timings = {
        "bars": len(bars),
        "rows": len(table),
        "bars_seconds": t1 - t0,
        "features_seconds": t2 - t1,
        "fxcache_write_seconds": t3 - t2,
    }
    return timings, bench_folds(table.timestamp, n_folds)


def persistent_run(
    cache_path: Path, out: Path, epochs: int, folds: FoldConfig, dqn: DQNConfig, device: str
) -> dict:
    """The real `foxhunt train` code path; figures come from its summary."""
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    # overwrite: a benchmark measures a whole run, never a resume of an earlier one in the same folder
    settings = TrainSettings(
        epochs=epochs, device=device, folds=folds, dqn=dqn, run_id="bench", overwrite=True
    )
    t0 = time.perf_counter()
    summary = train(str(cache_path), str(out), settings, progress=quiet).to_dict()
    wall = time.perf_counter() - t0
    per_fold = []
    for r in summary["folds"]:
        epochs_s = r["epoch_seconds"]
        per_fold.append(
            {
                "fold": r["fold"],
                "train_rows": r["train_rows"],
                "val_rows": r["val_rows"],
                "steps": r["steps"],
                "phases": r["phases"],
                "transition_seconds": r["phases"]["reset"] + r["phases"]["normalize"],
                "epoch_seconds_mean": float(np.mean(epochs_s)),
                "epoch_seconds_median": float(np.median(epochs_s)),
                "epoch_seconds_first": epochs_s[0],
                "samples_per_second": r["samples_per_second"],
                "validation_sharpe": r["evaluation"]["policies"]["model"]["net"]["sharpe"],
            }
        )
    return {
        "epochs": epochs,
        "folds": per_fold,
        "load_seconds": summary["data_load_seconds"],
        "run_seconds": wall,
        "train_run_seconds": summary["run_seconds"],
        "graph_captures": summary["graph_captures"],
        "peak_device_bytes": torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None,
        "transition_seconds_max": max(f["transition_seconds"] for f in per_fold),
        "epoch_seconds_median": float(np.median([f["epoch_seconds_median"] for f in per_fold])),
        "samples_per_second_mean": float(np.mean([f["samples_per_second"] for f in per_fold])),
    }


def naive_run(
    cache_path: Path, out: Path, epochs: int, n_folds: int, dqn: DQNConfig, device_str: str
) -> dict:
    """The flow the seed replaced: per fold copy rows out, CPU norm stats, upload, new trainer, new capture."""
    device = resolve_device(device_str)
    cache = read_fxcache(str(cache_path))
    folds = generate_walk_forward_indices(
        cache.timestamp, bench_folds(cache.timestamp, n_folds), close_returns=cache.targets[:, 0]
    )
    t_run = time.perf_counter()
    per_fold = []
    for fr in folds:
        phases = {}
        t0 = time.perf_counter()
        rows = slice(fr.train_start, fr.val_end)
        features = np.array(cache.features[rows])  # the copy out
        targets = np.array(cache.targets[rows])
        mean = features[: fr.train_rows].mean(axis=0, dtype=np.float64)
        std = features[: fr.train_rows].std(axis=0, dtype=np.float64)
        std[std <= 1e-8] = 1.0
        normalized = ((features - mean) / std).astype(np.float32)
        data = to_device(normalized, targets, cache.timestamp[rows], device)  # the upload again
        synchronize(device)
        phases["normalize"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        local = FoldRange(
            fr.fold,
            0,
            fr.train_rows,
            fr.val_start - fr.train_start,
            fr.val_end - fr.train_start,
            fr.difficulty_score,
        )
        trainer = DQNTrainer(data, dqn, max_train_rows=fr.train_rows, seed=0)  # new modules, new capture
        trainer.window.set_fold_range(local)
        trainer.reset_for_fold(fr.fold)
        trainer.window.compute_norm_stats()  # already normalized: mean 0, std 1
        synchronize(device)
        phases["reset"] = time.perf_counter() - t0
        for epoch in range(epochs):
            trainer.train_epoch(epoch, epochs)
        phases["collect"] = sum(trainer.histories[0].collect_seconds)
        phases["train"] = sum(trainer.histories[0].train_seconds)
        t0 = time.perf_counter()
        trainer.policies.validate()
        synchronize(device)
        phases["validate"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        torch.save(trainer.policies.state_dict_cpu(), out / f"naive_fold{fr.fold}.pt")
        phases["checkpoint"] = time.perf_counter() - t0
        per_fold.append(
            {
                "fold": fr.fold,
                "phases": phases,
                "transition_seconds": phases["reset"] + phases["normalize"],
                "epoch_seconds_median": float(np.median(trainer.histories[0].epoch_seconds)),
            }
        )
        del trainer, data
    return {
        "epochs": epochs,
        "folds": per_fold,
        "run_seconds": time.perf_counter() - t_run,
        "transition_seconds_max": max(f["transition_seconds"] for f in per_fold),
    }


def eager_vs_graph(cache_path: Path, dqn: DQNConfig, device_str: str, steps: int = 200) -> dict:
    """Seconds per training step: eager, one CUDA graph, and one CUDA graph of the compiled loss."""
    device = resolve_device(device_str)
    cache = read_fxcache(str(cache_path))
    data: DeviceData = to_device(cache.features, cache.targets, cache.timestamp, device)
    fr = generate_walk_forward_indices(
        cache.timestamp, bench_folds(cache.timestamp, 3), close_returns=cache.targets[:, 0]
    )[0]
    out = {"steps": steps, "batch_size": dqn.batch_size}
    variants = {
        "eager": replace(dqn, compile=False),
        "graph": replace(dqn, compile=False),
        "graph_compiled": replace(dqn, compile=True),
    }
    for name, config in variants.items():
        trainer = DQNTrainer(data, config, max_train_rows=fr.train_rows, seed=0)
        if name == "eager":
            trainer.step.graph = None  # the same plain steps, run eagerly
        trainer.window.set_fold_range(fr)
        trainer.reset_for_fold(0)
        trainer.window.compute_norm_stats()
        trainer.collect(0.5)
        replays = math.ceil(steps / config.steps_per_graph)
        for _ in range(3):
            trainer.step.run()
        synchronize(device)
        t0 = time.perf_counter()
        for _ in range(replays):
            trainer.step.run()
        synchronize(device)
        out[f"{name}_step_seconds"] = (time.perf_counter() - t0) / (replays * config.steps_per_graph)
        del trainer
    if device.type == "cuda":
        out["eager_over_graph"] = out["eager_step_seconds"] / out["graph_step_seconds"]
        out["eager_over_graph_compiled"] = out["eager_step_seconds"] / out["graph_compiled_step_seconds"]
    else:
        out["eager_over_graph"] = out["eager_over_graph_compiled"] = None
    return out


def ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,4000000,16000000", help="generated bar counts")
    parser.add_argument(
        "--main-size", type=int, default=4_000_000, help="the size for targets and comparisons"
    )
    parser.add_argument("--epochs", type=int, default=50, help="epochs per fold of the main run")
    parser.add_argument("--scaling-epochs", type=int, default=5, help="epochs per fold of the other sizes")
    parser.add_argument("--compare-epochs", type=int, default=3, help="epochs per fold, naive vs persistent")
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument(
        "--eurusd",
        default=str(
            Path(__file__).resolve().parents[1].parent / "shared" / "data" / "EURUSD_M1_2018_2019.parquet"
        ),
        help="real bars file ('' to skip)",
    )
    parser.add_argument("--device", default="auto")
    parser.add_argument("--steps-per-graph", type=int, default=DQNConfig.steps_per_graph)
    parser.add_argument("--batch-size", type=int, default=DQNConfig.batch_size)
    parser.add_argument(
        "--out", default=None, help="JSON path (default: bench/results/walk_forward-<device>-<date>.json)"
    )
    parser.add_argument("--work", default=None, help="scratch folder for fxcaches and outputs")
    args = parser.parse_args(argv)

    device = resolve_device(args.device)
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")
    # This process builds many trainers (sizes, naive flow, variants); each compiles its own loss.
    torch._dynamo.config.cache_size_limit = 64
    dqn = replace(DQNConfig(), steps_per_graph=args.steps_per_graph, batch_size=args.batch_size)
    work = Path(args.work or tempfile.mkdtemp(prefix="foxhunt-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    now = datetime.now(timezone.utc)
    result = {
        "benchmark": "walk_forward",
        "date": now.isoformat(timespec="seconds"),
        "commit": git_commit(),
        "device": device_name(device),
        "device_type": device.type,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "dqn": vars(dqn) if hasattr(dqn, "__dict__") else str(dqn),
        "targets": TARGETS,
        "sizes": {},
    }
    out = Path(
        args.out or Path(__file__).parent / "results" / f"walk_forward-{device.type}-{now:%Y-%m-%d}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after every stage, so a run cut short still leaves its figures
        out.write_text(json.dumps(result, indent=2) + "\n")

    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.main_size not in sizes:
        sizes.append(args.main_size)
    for n in sorted(sizes):
        path = work / f"bars{n}.fxcache"
        prep, folds = make_fxcache(path, n, None, args.folds)
        epochs = args.epochs if n == args.main_size else args.scaling_epochs
        run = persistent_run(path, work / f"out{n}", epochs, folds, dqn, args.device)
        result["sizes"][str(n)] = {"precompute": prep, "persistent": run}
        save()
        print(
            f"[{n:,} bars] load {run['load_seconds']:.3f}s, transition {run['transition_seconds_max'] * 1e3:.2f}ms, "
            f"epoch {run['epoch_seconds_median'] * 1e3:.1f}ms, run {run['run_seconds']:.1f}s",
            flush=True,
        )
        if n == args.main_size:
            main_path, main_folds = path, folds

    compare_p = persistent_run(
        main_path, work / "cmp_persistent", args.compare_epochs, main_folds, dqn, args.device
    )
    compare_n = naive_run(main_path, work, args.compare_epochs, args.folds, dqn, args.device)
    phase_ratio = {}
    for phase in PHASES:
        naive_s = sum(f["phases"][phase] for f in compare_n["folds"])
        ours = sum(f["phases"][phase] for f in compare_p["folds"])
        phase_ratio[phase] = {
            "naive_seconds": naive_s,
            "persistent_seconds": ours,
            "naive_over_persistent": ratio(naive_s, ours),
        }
    result["naive_vs_persistent"] = {
        "bars": args.main_size,
        "epochs": args.compare_epochs,
        "phases": phase_ratio,
        "naive": compare_n,
        "persistent": compare_p,
        "total": {
            "naive_seconds": compare_n["run_seconds"],
            "persistent_seconds": compare_p["train_run_seconds"],
            "naive_over_persistent": ratio(compare_n["run_seconds"], compare_p["train_run_seconds"]),
        },
        "note": "naive run_seconds excludes the one fxcache load; the persistent figure includes it",
    }
    save()
    result["eager_vs_graph"] = eager_vs_graph(main_path, dqn, args.device)
    save()

    if args.eurusd:
        path = work / "eurusd.fxcache"
        prep, folds = make_fxcache(path, None, args.eurusd, args.folds)
        run = persistent_run(path, work / "out_eurusd", args.epochs, folds, dqn, args.device)
        result["eurusd"] = {"file": args.eurusd, "precompute": prep, "persistent": run}

    main_run = result["sizes"][str(args.main_size)]["persistent"]
    checks = {
        "load_seconds": main_run["load_seconds"],
        "transition_seconds": main_run["transition_seconds_max"],
        "epoch_seconds": main_run["epoch_seconds_median"],
        "run_seconds": main_run["run_seconds"],
    }
    result["target_check"] = {
        k: {"measured": v, "target": TARGETS[k], "met": v <= TARGETS[k]} for k, v in checks.items()
    }

    save()

    print(
        f"\nwalk-forward benchmark on {result['device']} (torch {torch.__version__}, commit {result['commit'][:10]})"
    )
    print(
        f"{'bars':>12} {'load s':>8} {'trans ms':>9} {'epoch ms':>9} {'samples/s':>12} {'run s':>8} {'peak GiB':>9}"
    )
    for n, entry in result["sizes"].items():
        r = entry["persistent"]
        peak = (r["peak_device_bytes"] or 0) / 2**30
        print(
            f"{int(n):>12,} {r['load_seconds']:>8.3f} {r['transition_seconds_max'] * 1e3:>9.2f} "
            f"{r['epoch_seconds_median'] * 1e3:>9.1f} {r['samples_per_second_mean']:>12,.0f} {r['run_seconds']:>8.1f} "
            f"{peak:>9.2f}   ({r['epochs']} epochs x {len(r['folds'])} folds)"
        )
    print(
        "naive / persistent per phase: "
        + ", ".join(
            f"{p} {v['naive_over_persistent']:.1f}x" if v["naive_over_persistent"] else f"{p} n/a"
            for p, v in phase_ratio.items()
        )
    )
    print(
        f"naive / persistent total: {result['naive_vs_persistent']['total']['naive_over_persistent']:.2f}x "
        f"({args.compare_epochs} epochs)"
    )
    eg = result["eager_vs_graph"]
    if eg["eager_over_graph"]:
        print(
            f"training step: eager {eg['eager_step_seconds'] * 1e3:.3f}ms, graph {eg['graph_step_seconds'] * 1e3:.3f}ms "
            f"({eg['eager_over_graph']:.1f}x), graph of the compiled loss {eg['graph_compiled_step_seconds'] * 1e3:.3f}ms "
            f"({eg['eager_over_graph_compiled']:.1f}x)"
        )
    for k, v in result["target_check"].items():
        print(f"target {k}: {v['measured']:.4f} vs {v['target']} -> {'met' if v['met'] else 'MISSED'}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
