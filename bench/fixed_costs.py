"""A run's fixed costs, phase by phase, in fresh processes: `python bench/speed.py fixed` (speed.py's mode).

Run as a script, this file is the measured child: `python bench/fixed_costs.py OUT.json FOXHUNT-ARGS…` pins
the CPU numerics as the CLI does, imports the CLI and the run's modules (the `imports` phase), wraps the
run's phase functions in timers (wall and process CPU seconds, calls; a phase re-entered inside itself counts
once), runs `foxhunt.cli.main()` on FOXHUNT-ARGS (as `sys.argv`, as the console script does) and writes what each phase took to OUT.json. Phases nest: each
is inclusive of the ones it calls (`PHASES` says where each sits). The parent (`measure`) spawns the child
pinned to `--cores`, keeps the process's wall and CPU seconds (its rusage) and the Python start-up and
teardown around the timed part, and takes medians over `--repeats` cold processes of:
- `help`: `python -m foxhunt --help` (wall, CPU) and `-X importtime`'s cumulative seconds of `foxhunt.cli`;
- `pipeline`: README's default `foxhunt pipeline` on the CPU;
- `train`: `foxhunt train` on a generated two-year sample fxcache (753,120 bars, the default 21 folds),
  `--epochs` epochs of `--steps` gradient steps, so that what is left is the run's fixed costs.
The teardown splits into what the interpreter does before its exit handlers (joining threads), the `atexit`
handlers (torch's compile workers, multiprocessing's children, logging) and the rest (freeing objects, the
CUDA context, the kernel's exit): `exit_seconds`. The shipped CLI skips all of that (`foxhunt.quick_exit`):
the split is there only with `FOXHUNT_FULL_TEARDOWN=1` in the environment (`full_teardown` in the record).
`--usable-cores N` makes the child's `plot_jobs.usable_cores` answer N: 4 measures a single run's early
picture worker (`plot_jobs.early_worker`) on a machine of two cores, which would draw in the process.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import importlib.util
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

STARTED_WALL, STARTED_CPU = time.perf_counter(), time.process_time()
LAUNCHED_ENV = "FOXHUNT_BENCH_LAUNCHED"  # the parent's time.time() at the spawn: the start-up's seconds
USABLE_CORES_ENV = "FOXHUNT_BENCH_USABLE_CORES"  # `--usable-cores`, from the parent to the child
TWO_YEARS_BARS = 753_120
EXIT_MARKS: dict[str, float] = {}  # "returned", "atexit_first", "atexit_last": perf_counter at each


def mark_exit(name: str, out: str | None = None) -> None:
    """Note `name`'s moment of the child's exit; with `out`, add the marks to the record written there."""
    EXIT_MARKS[name] = time.perf_counter()
    if out is not None and Path(out).exists():
        record = json.loads(Path(out).read_text())
        record["exit_marks"] = {k: v - STARTED_WALL for k, v in EXIT_MARKS.items()}
        Path(out).write_text(json.dumps(record, indent=1) + "\n")


def exit_split(teardown: float, marks: dict[str, float] | None) -> dict[str, float] | None:
    """The teardown's seconds before the exit handlers, in them, and after them (None without the marks)."""
    if not marks or not {"returned", "atexit_first", "atexit_last"} <= marks.keys():
        return None
    before = marks["atexit_first"] - marks["returned"]
    handlers = marks["atexit_last"] - marks["atexit_first"]
    return {"before_handlers": before, "handlers": handlers, "after_handlers": teardown - before - handlers}


