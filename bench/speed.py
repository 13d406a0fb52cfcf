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
(the first call) and warm (median of the repeats), on the host or the GPU (`--device cuda`; `speed_scoring.py`).
fixed: a run's fixed costs phase by phase (imports, load, baselines, scoring, pictures, files, …) in cold
CPU processes: `--help`, the default pipeline, a two-year `foxhunt train` of few steps (`fixed_costs.py`).
universe: K instruments × two years of bars in one cold process against one, their load, the memory estimate of 32
(issue 35; `speed_universe.py` says how).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import fixed_costs
import harness as h
import speed_scoring
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
    "fold_scoring_warm_seconds": speed_scoring.FOLD_SCORING_TARGET,
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

    def __call__(self, kind: str, *extra: str, pod: Path | None = None, every: int | None = None) -> dict:
        self.n += 1
        out = self.work / f"run-{self.n}"
        every = every or getattr(self.args, "diagnostics_every", 1)
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
    h.write(record, args.out)  # a call cut short keeps each process that ended
    if args.against_every:
        label, every = f"cached_every_{args.against_every}", args.against_every
        runs, spaced = alternated(args.repeats, lambda: run("cached"), lambda: run(label, every=every),
                                  lambda a, b: _keep(record, args.out, cached=a, **{label: b}))  # fmt: skip
        record[label] = {"runs": spaced, "medians": h.medians(spaced, RUN_KEYS)}
    else:
        runs = []
        for _ in range(args.repeats):
            runs.append(run("cached"))
            _keep(record, args.out, cached=runs)
    record.pop("so_far", None)
    record["cached"] = {"runs": runs, "medians": h.medians(runs, RUN_KEYS)}
    wall = record["cached"]["medians"]["wall_seconds"]
    record["targets"]["real_wall_seconds"] = h.target(
        wall["median"],
        TARGETS["real_wall_seconds"],
        how=f"median of {wall['n']} cold processes, cache present",
    )


def alternated(repeats: int, one, other, after=None) -> tuple[list[dict], list[dict]]:
    """`repeats` pairs of runs, alternated so that a drift in the machine's speed falls on both sides;
    `after(ones, others)` sees the runs so far after each pair."""
    ones, others = [], []
    for _ in range(repeats):
        ones.append(one())
        others.append(other())
        if after:
            after(ones, others)
    return ones, others


def _keep(record: dict, out: str | None, **runs: list[dict]) -> None:
    """The record written with the runs so far under `so_far` (a call cut short keeps each ended process)."""
    record["so_far"] = {**record.get("so_far", {}), **{label: list(r) for label, r in runs.items()}}
    h.write(record, out)


def seeds(args: argparse.Namespace, work: Path, record: dict) -> None:
    """`--seeds K` against one seed at the plan's shape: cold processes with the compile cache, alternated."""
    fxcache, folds, record["shape"] = plan_fxcache(work, args.bars)
    record["shape"]["seeds"] = args.seeds
    run = Runner(args, work, fxcache, [*fold_flags(folds), "--compile-cache", "auto"])
    many = ("--seeds", str(args.seeds))
    record["first_ever"] = {"one": run.first_ever()}
    h.write(record, args.out)  # a call cut short keeps each process that ended
    record["first_ever"]["many"] = run("first_ever_many", *many)
    h.write(record, args.out)
    one_runs, many_runs = alternated(
        args.repeats,
        lambda: run("one_seed"),
        lambda: run(f"seeds_{args.seeds}", *many),
        lambda a, b: _keep(record, args.out, one_seed=a, **{f"seeds_{args.seeds}": b}),
    )
    record.pop("so_far", None)
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


BENCHMARKS = {"plan": ("plan_shape", plan), "real": ("real_shape", real), "seeds": ("seeds", seeds),
              "pipeline": ("pipeline_cpu", pipeline), "scoring": ("fold_scoring", speed_scoring.scoring),
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
    sub.choices["real"].add_argument(
        "--against-every", type=int, default=0,
        help="also time runs with --diagnostics-every N, alternated with the measured ones (0: none)",
    )  # fmt: skip
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
    sub.choices["scoring"].add_argument(
        "--profile", action="store_true", help="one more warm call of each part under torch.profiler"
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run one benchmark and write its JSON; exit 1 when a measured process failed."""
    args = parse_args(argv)
    name, measure = BENCHMARKS[args.benchmark]
    return h.run_benchmark(name, args, measure, args.device)


if __name__ == "__main__":
    sys.exit(main())
