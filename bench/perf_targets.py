"""Issue 15's four targets at the original plan's shape, measured as a user runs it: one JSON, one table.

    python bench/perf_targets.py --out bench/results/perf_targets-h200-DATE-COMMIT.json [--variants --adopt-best]
    python bench/perf_targets.py --bars 30000 --epochs 1 --device cpu --out /tmp/perf-cpu.json   (CPU check)

(a) ≈4.7M generated bars → features → a local fxcache, once; 3 expanding folds of about 4.0M, 4.19M
and 4.37M training rows (fold days derived from the bars' timestamps). (b) `foxhunt train` (batch
8192, 50 epochs) as a fresh process: first-ever (no compile cache beside the fxcache, empty
Inductor/Triton/CUDA caches), then `--repeats` times as a cold process on a pod that has run before
(fresh node caches again, the compile-cache blob beside the fxcache present); the fxcache is evicted
from the page cache before each; wall time per process. (c) Each run's summary.json: median epoch
of the biggest fold and of all folds, the worst fold transition, the load. (d) The load alone,
evicted, repeated, with how cold the file really was. (e) With `--variants`, the step's switches
one at a time on 5-epoch runs of the biggest fold (perf_variants.py); `--adopt-best` runs (b)
with the winner and says so. (f) One JSON: commit, device, torch, date, cold, targets
{name: {measured, target, met}}, the first-ever figure, everything above; and a table.
Medians over repeats, never best-of. bench/render_readme.py turns the JSON into the README table.
(g) `--diagnostics-every 1,10`: (b) runs with the first value (`foxhunt train --diagnostics-every`),
then `--repeats` cold runs with each other one, compared in `diagnostics_every` (run wall, the folds'
untimed seconds, which the diagnostics dominate).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from page_cache import evict, filesystem_of
from perf_runs import pod_env, run_train, train_command
from provenance import device_name, git_commit

TARGETS = {"epoch_seconds": 0.10, "run_seconds": 25.0, "transition_seconds": 0.005, "load_seconds": 1.0}
ISSUE_BARS = 4_700_000
FIRST_TRAIN_SHARE, STEP_SHARE = 4.0 / 4.7, 0.185 / 4.7  # 4.0M, 4.19M, 4.37M training rows of 4.7M
PURGE_BARS, FOLDS = 60, 3


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the JSON to write")
    p.add_argument("--bars", type=int, default=ISSUE_BARS)
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=8192)
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    p.add_argument("--repeats", type=int, default=2, help="cold runs with the compile cache present")
    p.add_argument("--load-repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="one cold repeat, two loads, no start-up probe")
    p.add_argument("--variants", action="store_true", help="measure the step's switches one at a time")
    p.add_argument("--variant-epochs", type=int, default=5)
    p.add_argument("--variant-repeats", type=int, default=3)
    p.add_argument("--variant-budget", type=float, default=150.0, help="seconds; later variants are skipped")
    p.add_argument("--adopt-best", action="store_true", help="run the headline with the fastest variant")
    p.add_argument(
        "--diagnostics-every",
        type=_epoch_counts,
        default=[1],
        help="comma-separated --diagnostics-every values: the first for the headline runs, each other "
        "one for --repeats more cold runs (default 1: every epoch)",
    )
    p.add_argument("--run-timeout", type=float, default=300.0)
    p.add_argument("--work", default=None, help="scratch folder (default: a new temp folder, removed)")
    args = p.parse_args(argv)
    if args.quick:
        args.repeats, args.load_repeats = 1, 2
    return args


def _epoch_counts(text: str) -> list[int]:
    """ "1,10" → [1, 10]: each a whole number of epochs, at least 1."""
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected whole numbers separated by commas, got {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"each value must be at least 1, got {text!r}")
    return values


def diagnostics_comparison(runs: dict[int, list[dict]]) -> dict:
    """Per --diagnostics-every value, over its succeeded cold runs: medians of the run's wall time, its own
    run seconds and the folds' untimed seconds (the diagnostics' share), and the diagnosed epochs."""
    table = {}
    for every, records in runs.items():
        done = [r for r in records if r.get("status") == "succeeded"]
        table[str(every)] = {
            "runs": len(done),
            "wall_seconds_median": _median([r["wall_seconds"] for r in done]),
            "run_seconds_median": _median([r["run_seconds"] for r in done]),
            "untimed_seconds_median": _median([r["untimed_seconds_total"] for r in done]),
            "diagnosed_epochs": sum(f["diagnosed_epochs"] for f in done[0]["folds"]) if done else None,
        }
    return table


def issue_folds(timestamp):
    """Expanding folds whose training rows are 4.0/4.7, 4.19/4.7 and 4.37/4.7 of the rows, from the timestamps."""
    from foxhunt.config import FoldConfig
    from foxhunt.data.bars import NS_PER_DAY

    first = round(len(timestamp) * FIRST_TRAIN_SHARE) + PURGE_BARS
    step = round(len(timestamp) * STEP_SHARE)
    train_days = (int(timestamp[first]) - int(timestamp[0])) / NS_PER_DAY
    # Over both steps: a single step's calendar days hold more or fewer weekends than the next one's.
    step_days = (int(timestamp[first + 2 * step]) - int(timestamp[first])) / 2 / NS_PER_DAY
    return FoldConfig(
        train_days=train_days,
        val_days=step_days,
        step_days=step_days,
        mode="expanding",
        purge_bars=PURGE_BARS,
        max_folds=FOLDS,
    )


def measure_loads(fxcache: Path, device, repeats: int) -> dict:
    """fxcache → device as the run does it (read, validate, upload), evicted before each; then once warm."""
    import torch

    from foxhunt.data.fxcache import read_fxcache
    from foxhunt.train import synchronize, to_device

    if device.type == "cuda":
        torch.zeros(1, device=device)  # CUDA's start-up is not the load
    size = fxcache.stat().st_size

    def once(evicted: bool) -> dict:
        gc.collect()
        eviction = evict(fxcache) if evicted else {"effective": False, "method": "none"}
        started = time.perf_counter()
        cache = read_fxcache(str(fxcache))
        read = time.perf_counter() - started
        data = to_device(cache.features, cache.targets, cache.timestamp, device)
        synchronize(device)
        seconds = time.perf_counter() - started
        del data, cache
        gc.collect()
        return {"seconds": seconds, "read_seconds": read, "upload_seconds": seconds - read, **eviction}

    cold = [once(True) for _ in range(repeats)]
    warm = once(False)
    effective = [c["seconds"] for c in cold if c["effective"]]
    return {
        "bytes": size,
        "filesystem": filesystem_of(fxcache),
        "cold": cold,
        "warm": warm,
        "cold_seconds_median": statistics.median(effective) if effective else None,
        "eviction_effective": bool(effective) and len(effective) == len(cold),
    }


PROBE = r"""
import hashlib, json, sys, threading, time
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
import foxhunt.run.pipeline
t2 = time.perf_counter()
blob = bytes(1 << 30)
def init():
    torch.zeros(1, device="cuda")