# (module, attribute, phase): each wrapped where the run looks it up; indented names nest in the one above.
PHASES = (
    ("foxhunt.cli", "main", "cli_main"),
    ("foxhunt.run.pipeline", "pipeline", "  pipeline_call"),
    ("foxhunt.run.pipeline", "precompute", "    precompute"),
    ("foxhunt.run.pipeline", "train", "    train_call"),
    ("foxhunt.run.pipeline", "read_fxcache", "      read_fxcache"),
    ("foxhunt.run.pipeline", "run_folds", "      run_folds"),
    ("foxhunt.run.walk_forward", "_upload", "        upload"),
    ("foxhunt.run.walk_forward", "run_scoring", "        run_scoring"),
    ("foxhunt.run.walk_forward", "_build_trainer", "        trainer_build"),
    ("foxhunt.run.walk_forward", "walk_folds", "        folds"),
    ("foxhunt.train.dqn", "DQNTrainer.train_epoch", "          training_epochs"),
    ("foxhunt.train.member_policy", "MemberPolicies.choose_policies", "          tail_selection"),
    ("foxhunt.train.member_policy", "MemberPolicies.greedy_positions", "          greedy_positions"),
    ("foxhunt.run.fold", "evaluate_fold", "          fold_scoring"),
    ("foxhunt.evaluate.run_scores", "fold_baselines", "            fold_baselines"),
    ("foxhunt.run.fold", "save_fold", "          fold_files"),
    ("foxhunt.run.lifecycle", "Run.fold_finished", "          fold_records"),
    ("foxhunt.run.walk_forward", "_run_result", "        stitched_evaluation"),
    ("foxhunt.run.walk_forward", "stitch_outcomes", "          stitched_scoring"),
    ("foxhunt.run.walk_forward", "stitch_majority", "          majority_result"),
    ("foxhunt.run.walk_forward", "_report_run", "        stitched_report"),
    ("foxhunt.run.walk_forward", "send_fold_pictures", "          pictures_sent"),
    ("foxhunt.run.walk_forward", "run_tables", "          tables"),
    ("foxhunt.run.walk_forward", "run_pictures", "          pictures"),
    # Each picture drawn in this process (with the early worker, only the record's: the folds' are its).
    ("foxhunt.evaluate.plot", "render_run_png", "            run_png"),
    ("foxhunt.evaluate.plot_positions", "render_positions_png", "            positions_png"),
    ("foxhunt.evaluate.plot", "render_timings_png", "            timings_png"),
    ("foxhunt.evaluate.plot_learning", "render_learning_png", "            learning_png"),
    ("foxhunt.evaluate.plot_jobs", "PicturePool.results", "            pictures_wait"),
    ("foxhunt.run.walk_forward", "_seed_spread", "        seed_spread"),
    ("foxhunt.run.walk_forward", "_seeds_majority", "          seeds_majority"),
    ("foxhunt.run.walk_forward", "run_holdout", "        holdout"),
    ("foxhunt.run.lifecycle", "Run.finish", "      finish"),
    ("foxhunt.run.pipeline", "write_argo_outputs", "      argo_outputs"),
)


