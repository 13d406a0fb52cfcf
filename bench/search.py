"""A search's speed: trials per hour with populations against one trial at a time, and a search's wall.

    python bench/search.py trials [--trials 20] [--populations 1,8] [--pruner median]   (the plan's shape)
    python bench/search.py search --bars .gpu/data/EURUSD_M1_2018_2019.parquet [--trials 64] [--population 8]
    CPU checks: trials --bars 20000 --trials 2 --epochs 1 --populations 1,2 --device cpu;
                search --bars 200000 --trials 2 --epochs 1 --population 2 --holdout-days 0 --device cpu
                -- --train-days 60 --val-days 20 --max-folds 2

trials: the plan's shape (4.7M generated bars, 3 expanding folds, batch 8192, 10 epochs a fold), one
`foxhunt train --trials N --population P` study per P, each a fresh process on a fresh pod; trials and
folds per hour from the study's own files (trials.json, study.json), and each P's ratio against the first
(issue 36: `--population 8` ≥ 1.5× one at a time, median pruner). search: the real-data shape (a bar file,
or generated bars with `--bars N`) at the default folds, `--trials` trials of `--epochs` epochs, P at a time,
90 held-out days, as `--repeats` fresh processes (issue 36: a 64-trial search ≤ 2.5 minutes). The first
search compiles its steps and saves them beside the fxcache, the later ones load them; with `--primed` a
search of 1 trial and 1 epoch does that first, so every measured search finds the compiled steps present.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import harness as h
from speed import PLAN_BARS, fold_flags, plan_fxcache

TARGET_TRIALS_RATIO = 1.5  # issue 36: --population 8 against one trial at a time
TARGET_SEARCH_SECONDS = 150.0  # issue 36: a 64-trial search at the real-data shape
# The phases the members of one round share (the same seconds in each member's fold report).
SHARED_PHASES = ("reset", "normalize", "collect", "train", "select")


def study_figures(out: Path, wall: float, population: int = 1) -> dict:
    """The search as its own files tell it: trials finished, folds trained, seconds outside the trials (one at a
    time only: a population's trials overlap, so their durations do not add up to its wall)."""
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
        "trial_seconds_median": statistics.median(trial_seconds) if trial_seconds else None,
        "outside_trials_seconds": wall - sum(trial_seconds) if population == 1 else None,
        "trainers": study["trainers"],
        "trials_per_hour": 3600.0 * study["finished_trials"] / wall,
        "folds_per_hour": 3600.0 * folds / wall,
        "best_objective": (study["best"] or {}).get("objective"),
        "phases": round_phases(out, wall),
    }


def round_phases(out: Path, wall: float) -> dict:
    """Where a study's wall went, from its trials' fold reports: each round's shared training (collection and
    steps) and selection (the epochs' tail scores and diagnostics, the choice of the epochs kept), once per
    round (its members report the same seconds); each member's own validation and checkpoint (one after
    another); and the rest of each round: a round lasts as long as its last member's `fold_seconds`."""
    rounds: dict[tuple, float] = {}  # (fold, its shared phases' seconds) → the round's seconds
    member = []
    for path in sorted(out.glob("trials/*/fold_*/report.json")):
        report = json.loads(path.read_text())
        phases = {"select": 0.0, **report["phases"]}  # a report from before the select phase has none
        key = (path.parent.name, *(phases[p] for p in SHARED_PHASES))
        rounds[key] = max(rounds.get(key, 0.0), report["fold_seconds"])
        member.append(phases["validate"] + phases["checkpoint"])
    shared = [dict(zip(SHARED_PHASES, key[1:], strict=True)) for key in rounds]
    training = sum(r["collect"] + r["train"] for r in shared)
    selection = sum(r["select"] for r in shared)
    round_seconds = sum(rounds.values())
    return {
        "rounds": len(rounds),
        "member_folds": len(member),
        "round_seconds": round_seconds,
        "training_seconds": training,
        "selection_seconds": selection,
        "member_seconds": sum(member),
        "member_seconds_median": statistics.median(member) if member else None,
        "rest_of_rounds_seconds": round_seconds - training - selection - sum(member),
        "training_share": training / wall,
        "selection_share": selection / wall,
        "member_share": sum(member) / wall,
        "rounds_share": round_seconds / wall,
    }


