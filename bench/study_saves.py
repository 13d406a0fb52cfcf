"""What a search does on the host after each trial ends (issue 36): the study's files written again
(`write_study_outputs`: trials.csv, trials.json, best_params.json, study.json with its DSR and PBO) and the
trial looked up for its line and metrics (`trial_by_number`), over a study that grows to `--trials` trials.

    python bench/study_saves.py [--trials 64] [--folds 18] [--running 7] [--saves-every 1] [--tree DIR] [--out FILE]
    CPU check: --trials 8 --folds 4

The study is the embedded SQLite one (`open_study` with no URL) in a temporary folder; each trial is
asked with six sampled settings, reports `--folds` fold values (as a search does; before 4a785d9 it also
set the folds-run attribute after each), ends with the Sharpe attributes a complete trial keeps, and is
looked up, and saved after every `--saves-every` trials (1: after each trial, as a search did before; 8: once a round
whose eight members end together, as a P = 8 search saves now) and after the last; `--running` trials stay
in flight throughout, as a population's other members do.
One process, one study: run it three times for a median. `--tree` imports foxhunt from another checkout's
`trainer_image` (a before/after on one machine); its record names the commit you give with `--commit`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import harness as h

# The six settings the shipped search samples (a search's first line names them), over ranges of their size
SPACE = {"lr": (1e-5, 1e-3), "gamma": (0.8, 0.99), "tau": (1e-3, 0.1), "eps_decay_fraction": (0.2, 0.7),
         "huber_delta": (1.0, 10.0), "weight_decay": (1e-7, 1e-3)}  # fmt: skip


def _told_trial(study, number: int, folds: int) -> None:
    trial = study.ask()
    settings = {name: trial.suggest_float(name, low, high, log=True) for name, (low, high) in SPACE.items()}
    skill = settings["gamma"] - settings["tau"]
    for fold in range(folds):
        trial.report(skill + 0.01 * ((number * 7 + fold * 3) % 11 - 5), step=fold)
    for name, value in (("warnings", []), ("collapsed", False), ("ignores_features", False),
                        ("sharpe", 0.01 * skill), ("n_obs", 500_000), ("skew", 0.1), ("kurtosis", 4.0)):  # fmt: skip
        trial.set_user_attr(name, value)
    study.tell(trial, skill)


def _running_trials(study, count: int, folds: int) -> None:
    """`count` trials left running with their folds reported: a population's other members, which every read
    of the study fetches again (Optuna's cache keeps finished trials only)."""
    for _ in range(count):
        trial = study.ask()
        for name, (low, high) in SPACE.items():
            trial.suggest_float(name, low, high, log=True)
        for fold in range(folds):
            trial.report(0.0, step=fold)


def measure(trials: int, folds: int, running: int = 0, every: int = 1) -> dict:
    """Seconds of the saves (the study's files, after every `every` trials and the last) and of each trial's
    lookup as the study grows to `trials` finished trials beside `running` trials in flight."""
    import optuna

    from foxhunt.search.outputs import write_study_outputs
    from foxhunt.search.study import open_study, trial_by_number

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", message="Heartbeat of storage")  # the search keeps its own heartbeats
    saves, lookups = [], []
    with tempfile.TemporaryDirectory(prefix="foxhunt-saves-") as tmp:
        study = open_study(None, tmp, "saves", seed=5)
        out = Path(tmp) / "out"
        out.mkdir()
        _running_trials(study, running, folds)
        for number in range(running, running + trials):
            _told_trial(study, number, folds)
            started = time.perf_counter()
            trial_by_number(study, number)
            lookups.append(time.perf_counter() - started)
            if (number - running + 1) % every == 0 or number == running + trials - 1:
                started = time.perf_counter()
                write_study_outputs(study, str(out), planned_trials=trials)
                saves.append(time.perf_counter() - started)
    return {
        "saves_seconds": sum(saves), "lookups_seconds": sum(lookups), "total_seconds": sum(saves) + sum(lookups),
        "last_save_ms": saves[-1] * 1e3, "last_lookup_ms": lookups[-1] * 1e3,
        "median_save_ms": statistics.median(saves) * 1e3, "saves": len(saves),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=64)
    p.add_argument("--folds", type=int, default=18, help="folds a trial reports (the 64-trial search's 18)")
    p.add_argument(
        "--running", type=int, default=7, help="trials in flight (a population of 8 less the one ended)"
    )
    p.add_argument("--saves-every", type=int, default=1,
                   help="trials told between saves (8: a P = 8 search's rounds)")  # fmt: skip
    h.tree_args(p)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    record = h.tree_provenance("study_saves", args)
    record["settings"] = {
        "trials": args.trials,
        "folds": args.folds,
        "running": args.running,
        "saves_every": args.saves_every,
        "tree": str(args.tree),
    }
    record["figures"] = figures = measure(args.trials, args.folds, args.running, args.saves_every)
    print(f"{args.trials} trials, {figures['saves']} saves: {figures['saves_seconds']:.3f}s writing the study's files, "
          f"{figures['lookups_seconds']:.3f}s looking the trials up; the last save "
          f"{figures['last_save_ms']:.1f} ms, its lookup {figures['last_lookup_ms']:.2f} ms")  # fmt: skip
    h.write(record, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
