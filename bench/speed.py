"""How long a run takes: `foxhunt train` and `foxhunt pipeline` as fresh processes, and one fold's scoring.

    python bench/speed.py plan [--bars 4700000] [--epochs 50] [--repeats 3] [--modes first,cached,local]
    python bench/speed.py real --bars .gpu/data/EURUSD_M1_2018_2019.parquet [--repeats 3]
    python bench/speed.py seeds [--seeds 3] [--repeats 3]
    python bench/speed.py pipeline [--repeats 3] [--cores 0,1]
    python bench/speed.py scoring [--val-bars 185000] [--repeats 3] [--device cuda]
    python bench/speed.py universe [--instruments 8] [--bars 753120] [--repeats 3] [--steps-per-epoch 0|one|N]
    python bench/speed.py fixed [--repeats 3] [--cores 0,1] [--kinds help,pipeline,train] [--max-folds 0]
    CPU checks: plan/seeds --bars 20000 --epochs 1 --repeats 1 --device cpu;
                real --bars tests/data/<file> --epochs 1 --repeats 1 --device cpu -- --train-days 60 --val-days 20

plan: the original plan's shape (4.7M generated bars, 3 expanding folds of ≈4.0M/4.19M/4.37M training rows,
batch 8192, 50 epochs): `first` a first-ever run (no compile cache anywhere), `cached` cold processes on
fresh pods that find the signed compile cache beside the fxcache, `local` `--compile-cache off` processes on
one pod whose Inductor cache a first, untimed run warmed. The fxcache is evicted from the page cache before
each. real: a real minute-bar file at the default folds and settings, first-ever then cold with the cache.
seeds: `--seeds K` against one seed at the plan's shape, cold with the cache (the ratio of medians).
pipeline: README's default `foxhunt pipeline`, pinned with taskset (run it on an idle machine).
scoring: one fold's baselines and scoring (`evaluate_fold`) at a 185k-bar window, in this process, cold
(the first call) and warm (median of the repeats), on the host or the GPU (`--device cuda`).
fixed: a run's fixed costs phase by phase (imports, load, baselines, scoring, pictures, files, …) in cold
CPU processes: `--help`, the default pipeline, a two-year `foxhunt train` of few steps (`fixed_costs.py`).
universe: K instruments × two years of bars in one cold process against one, their load, the memory estimate of 32
(issue 35; `speed_universe.py` says how).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import shutil
import sys
import time
from pathlib import Path

import fixed_costs
import harness as h
import speed_universe

PLAN_BARS = 4_700_000
FIRST_TRAIN_SHARE, STEP_SHARE = 4.0 / 4.7, 0.185 / 4.7  # 4.0M, 4.19M, 4.37M training rows of 4.7M
PURGE_BARS, PLAN_FOLDS = 60, 3
# Issue 36's targets (seconds unless said otherwise)
TARGETS = {
    "plan_cached_wall_seconds": 25.0,
    "plan_first_wall_seconds": 35.0,
    "real_wall_seconds": 12.0,
    "seeds_wall_ratio": 1.3,
    "pipeline_wall_seconds": 30.0,
    "fold_scoring_warm_seconds": 0.1,
}
PRECOMPUTE_LINE = re.compile(r"precompute: .* in ([0-9.]+)s total")


def plan_folds(timestamp):
    """Expanding folds whose training rows are 4.0/4.7, 4.19/4.7 and 4.37/4.7 of the rows, from the timestamps."""
    from foxhunt.config import FoldConfig
    from foxhunt.data.bars import NS_PER_DAY

    first = round(len(timestamp) * FIRST_TRAIN_SHARE) + PURGE_BARS
    step = round(len(timestamp) * STEP_SHARE)
    train_days = (int(timestamp[first]) - int(timestamp[0])) / NS_PER_DAY
    # Over both steps: a single step's calendar days hold more or fewer weekends than the next one's.
    step_days = (int(timestamp[first + 2 * step]) - int(timestamp[first])) / 2 / NS_PER_DAY
    return FoldConfig(train_days=train_days, val_days=step_days, step_days=step_days, mode="expanding",
                      purge_bars=PURGE_BARS, max_folds=PLAN_FOLDS)  # fmt: skip


def fold_flags(folds) -> list[str]:
    """`foxhunt train`'s flags for a FoldConfig."""
    return [
        "--train-days", repr(folds.train_days), "--val-days", repr(folds.val_days),
        "--step-days", repr(folds.step_days), "--window", folds.mode, "--purge-bars", str(folds.purge_bars),
        "--max-folds", str(folds.max_folds),
    ]  # fmt: skip


