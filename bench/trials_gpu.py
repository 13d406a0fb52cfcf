"""Trials benchmark: one `foxhunt train --trials N` process against a `foxhunt train` process per trial.

    python bench/trials_gpu.py --out bench/results/trials-h200-DATE-COMMIT.json           (the H200 shape)
    python bench/trials_gpu.py --bars 20000 --trials 2 --epochs 1 --device cpu --out /tmp/t.json  (CPU check)

The shape of issue 13: ≈4.7M generated bars, 3 expanding folds of about 4.0M, 4.19M and 4.37M
training rows (perf_targets.issue_folds), batch 8192, 10 epochs per fold, 20 trials of the default
search space (shape-free settings: one trainer, one capture, one compile). The search runs as one
fresh process on a fresh "pod" (empty Inductor, Triton and CUDA caches; perf_runs.pod_env): it
loads the fxcache and puts it on the device once, builds its trainer once. The alternative is one
`foxhunt train` per trial, each a fresh process that loads, builds and compiles again: `--separate`
of them (default 2) are timed, with the settings of the study's first trials, and the figure for N
is extrapolated from their mean (labelled as such in the JSON). Both sides run with the same
`--compile-cache` (default off: every process compiles, as the issue's comparison says).

Pruning makes a study cheaper per trial, so folds per hour are reported beside trials per hour.
One JSON (commit, device, torch, date, cold, the shape, both sides, the ratio against the issue's
target of 3×) and a table. With `--populations 1,4` the study runs once per population size (each a
fresh process on a fresh pod, `foxhunt train --population P`): the same 20 trials, P at a time side by
side as one batched model, beside one at a time. `--pruner none` runs every trial's every fold (a
population's pruned members leave their slots idle until their batch ends).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from perf_runs import pod_env
from perf_targets import ISSUE_BARS, issue_folds
from provenance import device_name, git_commit

TARGET_RATIO = 3.0  # issue 13: trials per hour in one process ≥ 3× separate processes


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="the JSON to write (default: $OUT or bench/results/)")
    p.add_argument("--bars", type=int, default=ISSUE_BARS, help="generated bars")
    p.add_argument("--fxcache", default=None, help="an fxcache to reuse instead of generating bars")
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--epochs", type=int, default=10, help="epochs per fold")
    p.add_argument("--batch-size", type=int, default=8192)
    p.add_argument(
        "--separate", type=int, default=2, help="separate processes timed (extrapolated to N); 0: none"
    )
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    p.add_argument("--compile-cache", default="off", help="the --compile-cache both sides run with")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per process")
    p.add_argument("--work", default=None, help="scratch folder (default: a new temp folder)")
    p.add_argument(
        "--pruner", default="median", help="the studies' --pruner (none: every trial runs every fold)"
    )
    p.add_argument(
        "--populations",
        default="1",
        help="comma-separated --population sizes, a study each (1: one trial at a time; the first is the "
        "one compared with separate processes)",
    )
    return p.parse_args(argv)


def train_command(args, fxcache: Path, out: Path, folds, params: Path, *extra: str) -> list[str]:
    """`foxhunt train` at the benchmark's shape; `extra` adds the search's flags."""
    from foxhunt.config.flags import FLAGS

    cache = ("--compile-cache", args.compile_cache) if "compile-cache" in FLAGS else ()
    return [
        sys.executable, "-m", "foxhunt", "train", "--fxcache", str(fxcache), "--out", str(out),
        "--hyperopt-params", str(params), "--epochs", str(args.epochs), "--seed", "0",
        "--device", args.device, "--train-days", repr(folds.train_days), "--val-days", repr(folds.val_days),
        "--step-days", repr(folds.step_days), "--window", folds.mode, "--purge-bars", str(folds.purge_bars),
        "--max-folds", str(folds.max_folds), "--log-format", "text", *cache, *extra,
    ]  # fmt: skip


def timed(command: list[str], pod: Path, timeout: float) -> dict:
    """Run `command` as a fresh process on the fresh pod `pod`; its wall seconds and exit status."""
    pod.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with (pod / "console.log").open("w") as console:
        done = subprocess.run(
            command, env=pod_env(pod), stdout=console, stderr=subprocess.STDOUT, timeout=timeout
        )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        tail = (pod / "console.log").read_text()[-3000:]
        raise SystemExit(f"exit {done.returncode}: {' '.join(command)}\n{tail}")
    return {"wall_seconds": wall}


def study_figures(out: Path, wall: float) -> dict:
    """The search process as its own files tell it: trials, folds trained, seconds outside the trials."""
    rows = json.loads((out / "trials.json").read_text())
    study = json.loads((out / "study.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    ran = [r for r in rows if r["duration_seconds"] is not None]
    trial_seconds = [r["duration_seconds"] for r in ran]
    folds = sum(r["folds_run"] for r in ran)
    return {
        "wall_seconds": wall,
        "run_seconds": summary["run_seconds"],
        "data_load_seconds": summary["data_load_seconds"],
        "trials_finished": study["finished_trials"],
        "states": study["states"],
        "folds_trained": folds,
        "trial_seconds": trial_seconds,
        "trial_seconds_median": statistics.median(trial_seconds),
        "outside_trials_seconds": wall - sum(trial_seconds),
        "trainers": study["trainers"],
        "trials_per_hour": 3600.0 * study["finished_trials"] / wall,
        "folds_per_hour": 3600.0 * folds / wall,
        "best": study["best"],
    }


def separate_runs(args, fxcache: Path, folds, work: Path, rows: list[dict], n_folds: int) -> dict:
    """`--separate` processes with the settings of the study's first trials, extrapolated to N trials."""
    walls = []
    for i, row in enumerate(rows[: args.separate]):
        params = work / f"params-{i}.json"
        params.write_text(json.dumps({"dqn": {"batch_size": args.batch_size, **row["params"]}}))
        command = train_command(args, fxcache, work / f"out-separate-{i}", folds, params)
        walls.append(timed(command, work / f"pod-separate-{i}", args.timeout)["wall_seconds"])
        print(f"separate process {i + 1}/{args.separate}: {walls[-1]:.1f}s", flush=True)
    mean = statistics.mean(walls)
    return {
        "timed_processes": len(walls),
        "wall_seconds": walls,
        "mean_wall_seconds": mean,
        "extrapolated_wall_seconds": mean * args.trials,
        "extrapolated": f"{args.trials} processes extrapolated from the mean of {len(walls)} timed ones",
        "trials_per_hour": 3600.0 / mean,
        "folds_per_hour": 3600.0 * n_folds / mean,
    }