def _timed(name: str, call, seconds: dict):
    """`call` wrapped: its wall and CPU seconds and calls added to `seconds[name]` (outermost entry only)."""
    depth = [0]

    @functools.wraps(call)
    def wrapper(*args, **kwargs):
        depth[0] += 1
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return call(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                entry = seconds.setdefault(name, {"wall": 0.0, "cpu": 0.0, "calls": 0})
                entry["wall"] += time.perf_counter() - wall
                entry["cpu"] += time.process_time() - cpu
                entry["calls"] += 1

    return wrapper


def install(seconds: dict) -> None:
    """Wrap every phase of `PHASES` (a name the measured code lacks is skipped: an older commit runs too)."""
    for module_name, attribute, phase in PHASES:
        owner = importlib.import_module(module_name)
        *classes, name = attribute.split(".")
        for cls in classes:
            owner = getattr(owner, cls, None)
        if owner is None or not hasattr(owner, name):
            continue
        setattr(owner, name, _timed(phase.strip(), getattr(owner, name), seconds))


def child(out: str, argv: list[str]) -> int:
    """The measured process: imports, timers, the CLI's main on `argv`, the phases' seconds into `out`."""
    atexit.register(mark_exit, "atexit_last", out)  # handlers run last-registered first: this one ends them
    launched = os.environ.get(LAUNCHED_ENV)
    startup = time.time() - float(launched) - (time.perf_counter() - STARTED_WALL) if launched else None
    from foxhunt.config.numerics import pin_cpu_numerics

    pin_cpu_numerics()  # as the CLI's main does, before torch is imported
    wall, cpu = time.perf_counter(), time.process_time()
    import foxhunt.cli
    import foxhunt.run.pipeline
    import foxhunt.run.walk_forward  # noqa: F401  (the run's modules: torch, numpy, pyarrow, …)

    seconds: dict = {"imports": {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}}
    install(seconds)
    pretend_cores(os.environ.get(USABLE_CORES_ENV))
    write = functools.partial(write_record, out, startup, seconds)
    if has_module("foxhunt.quick_exit"):  # the record is written before a quick exit ends the process in main
        quick = importlib.import_module("foxhunt.quick_exit")
        quick.leave = written_first(write, quick.leave)
    sys.argv = ["foxhunt", *argv]  # main() with no argument list: as the console script calls it
    code = foxhunt.cli.main()
    write(code)  # main returned: the interpreter's own exit follows, its handlers marked
    atexit.register(mark_exit, "atexit_first")
    return code


def written_first(write, leave):
    """`leave` (foxhunt.quick_exit's) with the record written before it."""

    def leave_written(code: int) -> None:
        write(code)
        leave(code)

    return leave_written


def has_module(name: str) -> bool:
    """Whether `name` can be imported (an older commit measured lacks the newer modules)."""
    return importlib.util.find_spec(name) is not None


def write_record(out: str, startup: float | None, seconds: dict, code: int) -> None:
    """The measured child's record into `out`: exit code, start-up, seconds in the process, phases."""
    record = {
        "exit_code": code,
        "startup_seconds": startup,
        "in_process_seconds": time.perf_counter() - STARTED_WALL,
        "in_process_cpu_seconds": time.process_time() - STARTED_CPU,
        "phases": seconds,
    }
    Path(out).write_text(json.dumps(record, indent=1) + "\n")
    mark_exit("returned")


def pretend_cores(cores: str | None) -> None:
    """`plot_jobs.usable_cores` answering `cores` (None or empty: the machine's own)."""
    if cores:
        from foxhunt.evaluate import plot_jobs

        plot_jobs.usable_cores = lambda *args, **kwargs: int(cores)


def spawn(
    command: list[str], env: dict[str, str], timeout: float
) -> tuple[dict, subprocess.CompletedProcess]:
    """One fresh process: wall seconds, CPU seconds (user + system, from the children's rusage), exit code,
    and the end of its output when it failed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**env, LAUNCHED_ENV: repr(time.time())}
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    record = {"wall_seconds": wall, "cpu_seconds": cpu, "exit_code": done.returncode}
    if done.returncode != 0:
        record["error_tail"] = (done.stderr or done.stdout)[-2000:]
    return record, done


def env_of(work: Path) -> dict[str, str]:
    """A user's environment with this checkout's package first, its own compile caches under `work`."""
    import harness as h

    return h.pod_env(work / "pod")


def pinned(command: list[str], cores: str) -> list[str]:
    """The command pinned to `cores` with taskset (as it is when empty)."""
    return ["taskset", "-c", cores, *command] if cores else command


CLI_IMPORT = "foxhunt.cli"


def help_run(args, work: Path) -> dict:
    """`python -m foxhunt --help` cold: wall and CPU; then `-X importtime`'s cumulative seconds of the CLI."""
    import harness as h

    env = env_of(work)
    record, _ = spawn(pinned(h.foxhunt("--help"), args.cores), env, args.run_timeout)
    _, done = spawn(pinned([sys.executable, "-X", "importtime", "-m", "foxhunt", "--help"], args.cores), env,
                    args.run_timeout)  # fmt: skip
    for line in done.stderr.splitlines():  # "import time: self | cumulative | name", microseconds
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == CLI_IMPORT:
            record["cli_import_seconds"] = int(parts[1]) / 1e6
    return record


def phase_run(args, work: Path, name: str, argv: list[str], summary: Path) -> dict:
    """One measured child on `argv`: its wall and CPU, start-up, teardown, phases and summary figures."""
    import harness as h

    phases = work / f"{name}-phases.json"
    phases.unlink(missing_ok=True)
    shutil.rmtree(summary.parent, ignore_errors=True)  # a fresh --out: an earlier run's folds are not resumed
    command = pinned([sys.executable, str(Path(__file__).resolve()), str(phases), *argv], args.cores)
    env = {**env_of(work), USABLE_CORES_ENV: str(args.usable_cores or "")}
    record, _ = spawn(command, env, args.run_timeout)
    if record["exit_code"] != 0 or not phases.exists():
        return record
    timed = json.loads(phases.read_text())
    record.update(startup_seconds=timed["startup_seconds"], in_process_seconds=timed["in_process_seconds"],
                  phases=timed["phases"])  # fmt: skip
    if timed["startup_seconds"] is not None:
        record["teardown_seconds"] = (
            record["wall_seconds"] - timed["startup_seconds"] - timed["in_process_seconds"]
        )
        record["exit_seconds"] = exit_split(record["teardown_seconds"], timed.get("exit_marks"))
    if summary.exists():
        figures = h.summary_figures(json.loads(summary.read_text()))
        record.update({k: figures[k] for k in ("run_seconds", "data_load_seconds", "outside_folds_seconds")})
        record["folds"] = len(figures["folds"])
    return record


def phase_medians(runs: list[dict]) -> dict:
    """Per phase, the median (min, max) of its wall and CPU seconds over the runs that succeeded."""
    import harness as h

    done = [r for r in runs if r.get("exit_code") == 0 and "phases" in r]
    names = [n for r in done for n in r["phases"]]
    table = {}
    for name in dict.fromkeys(names):
        table[name] = {
            "wall": h.spread(r["phases"].get(name, {}).get("wall") for r in done),
            "cpu": h.spread(r["phases"].get(name, {}).get("cpu") for r in done),
            "calls": max(r["phases"].get(name, {}).get("calls", 1) for r in done),
        }
    keys = ("wall_seconds", "cpu_seconds", "startup_seconds", "teardown_seconds", "run_seconds")
    exits = [r["exit_seconds"] for r in done if r.get("exit_seconds")]
    split = {k: h.spread(e[k] for e in exits) for k in exits[0]} if exits else None
    return {"process": {k: h.spread(r.get(k) for r in done) for k in keys}, "phases": table, "exit": split}


def measure(args, work: Path, record: dict) -> None:
    """help, the default pipeline and a two-year `foxhunt train`, each as `--repeats` cold processes."""
    import harness as h

    from foxhunt.quick_exit import full_teardown_wanted
    from foxhunt.run.precompute import precompute

    if args.cores and subprocess.run(["which", "taskset"], capture_output=True).returncode != 0:
        raise SystemExit("taskset not found: install util-linux, or pass --cores ''")
    kinds = args.kinds.split(",")
    record["cores"] = args.cores or "all"
    record["full_teardown"] = full_teardown_wanted()
    if "help" in kinds:
        runs = h.repeat(args.repeats, lambda i: help_run(args, work), "help")
        record["help"] = {"runs": runs, "medians": {k: h.spread(r.get(k) for r in runs) for k in
                          ("wall_seconds", "cpu_seconds", "cli_import_seconds")}}  # fmt: skip
        h.write(record, args.out)
    if "pipeline" in kinds:

        def one(i: int) -> dict:
            out = work / f"pipeline-{i}"
            argv = ["pipeline", "--out", str(out), "--device", "cpu"]
            return phase_run(args, work, f"pipeline-{i}", argv, out / "summary.json")

        runs = h.repeat(args.repeats, one, "pipeline")
        record["pipeline"] = {"runs": runs, "medians": phase_medians(runs)}
        h.write(record, args.out)
    if "train" in kinds:
        fxcache = work / "two-years.arrow"
        precompute(
            [args.bars_file] if args.bars_file else None,
            str(fxcache),
            sample_bars=args.bars,
            seed=0,
            progress=lambda _: None,
        )
        params = work / "params.json"
        params.write_text(json.dumps({"dqn": {"steps_per_epoch": args.steps}}))
        steps = ["--hyperopt-params", str(params)] if args.steps else []  # 0: the shipped steps an epoch

        def one_train(i: int) -> dict:
            out = work / f"train-{i}"
            argv = ["train", "--fxcache", str(fxcache), "--out", str(out), "--device", args.device, "--seed", "0",
                    "--epochs", str(args.epochs), *steps, "--log-format", "text",
                    "--max-folds", str(args.max_folds), *shlex.split(args.train_flags)]  # fmt: skip
            return phase_run(args, work, f"train-{i}", argv, out / "summary.json")

        runs = h.repeat(args.repeats, one_train, "train")
        record["train"] = {"shape": {"bars": args.bars_file or args.bars, "epochs": args.epochs, "steps_per_epoch": args.steps,
                                     "max_folds": args.max_folds, "usable_cores": args.usable_cores},
                           "runs": runs, "medians": phase_medians(runs)}  # fmt: skip


def add_args(p) -> None:
    """`fixed`'s own flags."""
    p.add_argument("--cores", default="0,1", help="taskset core list; empty: not pinned")
    p.add_argument("--kinds", default="help,pipeline,train", help="which processes, in order")
    p.add_argument("--bars", type=int, default=TWO_YEARS_BARS, help="`train`: generated sample bars")
    p.add_argument("--epochs", type=int, default=1, help="`train`: epochs a fold")
    p.add_argument("--bars-file", default=None, help="`train`: a bars file instead of generated bars")
    p.add_argument("--steps", type=int, default=2, help="`train`: gradient steps an epoch (0: the shipped)")
    p.add_argument("--max-folds", type=int, default=0, help="`train`: most folds (0: every default fold)")
    p.add_argument("--train-flags", default="", help="`train`: more flags (a CPU check's small folds)")
    p.add_argument("--usable-cores", type=int, default=0,
                   help="the cores the run's pictures count (plot_jobs.usable_cores; 0: the machine's); "
                        "4 starts a single run's early picture worker on two")  # fmt: skip


if __name__ == "__main__":
    sys.exit(child(sys.argv[1], sys.argv[2:]))