def train_command(
    fxcache: Path, out: Path, epochs: int, device: str, *extra: str, every: int = 1
) -> list[str]:
    """One measured `foxhunt train`; `--diagnostics-every` only when not 1 (so an older commit runs it too)."""
    spaced = ["--diagnostics-every", str(every)] if every != 1 else []
    return h.foxhunt(
        "train", "--fxcache", str(fxcache), "--out", str(out), "--epochs", str(epochs), "--seed", "0",
        "--device", device, "--log-format", "text", *spaced, *extra,
    )  # fmt: skip


def plan_fxcache(work: Path, bars: int, signal: bool = True) -> tuple[Path, object, dict]:
    """The generated bars' fxcache, once, and the plan's folds over it; (path, FoldConfig, shape)."""
    from foxhunt.data.folds import generate_walk_forward_indices
    from foxhunt.data.fxcache import read_fxcache
    from foxhunt.run.precompute import precompute

    fxcache = work / ("fx.arrow" if signal else "fx-off.arrow")
    precompute(None, str(fxcache), sample_bars=bars, seed=0, sample_signal=signal, progress=lambda _: None)
    timestamp = read_fxcache(str(fxcache)).timestamp
    folds = plan_folds(timestamp)
    ranges = generate_walk_forward_indices(timestamp, folds)
    shape = {"bars": bars, "rows": len(timestamp), "train_rows": [f.train_rows for f in ranges]}
    print(f"{len(timestamp):,} rows; folds of {shape['train_rows']} training rows", flush=True)
    return fxcache, folds, shape


class Runner:
    """Numbered fresh `foxhunt train` processes over one fxcache, each on its own pod unless told."""

    def __init__(self, args: argparse.Namespace, work: Path, fxcache: Path, flags: list[str]) -> None:
        self.args, self.work, self.fxcache, self.flags, self.n = args, work, fxcache, flags, 0

    def __call__(self, kind: str, *extra: str, pod: Path | None = None) -> dict:
        self.n += 1
        out = self.work / f"run-{self.n}"
        every = getattr(self.args, "diagnostics_every", 1)
        command = train_command(self.fxcache, out, self.args.epochs, self.args.device, *self.flags, *extra,
                                every=every)  # fmt: skip
        record = h.fresh_run(command, pod or self.work / f"pod-{self.n}", self.args.run_timeout,
                             out / "summary.json", evicted=self.fxcache)  # fmt: skip
        record["kind"] = kind
        print(f"{kind}: exit {record['exit_code']}, wall {record['wall_seconds']:.1f}s", flush=True)
        if record.get("error_tail"):
            print(record["error_tail"][-1500:], flush=True)
        return record

    def first_ever(self, *extra: str) -> dict:
        """A run that finds no compile cache beside the fxcache (it saves one for the runs after it)."""
        for blob in self.fxcache.parent.glob(self.fxcache.name + ".torch-compile*"):
            shutil.rmtree(blob, ignore_errors=True)
        return self("first_ever", *extra)


RUN_KEYS = ("wall_seconds", "run_seconds", "build_seconds", "data_load_seconds", "epoch_seconds_biggest_fold",
            "validate_seconds_median", "untimed_seconds_total", "outside_folds_seconds")  # fmt: skip