def table(report: dict) -> str:
    """The comparison in a few lines."""
    s, p = report["study"], report["separate"]
    lines = [
        f"{'':<30}{'wall s':>10}{'trials/h':>12}{'folds/h':>12}",
        f"{'one process, ' + str(report['shape']['trials']) + ' trials':<30}{s['wall_seconds']:>10.1f}"
        f"{s['trials_per_hour']:>12.1f}{s['folds_per_hour']:>12.1f}",
    ]
    if p is not None:
        r = report["targets"]["trials_per_hour_ratio"]
        lines += [
            f"{'a process per trial (extrap.)':<30}{p['extrapolated_wall_seconds']:>10.1f}"
            f"{p['trials_per_hour']:>12.1f}{p['folds_per_hour']:>12.1f}",
            f"ratio {r['measured']:.2f}× (target {r['target']:g}×: {'met' if r['met'] else 'not met'}); "
            f"folds/h ratio {report['folds_per_hour_ratio']:.2f}×; trainers built {s['trainers']}",
        ]
    return "\n".join(
        [
            *lines,
            *(
                f"population {size}: {f['wall_seconds']:.1f}s, {f['trials_per_hour']:.1f} trials/h "
                f"({f['trials_per_hour_vs_first']:.2f}×), {f['folds_per_hour']:.1f} folds/h "
                f"({f['folds_per_hour_vs_first']:.2f}×)"
                for size, f in report.get("populations", {}).items()
            ),
        ]
    )


