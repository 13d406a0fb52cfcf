"""The benchmarks' one harness: fresh processes, medians, provenance, one JSON with a `targets` block.

Every benchmark in bench/ builds its record the same way:
- `provenance(name, device)`: the commit measured (`git rev-parse HEAD`, or FOXHUNT_GIT_COMMIT where the tree
  has no .git) and whether the tree was dirty, the date, the device, torch, Python, the host's CPU and load;
- `fresh_run(command, pod, …)`: one command as a fresh process on a fresh "pod" (empty node-local compile
  caches of its own; optionally a file evicted from the page cache first), its wall seconds, exit status,
  the trainer's build line, and what the run's own summary.json says (`summary_figures`);
- `spread(values)`: median, min and max over the repeats (medians, never best-of);
- `target(measured, target, higher=…)`: one `{measured, target, met, how}` entry of the `targets` block;
- `write(record, out)`: the JSON, by default `bench/results/<benchmark>-<device>-<date>-<commit>.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path

from page_cache import evict

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
BUILT = re.compile(r"trainer built in ([0-9.]+)s")
CUDA_WAIT = re.compile(r"CUDA context ready \(([0-9.]+)s waited")
# A process at its time limit is asked to stop this long before it is killed (a run stops at its next epoch).
STOP_GRACE_SECONDS = 20.0
# What a row records of a finished run an earlier call left (`kept_run`): no process ran this call.
READ_AS_IT_WAS = {"exit_code": 0, "wall_seconds": 0.0, "read_as_it_was": True}
FINISHED = ("succeeded", "completed")  # a summary.json's status of a run that ended (a universe's: completed)
# The compile cache must be signed to be used; a bench run signs with this key unless one is set.
BENCH_SIGNING_KEY = "bench-signing-key-0123456789"


def git_commit() -> tuple[str, bool | None]:
    """(commit measured, dirty): HEAD and whether the tree has uncommitted changes; FOXHUNT_GIT_COMMIT where
    set (a device copy without .git), its dirtiness unknown (None)."""
    if os.environ.get("FOXHUNT_GIT_COMMIT"):
        return os.environ["FOXHUNT_GIT_COMMIT"], None
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown", None
    return head, bool(status.stdout.strip())


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo, else what platform reports."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(device: str) -> str:
    """The GPU's name for a CUDA device ("cuda", "auto" with a GPU), else the CPU model."""
    import torch

    if device != "cpu" and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return cpu_model()


def provenance(benchmark: str, device: str = "cpu") -> dict:
    """Where, when and on what code a benchmark ran: the head of every record it writes."""
    import torch

    commit, dirty = git_commit()
    on_gpu = device != "cpu" and torch.cuda.is_available()
    return {
        "benchmark": benchmark,
        "commit": commit,
        "dirty": dirty,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": device_name(device),
        "device_type": "cuda" if on_gpu else "cpu",
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "host": {"cpu": cpu_model(), "cpus": os.cpu_count(), "load_average_at_start": list(os.getloadavg())},
        "bytecode_prefix": os.environ.get("FOXHUNT_BENCH_PYCACHE"),  # see pod_env
        "command": " ".join(Path(a).name if i == 0 else a for i, a in enumerate(sys.argv)),
    }


def tree_args(p: argparse.ArgumentParser) -> None:
    """`--tree`, the foxhunt package's folder to import (another checkout's `trainer_image`, for a before and
    after on one machine), and `--commit`, the commit it holds, for the record (`tree_provenance`)."""
    p.add_argument("--tree", type=Path, default=ROOT / "trainer_image", help="the foxhunt package's folder")
    p.add_argument("--commit", default="", help="the commit --tree holds, for the record (default: this one)")


def tree_provenance(benchmark: str, args: argparse.Namespace) -> dict:
    """`provenance` of a benchmark that imports foxhunt from `args.tree`, naming `args.commit` where given."""
    sys.path.insert(0, str(args.tree.resolve()))
    record = provenance(benchmark)
    if args.commit:
        record.update(commit=args.commit, dirty=None)
    return record