def study(args: argparse.Namespace, work: Path, fxcache: Path, name: str, *flags: str) -> dict:
    """One `foxhunt train --trials N …` study as a fresh process on a fresh pod; its figures."""
    out = work / f"out-{name}"
    command = h.foxhunt(
        "train", "--fxcache", str(fxcache), "--out", str(out), "--epochs", str(args.epochs), "--seed", "0",
        "--device", args.device, "--log-format", "text", "--compile-cache", args.compile_cache,
        "--trials", str(args.trials), "--pruner", args.pruner, *flags,
    )  # fmt: skip
    done = h.fresh_run(command, work / f"pod-{name}", args.run_timeout)
    if done["exit_code"] != 0:
        print(done["error_tail"], flush=True)
        return {"exit_code": done["exit_code"], "wall_seconds": done["wall_seconds"]}
    population = int(flags[flags.index("--population") + 1]) if "--population" in flags else 1
    figures = {"exit_code": 0, **study_figures(out, done["wall_seconds"], population)}
    where = figures["phases"]
    print(f"{name}: {figures['wall_seconds']:.1f}s, {figures['trials_per_hour']:.1f} trials/h; {where['rounds']} "
          f"rounds' training {where['training_share']:.0%} of the wall, selection {where['selection_share']:.0%}, "
          f"{where['member_folds']} members' "
          f"validation and checkpoints {where['member_share']:.0%}, the rounds in all {where['rounds_share']:.0%}",
          flush=True)  # fmt: skip
    return figures


def ratios(studies: dict[str, dict]) -> dict:
    """Each population size's trials and folds per hour against the first size's (one at a time)."""
    first = next(iter(studies.values()))
    return {
        size: {
            "trials_per_hour_vs_first": s["trials_per_hour"] / first["trials_per_hour"],
            "folds_per_hour_vs_first": s["folds_per_hour"] / first["folds_per_hour"],
        }
        for size, s in studies.items()
        if s["exit_code"] == 0 and first["exit_code"] == 0
    }


def trials(args: argparse.Namespace, work: Path, record: dict) -> None:
    """One study per population size at the plan's shape; the ratio of the largest against the first."""
    fxcache, folds, record["shape"] = plan_fxcache(work, args.bars)
    params = work / "params.json"
    params.write_text(json.dumps({"dqn": {"batch_size": args.batch_size}}))
    studies = {}
    for size in args.populations.split(","):
        flags = ("--population", size, "--hyperopt-params", str(params), *fold_flags(folds))
        studies[size] = study(args, work, fxcache, f"p{size}", *flags)
        record["studies"] = studies
        h.write(record, args.out)
    record["ratios"] = ratios(studies)
    last = args.populations.split(",")[-1]
    measured = record["ratios"].get(last, {}).get("trials_per_hour_vs_first")
    record["targets"]["trials_per_hour_ratio"] = h.target(
        measured, TARGET_TRIALS_RATIO, higher=True,
        how=f"one `foxhunt train --trials {args.trials}` process each way, --population {last} over "
        f"{args.populations.split(',')[0]}, pruner {args.pruner}",
    )  # fmt: skip