def plan(args: argparse.Namespace, work: Path, record: dict) -> None:
    """The plan's shape: first-ever, cold with the signed compile cache, cold with a warm local cache."""
    fxcache, folds, record["shape"] = plan_fxcache(work, args.bars)
    params = work / "params.json"
    params.write_text(json.dumps({"dqn": {"batch_size": args.batch_size}}))
    run = Runner(args, work, fxcache, [*fold_flags(folds), "--hyperopt-params", str(params)])
    modes, targets = args.modes.split(","), record["targets"]
    if "first" in modes:
        record["first_ever"] = run.first_ever("--compile-cache", "auto")
        wall = record["first_ever"]["wall_seconds"] if record["first_ever"]["exit_code"] == 0 else None
        targets["plan_first_wall_seconds"] = h.target(wall, TARGETS["plan_first_wall_seconds"],
                                                      how="one first-ever process, empty caches")  # fmt: skip
        h.write(record, args.out)
    if "cached" in modes:
        runs = h.repeat(args.repeats, lambda i: run("cached", "--compile-cache", "auto"), "cached")
        record["cached"] = {"runs": runs, "medians": h.medians(runs, RUN_KEYS)}
        wall = record["cached"]["medians"]["wall_seconds"]
        targets["plan_cached_wall_seconds"] = h.target(
            wall["median"], TARGETS["plan_cached_wall_seconds"],
            how=f"median of {wall['n']} cold processes on fresh pods, the signed compile cache present",
        )  # fmt: skip
        h.write(record, args.out)
    if "local" in modes:  # one pod: its Inductor cache warmed by an untimed run
        pod = work / "pod-local"
        warmup = run("local_warmup", "--compile-cache", "off", pod=pod)
        runs = h.repeat(args.repeats, lambda i: run("local", "--compile-cache", "off", pod=pod), "local")
        record["local"] = {"warmup": warmup, "runs": runs, "medians": h.medians(runs, RUN_KEYS)}


def real(args: argparse.Namespace, work: Path, record: dict) -> None:
    """A real bar file at the default folds: first-ever, then cold processes that find the compile cache."""
    fxcache = work / "real.fxcache"
    started = time.perf_counter()
    done = h.fresh_run(h.foxhunt("precompute", "--bars", args.bars, "--out", str(fxcache)),
                       work / "pod-precompute", args.run_timeout)  # fmt: skip
    if done["exit_code"] != 0:
        raise SystemExit(f"precompute {args.bars} failed: {done['error_tail']}")
    record["shape"] = {"bars_file": Path(args.bars).name, "precompute_seconds": time.perf_counter() - started}
    run = Runner(args, work, fxcache, ["--compile-cache", "auto", *args.extra])
    record["first_ever"] = run.first_ever()
    runs = h.repeat(args.repeats, lambda i: run("cached"), "cached")
    record["cached"] = {"runs": runs, "medians": h.medians(runs, RUN_KEYS)}
    wall = record["cached"]["medians"]["wall_seconds"]
    record["targets"]["real_wall_seconds"] = h.target(
        wall["median"],
        TARGETS["real_wall_seconds"],
        how=f"median of {wall['n']} cold processes, cache present",
    )


def seeds(args: argparse.Namespace, work: Path, record: dict) -> None:
    """`--seeds K` against one seed at the plan's shape: cold processes with the compile cache, alternated."""
    fxcache, folds, record["shape"] = plan_fxcache(work, args.bars)
    record["shape"]["seeds"] = args.seeds
    run = Runner(args, work, fxcache, [*fold_flags(folds), "--compile-cache", "auto"])
    many = ("--seeds", str(args.seeds))
    record["first_ever"] = {"one": run.first_ever(), "many": run("first_ever_many", *many)}
    one_runs, many_runs = [], []
    for _ in range(args.repeats):  # alternated, so a drift in the machine's speed falls on both
        one_runs.append(run("one_seed"))
        many_runs.append(run(f"seeds_{args.seeds}", *many))
    one, many_m = h.medians(one_runs, RUN_KEYS), h.medians(many_runs, RUN_KEYS)
    record["one_seed"] = {"runs": one_runs, "medians": one}
    record["many_seeds"] = {"runs": many_runs, "medians": many_m}
    record["targets"]["seeds_wall_ratio"] = seeds_ratio(one_runs, many_runs, args.seeds)


def seeds_ratio(one_runs: list[dict], many_runs: list[dict], count: int) -> dict:
    """`--seeds K`'s median wall over one seed's (succeeded runs only), against issue 36's 1.3×."""
    one = h.spread(r["wall_seconds"] for r in h.succeeded(one_runs))["median"]
    many = h.spread(r["wall_seconds"] for r in h.succeeded(many_runs))["median"]
    ratio = many / one if one and many else None
    return h.target(ratio, TARGETS["seeds_wall_ratio"], how=f"median wall of --seeds {count} over one seed's")