def device_tag(record: dict) -> str:
    """'NVIDIA H200' → 'h200'; 'cpu' for a CPU record."""
    if record.get("device_type") != "cuda":
        return "cpu"
    name = record["device"].lower().replace("nvidia", "")
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "cuda"


def default_out(record: dict, label: str = "") -> Path:
    """bench/results/<benchmark>[-label]-<device>-<date>-<commit>[-dirty].json."""
    commit = record["commit"][:7] + ("-dirty" if record.get("dirty") else "")
    parts = [record["benchmark"], label, device_tag(record), record["date"][:10], commit]
    return RESULTS / ("-".join(p for p in parts if p) + ".json")


def write(record: dict, out: str | Path | None, label: str = "") -> Path:
    """Write the record's JSON (to `out`, else its default name) and say so; rewritten as a run goes, so a
    session cut short keeps what ran."""
    path = Path(out) if out else default_out(record, label)
    path.parent.mkdir(parents=True, exist_ok=True)
    record["host"]["load_average_at_end"] = list(os.getloadavg())
    path.write_text(json.dumps(record, indent=2, default=str) + "\n")
    print(f"wrote {path}", flush=True)
    return path


def spread(values: Iterable[float | None]) -> dict:
    """Median, min and max of the values that exist, and how many there were (medians, never best-of)."""
    kept = [v for v in values if v is not None]
    if not kept:
        return {"n": 0, "median": None, "min": None, "max": None}
    return {"n": len(kept), "median": statistics.median(kept), "min": min(kept), "max": max(kept)}


def target(measured: float | None, goal: float, higher: bool = False, how: str = "") -> dict:
    """One entry of a record's `targets` block: met when the figure reaches the goal (at or under it for
    seconds, at or over it for a throughput); never met when not measured."""
    met = measured is not None and (measured >= goal if higher else measured <= goal)
    return {"measured": measured, "target": goal, "met": met, "higher_is_better": higher, "how": how}


def succeeded(runs: list[dict]) -> list[dict]:
    """The runs that exited 0 and wrote their summary (a failed run never counts in a median)."""
    return [r for r in runs if r.get("exit_code") == 0 and r.get("status", "succeeded") == "succeeded"]


def pod_env(pod: Path) -> dict[str, str]:
    """The environment of a process on a fresh pod: empty node-local compile caches, foxhunt importable."""
    env = dict(os.environ)
    for name in ("FOXHUNT_PUSHGATEWAY", "FOXHUNT_RUN_ID"):
        env.pop(name, None)
    env.update(
        TORCHINDUCTOR_CACHE_DIR=str(pod / "inductor"),
        TRITON_CACHE_DIR=str(pod / "triton"),
        CUDA_CACHE_PATH=str(pod / "cuda"),
        PYTHONUNBUFFERED="1",
        FOXHUNT_COMPILE_CACHE_KEY=env.get("FOXHUNT_COMPILE_CACHE_KEY", BENCH_SIGNING_KEY),
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT / "trainer_image"), env.get("PYTHONPATH")) if p),
    )
    # The shipped image carries its bytecode (pip compiles it at install); a device whose packages lack it
    # gets a bytecode cache made once (gpu_run.sh), or each process would compile torch's Python again.
    if env.get("FOXHUNT_BENCH_PYCACHE"):
        env["PYTHONPYCACHEPREFIX"] = env["FOXHUNT_BENCH_PYCACHE"]
    return env


