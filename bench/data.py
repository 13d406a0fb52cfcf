"""The data side: precompute throughput, the README's install time, and what the sample data lets a model earn.

    python bench/data.py precompute [--rows 4000000] [--real tests/data/EURUSD_M1_2018_head.parquet]
    python bench/data.py install [--repeats 3]
    python bench/data.py oracle [--seeds 0,1,2] [--bars 200000]
    CPU checks: precompute --rows 20000 --repeats 1; oracle --seeds 0 --bars 20000

precompute: `compute_features` on generated bars and a real bar file, pinned to one core (bars/s over the
median call, and per CPU-second; peak memory as tracemalloc's peak during one more call), and the fxcache's
write + read round trip (targets: ≥ 1M bars/s; ≤ 1.5 s for 4M rows). install: the README's first command as
cold processes in a new folder (`python3 -m venv`, `pip install torch==2.13.0`, `pip install -e '.[train]'`)
with pip's cache off, the torch wheel evicted from the page cache, the load average around each repeat;
README line 1 states the newest median (tests/test_readme_install_time.py). oracle: on the default
`foxhunt pipeline` data and windows, signal on and off, per generator seed, the stitched net Sharpe of the
generator oracle (the planted expected return's sign), the feature oracle (the best supervised baseline) and
each baseline; mean, min and max across seeds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import harness as h
from page_cache import evict

TARGET_BARS_PER_S = 1_000_000
TARGET_FXCACHE_ROUND_TRIP_S = 1.5
REAL_SLICE = h.ROOT / "tests" / "data" / "EURUSD_M1_2018_head.parquet"
TORCH = "torch==2.13.0"  # the README's pin
WHAT = "the README's install: python3 -m venv, pip install torch==2.13.0, pip install -e '.[train]'"
GENERATOR_ORACLE = "generator_oracle"


def measure_features(bars, repeats: int) -> tuple[dict, object]:
    """`compute_features` over the bars, `repeats` calls: median wall and CPU seconds, traced peak memory."""
    from foxhunt.data.features import compute_features

    timed = []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        table = compute_features(bars)
        timed.append((time.perf_counter() - wall, time.process_time() - cpu))
        del table  # its memory goes back before the next call
    tracemalloc.start()
    table = compute_features(bars)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    wall = statistics.median(w for w, _ in timed)
    return {
        "bars": len(bars), "rows": len(table), "seconds": h.spread(w for w, _ in timed),
        "bars_per_s": len(bars) / wall, "bars_per_cpu_s": len(bars) / statistics.median(c for _, c in timed),
        "peak_traced_mib": peak / 2**20,
    }, table  # fmt: skip


def measure_fxcache(table, repeats: int, work: Path) -> dict:
    """The table written as a local fxcache and read (validated, memory-mapped) back, `repeats` times."""
    from foxhunt.data.fxcache import read_fxcache, write_fxcache

    uri, trips = str(work / "bench.arrow"), []
    for _ in range(repeats):
        started = time.perf_counter()
        write_fxcache(uri, table, source_uri="sample://bench", source_hash="0" * 64)
        written = time.perf_counter()
        cache = read_fxcache(uri)
        trips.append((written - started, time.perf_counter() - written))
        del cache
    return {"rows": len(table), "file_mib": Path(uri).stat().st_size / 2**20,
            "write_seconds": h.spread(w for w, _ in trips), "read_seconds": h.spread(r for _, r in trips),
            "round_trip_seconds": h.spread(w + r for w, r in trips)}  # fmt: skip


def precompute(args: argparse.Namespace, work: Path, record: dict) -> None:
    """Features on one core (generated, then real bars) and the fxcache round trip on all of them."""
    from foxhunt.data.bars import generate_sample_bars, read_bars

    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[0]})  # numpy's element-wise kernels are one thread anyway: make it literal
    generated, table = measure_features(generate_sample_bars(args.rows), args.repeats)
    real, _ = measure_features(read_bars([str(args.real)]), args.repeats)
    os.sched_setaffinity(0, set(cores))  # the fxcache hashes its chunks on every core
    fxcache = measure_fxcache(table, args.repeats, work)
    record.update(features_generated=generated, features_real={**real, "file": Path(args.real).name},
                  fxcache=fxcache, features_core_pinned=cores[0])  # fmt: skip
    record["targets"] = {
        "features_bars_per_second": h.target(generated["bars_per_s"], TARGET_BARS_PER_S, higher=True,
                                             how=f"{args.rows:,} generated bars on one core, median call"),
        "fxcache_round_trip_seconds": h.target(fxcache["round_trip_seconds"]["median"], TARGET_FXCACHE_ROUND_TRIP_S,
                                               how=f"write + read of {len(table):,} rows, median"),
    }  # fmt: skip


def timed_step(argv: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one install step; its output is shown only when it fails."""
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=h.ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(
            f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return time.perf_counter() - started


def torch_wheel() -> Path | None:
    """The torch 2.13.0 wheel in pip's find-links folders (PIP_FIND_LINKS or pip's config), if any."""
    links = os.environ.get("PIP_FIND_LINKS", "")
    if not links:
        asked = [sys.executable, "-m", "pip", "config", "get", "global.find-links"]
        links = subprocess.run(asked, capture_output=True, text=True).stdout.strip()
    found = [w for folder in links.split() for w in sorted(Path(folder).glob("torch-2.13.0*.whl"))]
    return found[0] if found else None


def one_install(python: str, wheel: Path | None, work: Path) -> dict:
    """The README's three install steps in a new folder: seconds per step and the load around them."""
    env = {**os.environ, "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    load_before, eviction = list(os.getloadavg()), evict(wheel) if wheel else None
    venv = Path(tempfile.mkdtemp(prefix="install-", dir=work)) / ".venv"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    seconds = {"venv": timed_step([python, "-m", "venv", str(venv)], env), "torch": timed_step([*pip, TORCH], env),
               "package": timed_step([*pip, "-e", ".[train]"], env)}  # fmt: skip
    if subprocess.run([str(venv / "bin" / "foxhunt"), "--version"], capture_output=True, env=env).returncode:
        sys.exit("the installed foxhunt does not start")
    shutil.rmtree(venv.parent, ignore_errors=True)
    total = sum(seconds.values())
    return {"seconds": {**seconds, "total": total}, "wall_seconds": total, "load_before": load_before,
            "load_after": list(os.getloadavg()), "torch_wheel_eviction": eviction}  # fmt: skip


def install(args: argparse.Namespace, work: Path, record: dict) -> None:
    """`--repeats` cold installs; each step's median (no target: README line 1 states the figure)."""
    wheel = torch_wheel()
    version = subprocess.run(
        [args.python, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    runs = h.repeat(args.repeats, lambda i: one_install(args.python, wheel, work), "install")
    record.update(what=WHAT, python=version, cpu=h.cpu_model(), cpu_count=os.cpu_count(), repeats=runs,
                  torch_source=str(wheel) if wheel else "index", pip_cache="off (PIP_NO_CACHE_DIR=1)")  # fmt: skip
    steps = ("venv", "torch", "package", "total")
    record["median_seconds"] = {s: statistics.median(r["seconds"][s] for r in runs) for s in steps}
    loads = [x for r in runs for x in (r["load_before"][0], r["load_after"][0])]
    record["load_average_1min"] = {"min": min(loads), "max": max(loads)}


def oracle_run(seed: int, bars: int, signal: bool, scoring) -> dict:
    """Every policy's stitched net Sharpe on one generated sample, the generator oracle's among them."""
    import numpy as np

    from foxhunt.config import PIPELINE_FOLDS
    from foxhunt.data import sample as sample_data
    from foxhunt.data.bars import generate_sample_bars
    from foxhunt.data.features import compute_features
    from foxhunt.data.folds import generate_walk_forward_indices
    from foxhunt.evaluate.baselines import fold_baselines
    from foxhunt.evaluate.evaluation import MODEL, evaluate_run
    from foxhunt.evaluate.supervised import feature_oracle

    generated = generate_sample_bars(bars, seed=seed, signal=signal)
    planted = sample_data.sample_returns(bars, seed, signal=signal)
    table = compute_features(generated)
    # A feature row at bar t's close holds over bar t + 1: the oracle's position is sign(E[r[t + 1]]).
    expected_next = np.append(planted.expected[1:], 0.0)[
        np.searchsorted(generated.timestamp, table.timestamp)
    ]
    folds = generate_walk_forward_indices(table.timestamp, PIPELINE_FOLDS, close_returns=table.targets[:, 0])
    baselines = {
        f.fold: fold_baselines(table.features, table.targets, f, scoring.cost_per_unit) for f in folds
    }
    oracle = {f.fold: np.sign(expected_next[f.val_start : f.val_end]) for f in folds}
    run = evaluate_run(
        table.features, table.targets, table.timestamp, folds, oracle, scoring, baselines=baselines
    )
    net = {GENERATOR_ORACLE if n == MODEL else n: ev.net.sharpe for n, ev in run.stitched.policies.items()}
    best = feature_oracle(net)
    return {"seed": seed, "signal": "on" if signal else "off", "folds": len(folds), "net_sharpe": net,
            "feature_oracle": best[1] if best else None, "feature_oracle_model": best[0] if best else None,
            "generator_oracle_gross": run.stitched.policies[MODEL].gross.sharpe}  # fmt: skip


def oracle(args: argparse.Namespace, work: Path, record: dict) -> None:
    """The yardsticks per seed, signal on and off, and their mean, min and max across seeds."""
    import torch

    from foxhunt.config import EvalConfig
    from foxhunt.evaluate.evaluation import Scoring

    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    costs = EvalConfig()
    scoring = Scoring(cost=costs.cost, spread=costs.spread, resamples=0)
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = [oracle_run(seed, args.bars, signal, scoring) for signal in (True, False) for seed in seeds]
    summary: dict = {}
    for row in rows:
        print(
            f"signal {row['signal']} seed {row['seed']}: feature oracle {row['feature_oracle']}", flush=True
        )
        for name, value in {**row["net_sharpe"], "feature_oracle": row["feature_oracle"]}.items():
            summary.setdefault(row["signal"], {}).setdefault(name, []).append(value)
    record.update(seeds=seeds, bars=args.bars, cost_per_unit=scoring.cost_per_unit, runs=rows, summary={
        signal: {n: {"mean": statistics.fmean(v), "min": min(v), "max": max(v)} for n, v in names.items()}
        for signal, names in summary.items()})  # fmt: skip


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="benchmark", required=True)
    pre, ins, ora = sub.add_parser("precompute"), sub.add_parser("install"), sub.add_parser("oracle")
    for s in (pre, ins, ora):
        h.common_args(s, repeats=3, device="cpu")
    pre.add_argument("--rows", type=int, default=4_000_000, help="generated bars")
    pre.add_argument("--real", type=Path, default=REAL_SLICE, help="a real bar file")
    ins.add_argument("--python", default="python3", help="the interpreter the README's venv is made with")
    ora.add_argument("--seeds", default="0,1,2", help="generator seeds, comma-separated")
    ora.add_argument("--bars", type=int, default=200_000, help="generated bars per sample")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run one benchmark and write its JSON."""
    args = parse_args(argv)
    name = {"precompute": "precompute", "install": "install_time", "oracle": "feature_oracle"}[args.benchmark]
    measure = {"precompute": precompute, "install": install, "oracle": oracle}[args.benchmark]
    h.run_benchmark(name, args, measure, "cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