def search(args: argparse.Namespace, work: Path, record: dict) -> None:
    """`--repeats` fresh searches at the real-data shape, P at a time, with a held-out period."""
    fxcache = work / "search.fxcache"
    if args.bars.isdigit():  # generated bars (the CPU check)
        from foxhunt.run.precompute import precompute

        precompute(None, str(fxcache), sample_bars=int(args.bars), seed=0, progress=lambda _: None)
    else:
        command = h.foxhunt("precompute", "--bars", args.bars, "--out", str(fxcache))
        done = h.fresh_run(command, work / "pod-precompute", args.run_timeout)
        if done["exit_code"] != 0:
            raise SystemExit(f"precompute {args.bars} failed: {done['error_tail']}")
    record["shape"] = {"bars": Path(args.bars).name, "trials": args.trials, "population": args.population,
                       "epochs": args.epochs, "holdout_days": args.holdout_days, "pruner": args.pruner,
                       "compile_cache": "primed" if args.primed else "as the searches leave it"}  # fmt: skip
    flags = (
        "--population",
        str(args.population),
        "--holdout-days",
        str(args.holdout_days),
        *args.extra,
        *args.train_flags,
    )
    if args.primed:
        record["prime"] = prime(args, work, fxcache, *flags)
    runs = [study(args, work, fxcache, f"search{i}", *flags) for i in range(args.repeats)]
    record["runs"] = runs
    wall = h.spread(r["wall_seconds"] for r in runs if r["exit_code"] == 0)
    record["wall_seconds"] = wall
    if args.trials >= 64:  # issue 36's target is for 64 trials; fewer are measured, not judged
        cache = ", the compiled steps cached by a primer" if args.primed else ""
        record["targets"]["search_64_trials_wall_seconds"] = h.target(
            wall["median"], TARGET_SEARCH_SECONDS,
            how=f"median of {wall['n']} fresh processes, {args.trials} trials, P = {args.population}{cache}",
        )  # fmt: skip


def prime(args: argparse.Namespace, work: Path, fxcache: Path, *flags: str) -> dict:
    """One search of 1 trial and 1 epoch with the measured searches' flags, before them: it saves their
    compiled steps (a population of P, and one member for the held-out retrain) beside the fxcache, so each
    measured search finds the cache present, as a second search of a cluster's fxcache does."""
    primer = argparse.Namespace(**{**vars(args), "trials": 1, "epochs": 1})
    return study(primer, work, fxcache, "prime", *flags)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="benchmark", required=True)
    t = sub.add_parser("trials")
    h.common_args(t, repeats=1)
    t.add_argument("--bars", type=int, default=PLAN_BARS, help="generated bars")
    t.add_argument("--trials", type=int, default=20)
    t.add_argument("--epochs", type=int, default=10, help="epochs per fold")
    t.add_argument("--batch-size", type=int, default=8192)
    t.add_argument("--populations", default="1,8", help="comma-separated --population sizes, a study each")
    t.add_argument("--pruner", default="median")
    s = sub.add_parser("search")
    h.common_args(s, repeats=1)
    s.add_argument("--bars", required=True, help="a bar file, or a number of generated bars")
    s.add_argument("--trials", type=int, default=64)
    s.add_argument("--epochs", type=int, default=20, help="epochs per fold")
    s.add_argument("--population", type=int, default=8)
    s.add_argument("--holdout-days", type=float, default=90.0)
    s.add_argument("--pruner", default="none")
    s.add_argument("--primed", action="store_true",
                   help="first a search of 1 trial and 1 epoch that saves the compiled steps the measured "
                        "searches then load (default: the first measured search compiles)")  # fmt: skip
    s.add_argument("extra", nargs="*", help="more `foxhunt train` arguments (after --)")
    s.add_argument("--train-flag", action="append", default=[], dest="train_flags",
                   help="one more `foxhunt train` argument, as --train-flag=--diagnostics-every=20 (repeatable; "
                        "unlike `-- ARGS`, it may come before the --out that gpu_run.sh appends)")  # fmt: skip
    for parser in (t, s):
        parser.add_argument("--compile-cache", default="auto", help="the studies' --compile-cache")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run one benchmark, write its JSON, say each target; exit 1 when a study failed."""
    args = parse_args(argv)
    name, measure = ("trials_gpu", trials) if args.benchmark == "trials" else ("search", search)
    return h.run_benchmark(name, args, measure, args.device)


if __name__ == "__main__":
    sys.exit(main())