def fresh_run(
    command: list[str],
    pod: Path,
    timeout: float,
    summary: Path | None = None,
    evicted: Path | None = None,
    env: dict[str, str] | None = None,
) -> dict:
    """`command` as one fresh process on the pod folder `pod` (its own compile caches, its console kept
    there): wall seconds, exit code, the trainer's build seconds, and `summary`'s figures when it exists.
    `evicted`, when given, is dropped from the page cache first, so the run's load is a cold read."""
    pod.mkdir(parents=True, exist_ok=True)
    record: dict = {"eviction": evict(evicted) if evicted else None}
    started = time.perf_counter()
    exit_code, stdout, stderr = _stopped_at(command, env or pod_env(pod), timeout)
    record.update(wall_seconds=time.perf_counter() - started, exit_code=exit_code)
    (pod / "console.log").write_text(stdout + stderr)
    built, waited = BUILT.search(stdout), CUDA_WAIT.search(stdout)
    record["build_seconds"] = float(built.group(1)) if built else None
    record["cuda_context_wait_seconds"] = float(waited.group(1)) if waited else None
    record["compile_cache"] = [line for line in stdout.splitlines() if line.startswith("compile cache:")]
    if exit_code != 0 or summary is None or not summary.exists():
        record["error_tail"] = (stderr or stdout)[-3000:]
        return record
    record.update(summary_figures(json.loads(summary.read_text())))
    return record


def _stopped_at(command: list[str], env: dict[str, str], timeout: float) -> tuple[int | str, str, str]:
    """(exit code or "timeout", stdout, stderr) of `command` within `timeout` seconds: at the limit less a
    grace it gets SIGTERM, which a run answers by stopping at its next boundary with its folds kept (so a
    later call resumes it), and SIGKILL when the grace is up."""
    grace = min(STOP_GRACE_SECONDS, timeout / 10)
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as child:
        try:
            stdout, stderr = child.communicate(timeout=timeout - grace)
            return child.returncode, stdout, stderr
        except subprocess.TimeoutExpired:
            child.terminate()
        try:
            stdout, stderr = child.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            child.kill()
            stdout, stderr = child.communicate()
    # A process that ended well within the grace (it was finishing) ran whole; any other was cut.
    return 0 if child.returncode == 0 else "timeout", stdout or "", stderr or ""


def kept_run(out: Path, resume: bool) -> bool:
    """Whether `out` holds a finished run (its summary.json's status succeeded or completed) to be read as it
    is, with `resume`; otherwise `out` is left for the next command: removed without `resume` (a fresh run),
    kept with it (the same `foxhunt train` resumes after the last fold it completed)."""
    if not resume:
        shutil.rmtree(out, ignore_errors=True)
        return False
    summary = out / "summary.json"
    return summary.exists() and json.loads(summary.read_text()).get("status") in FINISHED


def resumed_run(out: Path, resume: bool) -> dict:
    """`{"resumed": True}` where `resume` finds an earlier call's unfinished run in `out` (a manifest.json):
    the row's wall is then this call's part of it."""
    return {"resumed": True} if resume and (out / "manifest.json").exists() else {}


def fold_figures(fold: dict) -> dict:
    """One fold of summary.json: training rows, median epoch (collection + steps), phases, untimed seconds."""
    epochs = [e["collect_seconds"] + e["train_seconds"] for e in fold["epochs"]]
    phases = fold["phases"]
    return {
        "fold": fold["fold"],
        "train_rows": fold["train_end"] - fold["train_start"],
        "epochs": len(epochs),
        "epoch_seconds_median": statistics.median(epochs) if epochs else None,
        "transition_seconds": phases["reset"] + phases["normalize"],
        "validate_seconds": phases["validate"],
        "phases": phases,
        "fold_seconds": fold["fold_seconds"],
        # Epochs with the greedy policy's diagnostics, and the fold's seconds outside its timed phases
        # (before the `select` phase, mostly those diagnostics and the tail selection's scoring).
        "diagnosed_epochs": sum(e.get("val_sharpe") is not None for e in fold["epochs"]),
        "untimed_seconds": fold["fold_seconds"] - sum(phases.values()),
    }