def measure(args: argparse.Namespace, work: Path) -> dict:
    """The fxcache, the search process, the separate processes: the report."""
    import torch

    from foxhunt.data.folds import generate_walk_forward_indices
    from foxhunt.data.fxcache import read_fxcache
    from foxhunt.run.precompute import precompute
    from foxhunt.train import resolve_device

    device = resolve_device(args.device)
    fxcache = Path(args.fxcache) if args.fxcache else work / "fx.arrow"
    if not args.fxcache:
        precompute(None, str(fxcache), sample_bars=args.bars, seed=0, progress=lambda _: None)
    cache = read_fxcache(str(fxcache))
    folds = issue_folds(cache.timestamp)
    ranges = generate_walk_forward_indices(cache.timestamp, folds)
    report: dict = {
        "benchmark": "trials",
        "commit": git_commit(),
        "device": device_name(device),
        "torch": torch.__version__,
        "device_type": device.type,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cold": True,  # every process on a fresh pod: empty Inductor, Triton and CUDA caches
        "compile_cache": args.compile_cache,
        "shape": {
            "bars": args.bars if not args.fxcache else None,
            "rows": len(cache),
            "folds": [{"train_rows": f.train_rows, "val_rows": f.val_rows} for f in ranges],
            "batch_size": args.batch_size,
            "epochs_per_fold": args.epochs,
            "trials": args.trials,
            "search_space": "default (shape-free settings)",
            "pruner": args.pruner,
        },
    }
    del cache
    print(
        f"{report['shape']['rows']:,} rows; folds {[f.train_rows for f in ranges]} training rows", flush=True
    )
    params = work / "params.json"
    params.write_text(json.dumps({"dqn": {"batch_size": args.batch_size}}))
    studies = {}
    for size in [int(p) for p in args.populations.split(",")]:
        out = work / f"out-study-p{size}"
        flags = ("--trials", str(args.trials), "--population", str(size), "--pruner", args.pruner)
        command = train_command(args, fxcache, out, folds, params, *flags)
        wall = timed(command, work / f"pod-study-p{size}", args.timeout)["wall_seconds"]
        studies[size] = study_figures(out, wall) | {"population": size}
        print(f"study of {args.trials} trials, population {size}: {wall:.1f}s", flush=True)
    first = next(iter(studies))
    report["study"] = studies[first]
    if len(studies) > 1:
        base = studies[first]
        report["populations"] = {
            str(size): {
                "wall_seconds": f["wall_seconds"],
                "trials_per_hour": f["trials_per_hour"],
                "folds_per_hour": f["folds_per_hour"],
                "trials_per_hour_vs_first": f["trials_per_hour"] / base["trials_per_hour"],
                "folds_per_hour_vs_first": f["folds_per_hour"] / base["folds_per_hour"],
                "states": f["states"],
                "trainers": f["trainers"],
                "best_objective": (f["best"] or {}).get("objective"),
            }
            for size, f in studies.items()
        }
    if (
        args.separate < 1
    ):  # the populations compared in-process only: no separate processes, no issue-13 ratio
        report["separate"], report["targets"] = None, {}
        return report
    rows = json.loads((work / f"out-study-p{first}" / "trials.json").read_text())
    report["separate"] = separate_runs(args, fxcache, folds, work, rows, len(ranges))
    ratio = report["study"]["trials_per_hour"] / report["separate"]["trials_per_hour"]
    report["targets"] = {
        "trials_per_hour_ratio": {"measured": ratio, "target": TARGET_RATIO, "met": ratio >= TARGET_RATIO}
    }
    report["folds_per_hour_ratio"] = report["study"]["folds_per_hour"] / report["separate"]["folds_per_hour"]
    return report


def default_out(device: str) -> Path:
    """$OUT/trials-<device>-<date>.json, else the same name under bench/results/."""
    day = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    folder = Path(os.environ["OUT"]) if os.environ.get("OUT") else Path(__file__).parent / "results"
    return folder / f"trials-{device}-{day}.json"


def main(argv: list[str] | None = None) -> int:
    """Measure, write the JSON, print the table."""
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="foxhunt-trials-bench-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        report = measure(args, work)
    out = Path(args.out) if args.out else default_out(report["device_type"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(table(report), flush=True)
    print(f"wrote {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