a = time.perf_counter()
if sys.argv[1] == "sequential":
    init(); b = time.perf_counter(); hashlib.sha256(blob).digest()
    out = {"cuda_init": b - a}
else:
    th = threading.Thread(target=init); th.start(); hashlib.sha256(blob).digest(); th.join()
    out = {}
out.update(import_torch=t1 - t0, import_foxhunt=t2 - t1, init_and_hash=time.perf_counter() - a)
print(json.dumps(out))
"""


def startup_probe(work: Path) -> dict:
    """A fresh process's fixed costs: imports, CUDA start-up, and whether a thread overlaps the start-up
    with GIL-free work (hashing 1 GiB, as the fxcache check does)."""
    results = {}
    for mode in ("sequential", "threaded"):
        done = subprocess.run(
            [sys.executable, "-c", PROBE, mode], env=pod_env(work / f"probe-{mode}"),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        results[mode] = (
            json.loads(done.stdout.splitlines()[-1]) if done.returncode == 0 else done.stderr[-800:]
        )
    if all(isinstance(r, dict) for r in results.values()):
        overlap = results["sequential"]["init_and_hash"] - results["threaded"]["init_and_hash"]
        results["overlap_gain_seconds"] = overlap
    return results


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def targets(report: dict) -> dict:
    """The four targets from the cold runs (medians over repeats) and the evicted loads."""
    cold = [r for r in report.get("cold_runs", []) if r.get("status") == "succeeded"]
    run_loads = [r["data_load_seconds"] for r in cold if r["eviction"]["effective"]]
    load = _median(run_loads) if run_loads else report.get("load", {}).get("cold_seconds_median")
    measured = {
        "epoch_seconds": _median([r["epoch_seconds_biggest_fold"] for r in cold]),
        "run_seconds": _median([r["wall_seconds"] for r in cold]),
        "transition_seconds": _median([r["transition_seconds_worst"] for r in cold]),
        "load_seconds": load,
    }
    how = {
        "epoch_seconds": "median epoch (collection + steps) of the biggest fold, median over cold runs",
        "run_seconds": "wall time of the cold `foxhunt train` process, compile cache present, median over runs",
        "transition_seconds": "worst fold's reset + normalize (the first fold included), median over runs",
        "load_seconds": "read + validate + upload with the fxcache evicted from the page cache, median",
    }
    return {
        name: {
            "measured": value,
            "target": TARGETS[name],
            "met": value is not None and value <= TARGETS[name],
            "how": how[name],
        }
        for name, value in measured.items()
    }


def table(report: dict) -> str:
    """The targets, the first-ever run and the variants as a plain-text table."""
    rows = [("target", "measured", "target", "met")]
    for name, t in report["targets"].items():
        shown = "-" if t["measured"] is None else f"{t['measured']:.4g} s"
        rows.append((name, shown, f"{t['target']:g} s", "yes" if t["met"] else "NO"))
    first = report.get("first_ever", {})
    if first.get("wall_seconds") is not None:
        rows.append(("first-ever run (stated)", f"{first['wall_seconds']:.4g} s", "-", "-"))
    for name, v in report.get("variants", {}).get("variants", {}).items():
        shown = (
            f"{v['epoch_seconds'] * 1e3:.1f} ms" if "epoch_seconds" in v else v.get("error", v.get("skipped"))
        )
        rows.append((f"variant {name} epoch", str(shown)[:40], "-", "-"))
    for every, m in report.get("diagnostics_every", {}).get("medians", {}).items():
        wall, untimed = m["wall_seconds_median"], m["untimed_seconds_median"]
        shown = "-" if wall is None else f"{wall:.4g} s ({untimed:.3g} s untimed in folds)"
        rows.append((f"run, diagnostics every {every}", shown, "-", "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


def _save(report: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="foxhunt-perf-"))
    work.mkdir(parents=True, exist_ok=True)
    # This process's own compiles (variants) stay out of every measured pod's caches.
    parent = pod_env(work / "parent")
    os.environ.update(
        {k: parent[k] for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "CUDA_CACHE_PATH")}
    )
    try:
        return _measure(args, work, Path(args.out))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


def _provenance(args: argparse.Namespace, device) -> dict:
    import torch

    return {
        "commit": git_commit(),
        "device": device_name(device),
        "torch": torch.__version__,
        "bytecode_prefix": os.environ.get("FOXHUNT_BENCH_PYCACHE"),  # see perf_runs.pod_env
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cold": True,
        "python": sys.version.split()[0],
        "mode": {"quick": args.quick, "variants": args.variants, "adopt_best": args.adopt_best},
    }


def _prepare(args: argparse.Namespace, work: Path, report: dict):
    """(a): the fxcache, once, and the issue's folds over it; returns (fxcache path, fold config, cache, folds)."""
    from foxhunt.data.folds import generate_walk_forward_indices
    from foxhunt.data.fxcache import read_fxcache
    from foxhunt.run.precompute import precompute

    fxcache = work / "fx.arrow"
    report["precompute"] = precompute(
        None, str(fxcache), sample_bars=args.bars, seed=0, progress=lambda _: None
    )
    cache = read_fxcache(str(fxcache))
    folds_config = issue_folds(cache.timestamp)
    folds = generate_walk_forward_indices(cache.timestamp, folds_config)
    report["shape"] = {
        "bars": args.bars,
        "rows": len(cache),
        "fold_config": {k: getattr(folds_config, k) for k in ("train_days", "val_days", "step_days", "mode")},
        "folds": [{"train_rows": f.train_rows, "val_rows": f.val_rows} for f in folds],
        "batch_size": args.batch_size,
        "epochs": args.epochs,
    }
    print(f"{len(cache):,} rows; folds {[f.train_rows for f in folds]} training rows", flush=True)
    return fxcache, folds_config, cache, folds