def summary_figures(summary: dict) -> dict:
    """What a run's summary.json says of its own time: run, load, folds, the biggest fold's epoch."""
    folds = [fold_figures(f) for f in summary.get("folds", [])]
    biggest = max(folds, key=lambda f: f["train_rows"]) if folds else {}
    return {
        "status": summary.get("status"),
        "run_seconds": summary.get("run_seconds"),
        "data_load_seconds": summary.get("data_load_seconds"),
        "folds": folds,
        "epoch_seconds_biggest_fold": biggest.get("epoch_seconds_median"),
        "validate_seconds_median": spread(f["validate_seconds"] for f in folds)["median"],
        "untimed_seconds_total": sum(f["untimed_seconds"] for f in folds),
        "outside_folds_seconds": (summary.get("run_seconds") or 0.0) - sum(f["fold_seconds"] for f in folds),
    }


def medians(runs: list[dict], keys: Iterable[str]) -> dict:
    """Per key, the spread over the runs that succeeded."""
    done = succeeded(runs)
    return {key: spread(r.get(key) for r in done) for key in keys}


def repeat(count: int, one: Callable[[int], dict], say: str = "run") -> list[dict]:
    """`count` runs of `one(i)`, each reported on a line as it ends."""
    runs = []
    for i in range(count):
        runs.append(one(i))
        r = runs[-1]
        print(f"{say} {i + 1}/{count}: exit {r.get('exit_code')}, wall {r['wall_seconds']:.1f}s", flush=True)
        if r.get("error_tail"):
            print(r["error_tail"][-1500:], flush=True)
    return runs


def flag_tokens(text: str) -> list[str]:
    """Command-line flags given as one string, as tokens; commas separate them as spaces do, so the string
    survives the word splitting of gpu_run.sh's *_ARGS (`--train-flags=--max-folds,3`)."""
    import shlex

    return shlex.split(text.replace(",", " "))


def common_args(p: argparse.ArgumentParser, repeats: int = 3, device: str = "auto") -> None:
    """The flags every benchmark takes: where the JSON goes, the device, the repeats, the scratch folder."""
    p.add_argument(
        "--out", default=None, help="the JSON (default: bench/results/<benchmark>-…-<commit>.json)"
    )
    p.add_argument("--device", default=device, choices=("auto", "cuda", "cpu"))
    p.add_argument("--repeats", type=int, default=repeats, help="fresh processes or timed repeats per figure")
    p.add_argument("--run-timeout", type=float, default=600.0, help="seconds per process")
    p.add_argument("--work", default=None, help="scratch folder (default: a new temp folder, removed)")


def foxhunt(*args: str) -> list[str]:
    """The command line of `python -m foxhunt ARGS` with this interpreter."""
    return [sys.executable, "-m", "foxhunt", *args]


def run_benchmark(
    name: str,
    args: argparse.Namespace,
    measure: Callable[[argparse.Namespace, Path, dict], None],
    device: str,
) -> int:
    """One benchmark's whole life: its record with provenance, a work folder (kept only when `--work` names
    one), `measure(args, work, record)`, the JSON written, each target said; exit 1 when one went unmeasured."""
    import tempfile

    plain = (str, int, float, bool, list, type(None))  # JSON's own; a path or other object as its text
    settings = {
        k: v if isinstance(v, plain) else str(v) for k, v in vars(args).items() if k not in ("out", "work")
    }
    record = {**provenance(name, device), "settings": settings, "targets": {}}
    work = Path(args.work or tempfile.mkdtemp(prefix=f"foxhunt-{name}-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        measure(args, work, record)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    write(record, args.out)
    for key, t in record["targets"].items():
        shown = "-" if t["measured"] is None else f"{t['measured']:.4g}"
        print(f"{key}: {shown} (target {t['target']:g}: {'met' if t['met'] else 'NOT met'})", flush=True)
    return 1 if any(t["measured"] is None for t in record["targets"].values()) else 0