def pipeline(args: argparse.Namespace, work: Path, record: dict) -> None:
    """README's default `foxhunt pipeline` as fresh processes pinned to `--cores` (a fresh --out each)."""
    if args.cores and shutil.which("taskset") is None:
        raise SystemExit("taskset not found: install util-linux, or pass --cores ''")
    device = "cpu" if args.device == "auto" else args.device

    def one(i: int) -> dict:
        out = work / f"run{i}"
        command = h.foxhunt("pipeline", "--out", str(out), "--device", device, *args.extra)
        command = ["taskset", "-c", args.cores, *command] if args.cores else command
        # As a user runs it: the user's own caches and environment, this checkout's package.
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(h.ROOT / "trainer_image"), os.environ.get("PYTHONPATH", "")]),
        }
        r = h.fresh_run(command, work / f"pod{i}", args.run_timeout, out / "summary.json", env=env)
        found = PRECOMPUTE_LINE.search((work / f"pod{i}" / "console.log").read_text())
        r["precompute_seconds"] = float(found.group(1)) if found else None
        r["phase_seconds"] = {p: sum(f["phases"][p] for f in r.get("folds", [])) for p in
                              (r["folds"][0]["phases"] if r.get("folds") else {})}  # fmt: skip
        return r

    runs = h.repeat(args.repeats, one, "pipeline")
    keys = ("wall_seconds", "run_seconds", "data_load_seconds", "precompute_seconds")
    spreads = h.medians(runs, keys)
    record.update(cores=args.cores or "all", repeats=args.repeats, runs=runs, spread=spreads)
    record["medians"] = {k: v["median"] for k, v in spreads.items()}
    record["targets"]["pipeline_wall_seconds"] = h.target(
        record["medians"]["wall_seconds"], TARGETS["pipeline_wall_seconds"],
        how=f"median of {spreads['wall_seconds']['n']} cold processes, `taskset -c {args.cores or 'all'}`",
    )  # fmt: skip


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
    record.update(shape={"bars": args.bars, "train_rows": fold.train_rows, "val_bars": fold.val_rows,
                         "resamples": score.resamples, "scoring_device": score.device or "host",
                         "torch_threads": torch.get_num_threads()}, seconds=seconds)  # fmt: skip
    record["targets"]["fold_scoring_warm_seconds"] = h.target(
        seconds["fold"]["warm"]["median"],
        TARGETS["fold_scoring_warm_seconds"],
        how=f"`evaluate_fold` at {fold.val_rows:,} validation bars, warm median of {args.repeats}",
    )


BENCHMARKS = {"plan": ("plan_shape", plan), "real": ("real_shape", real), "seeds": ("seeds", seeds),
              "pipeline": ("pipeline_cpu", pipeline), "scoring": ("fold_scoring", scoring),
              "fixed": ("fixed_costs", fixed_costs.measure), "universe": ("universe", speed_universe.universe)}  # fmt: skip


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="benchmark", required=True)
    for name in BENCHMARKS:
        s = sub.add_parser(name)
        h.common_args(s, device="cpu" if name in ("pipeline", "scoring", "fixed") else "auto")
        if name in ("plan", "seeds"):
            s.add_argument("--bars", type=int, default=PLAN_BARS, help="generated bars")
        if name in ("plan", "seeds", "real"):
            s.add_argument("--epochs", type=int, default=50)
            s.add_argument("--diagnostics-every", type=int, default=1)
    sub.choices["plan"].add_argument("--batch-size", type=int, default=8192)
    sub.choices["plan"].add_argument("--modes", default="first,cached,local", help="which runs, in order")
    sub.choices["real"].add_argument(
        "--bars", required=True, help="a minute-bar file foxhunt precompute reads"
    )
    sub.choices["real"].add_argument("extra", nargs="*", help="more `foxhunt train` arguments (after --)")
    sub.choices["seeds"].add_argument("--seeds", type=int, default=3, help="K of `--seeds K`")
    sub.choices["pipeline"].add_argument(
        "--cores", default="0,1", help="taskset core list; empty: not pinned"
    )
    sub.choices["pipeline"].add_argument(
        "extra", nargs="*", help="more `foxhunt pipeline` arguments (after --)"
    )
    fixed_costs.add_args(sub.choices["fixed"])
    speed_universe.add_args(sub.choices["universe"])
    sub.choices["scoring"].add_argument("--bars", type=int, default=400_000, help="generated bars")
    sub.choices["scoring"].add_argument("--val-bars", type=int, default=185_000)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run one benchmark and write its JSON; exit 1 when a measured process failed."""
    args = parse_args(argv)
    name, measure = BENCHMARKS[args.benchmark]
    return h.run_benchmark(name, args, measure, args.device)


if __name__ == "__main__":
    sys.exit(main())