def _variants(args: argparse.Namespace, cache, folds, device) -> dict:
    """(e): the step's switches one at a time on the biggest fold, in this process."""
    import torch
    from perf_variants import run_matrix

    from foxhunt.config import DQNConfig
    from foxhunt.train import to_device

    data = to_device(cache.features, cache.targets, cache.timestamp, device)
    biggest = max(folds, key=lambda f: f.train_rows)
    deadline = time.perf_counter() + args.variant_budget
    base = DQNConfig(batch_size=args.batch_size)
    matrix = run_matrix(
        data, base, biggest, epochs=args.variant_epochs, repeats=args.variant_repeats, deadline=deadline
    )
    del data
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return matrix


def _measure(args: argparse.Namespace, work: Path, out: Path) -> int:
    from foxhunt.config import DQNConfig
    from foxhunt.train import resolve_device

    device = resolve_device(args.device)
    report = _provenance(args, device)
    fxcache, folds_config, cache, folds = _prepare(args, work, report)
    changes: dict = {}
    if args.variants:
        report["variants"] = _variants(args, cache, folds, device)
        changes = report["variants"]["choice_changes"] if args.adopt_best else {}
        _save(report, out)
    del cache
    gc.collect()
    dqn = {"batch_size": args.batch_size, **changes}
    every, *other_every = args.diagnostics_every
    report["settings"] = {
        "dqn": dqn,
        "shipped_defaults": DQNConfig(**dqn) == DQNConfig(),
        "diagnostics_every": every,
    }
    params = work / "params.json"
    params.write_text(json.dumps({"dqn": dqn}))
    shutil.rmtree(work / "fx.arrow.torch-compile", ignore_errors=True)  # a first-ever run finds nothing

    def run(kind: str, name: str, diagnostics_every: int = every) -> dict:
        out_dir, pod = work / f"out-{name}", work / f"pod-{name}"
        command = train_command(
            fxcache, out_dir, folds_config, args.epochs, args.device, params, diagnostics_every
        )
        record = run_train(kind, command, pod, fxcache, out_dir, args.run_timeout)
        print(f"{kind} run: wall {record['wall_seconds']:.1f}s, exit {record['exit_code']}", flush=True)
        return record

    report["first_ever"] = run("first_ever", "first")
    _save(report, out)
    report["cold_runs"] = [run("cold", f"cold{i}") for i in range(args.repeats)]
    _save(report, out)
    if other_every:  # (g): the same cold runs with the diagnostics spaced out otherwise
        runs = {every: report["cold_runs"]}
        for k in other_every:
            runs[k] = [run(f"cold_diagnostics_every_{k}", f"every{k}-{i}", k) for i in range(args.repeats)]
        report["diagnostics_every"] = {"runs": runs, "medians": diagnostics_comparison(runs)}
        _save(report, out)
    report["load"] = measure_loads(fxcache, device, args.load_repeats)
    if device.type == "cuda" and not args.quick:
        report["startup"] = startup_probe(work)
    report["targets"] = targets(report)
    _save(report, out)
    print(table(report), flush=True)
    print(f"wrote {out}", flush=True)
    failed = [r for r in [report["first_ever"], *report["cold_runs"]] if r.get("status") != "succeeded"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
