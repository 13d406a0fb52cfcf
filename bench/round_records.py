"""What a search does on the host after each round (issue 36): the run's manifest written once with the
round's folds in it (`write_manifest`, as `TrialScoring.folds_done` does), then every trial of the round
reporting its fold to the study (`AskedTrial.report_fold`: the pruner's value, and in the code before
4a785d9 the folds-run attribute too), over a study that grows to `--trials` trials in rounds of `--population`.

    python bench/round_records.py [--trials 64] [--population 8] [--folds 18] [--journal shipped] [--tree DIR]
        [--out FILE]
    CPU check: --trials 4 --population 2 --folds 3

The study is the embedded SQLite one (`open_study` with no URL) in a temporary folder, with no pruner (the
search benchmark's `--pruner none`); each trial is asked with six sampled settings (`study_saves.SPACE`) and
told its objective after its last fold. Each fold's outputs are the four files a search's fold keeps
(`weights.pt`, `report.json`, `positions.npy`, `norm_stats_foldN.json`), each with a sha256. One process,
one study: run it three times for a median. `--tree` imports foxhunt from another checkout's `trainer_image`
(a before/after on one machine); its record names the commit you give with `--commit`. `--journal` sets
SQLite pragmas on every connection (a lever measured, not shipped): `normal` (synchronous NORMAL), `off`
(synchronous OFF), `wal` (WAL with synchronous NORMAL); `shipped` (the default) sets none. `private` opens
the study as a search does for an s3:// `--out` (`open_study(private=True)`: WAL, synchronous NORMAL, set by
the shipped code on its own connections).
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable

import harness as h
from study_saves import SPACE

FOLD_FILES = ("weights.pt", "report.json", "positions.npy", "norm_stats_fold{fold}.json")


def _fold_outputs(number: int, fold: int) -> dict[str, str]:
    """A search fold's files, relative to --out, with sha256s of their names (as long as real ones)."""
    folder = f"trials/{number:04d}/fold_{fold}"
    names = [f"{folder}/{name.format(fold=fold)}" for name in FOLD_FILES]
    return {name: hashlib.sha256(name.encode()).hexdigest() for name in names}


JOURNALS = {
    "shipped": (),
    "normal": ("PRAGMA synchronous=NORMAL",),
    "off": ("PRAGMA synchronous=OFF",),
    "wal": ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"),
    "private": (),  # the shipped private study (foxhunt.search.storage.private_sqlite)
}


def set_journal(name: str) -> Callable[[], None]:
    """Every SQLite connection opened from now on runs `JOURNALS[name]`'s pragmas first; returns the undo."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    pragmas = JOURNALS[name]

    def run_pragmas(connection, _record) -> None:
        cursor = connection.cursor()
        for pragma in pragmas:
            cursor.execute(pragma)
        cursor.close()

    if not pragmas:
        return lambda: None
    event.listen(Engine, "connect", run_pragmas)
    return lambda: event.remove(Engine, "connect", run_pragmas)


def private_kw(private: bool) -> dict:
    """open_study's keyword for a private study, or none (the shipped default)."""
    return {"private": True} if private else {}


def measure(trials: int, population: int, folds: int, private: bool = False) -> dict:
    """Seconds of the rounds' fold reports and manifest writes as the study grows to `trials` trials."""
    import optuna

    from foxhunt.run.manifest import FoldRecord, Manifest, WorkRecord, write_manifest
    from foxhunt.search.study import open_study
    from foxhunt.search.trial_loop import AskedTrial

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", message="Heartbeat of storage")  # the search keeps its own heartbeats
    reports, writes = [], []
    with tempfile.TemporaryDirectory(prefix="foxhunt-rounds-") as out:
        # the bench's pruner none; `private` only where asked (an older --tree has no such argument)
        study = open_study(
            None, out, "rounds", seed=5, pruner=optuna.pruners.NopPruner(), **private_kw(private)
        )
        manifest = Manifest("x.fxcache", "0" * 64, "bench", "cuda", {"trials": trials})
        for first in range(0, trials, population):
            batch = []
            for _ in range(min(population, trials - first)):
                trial = study.ask()
                params = {k: trial.suggest_float(k, lo, hi, log=True) for k, (lo, hi) in SPACE.items()}
                batch.append(AskedTrial(trial, params))
            for fold in range(folds):
                for asked in batch:
                    record = manifest.trials.setdefault(asked.number, WorkRecord())
                    record.folds[fold] = FoldRecord(
                        _fold_outputs(asked.number, fold), "2026-12-07T00:00:00+00:00"
                    )
                started = time.perf_counter()
                write_manifest(out, manifest)
                between = time.perf_counter()
                for asked in batch:
                    asked.report_fold(fold, 0.01 * asked.number, last=fold == folds - 1)
                writes.append(between - started)
                reports.append(time.perf_counter() - between)
            for asked in batch:
                study.tell(asked.trial, 0.01 * asked.number)
    return {
        "rounds": len(writes), "reports_seconds": sum(reports), "manifest_seconds": sum(writes),
        "total_seconds": sum(reports) + sum(writes), "last_manifest_ms": writes[-1] * 1e3,
        "median_round_reports_ms": statistics.median(reports) * 1e3,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=64)
    p.add_argument("--population", type=int, default=8, help="trials a round trains side by side")
    p.add_argument("--folds", type=int, default=18, help="folds a trial walks (the 64-trial search's 18)")
    p.add_argument("--journal", choices=sorted(JOURNALS), default="shipped",
                   help="SQLite pragmas on the study's connections (default: the shipped none)")  # fmt: skip
    h.tree_args(p)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    record = h.tree_provenance("round_records", args)
    record["settings"] = {"trials": args.trials, "population": args.population, "folds": args.folds,
                          "journal": args.journal, "tree": str(args.tree)}  # fmt: skip
    undo = set_journal(args.journal)
    try:
        record["figures"] = figures = measure(
            args.trials, args.population, args.folds, args.journal == "private"
        )
    finally:
        undo()  # a caller in this process (a test) keeps SQLite's defaults
    print(f"{figures['rounds']} rounds: {figures['reports_seconds']:.3f}s reporting folds to the study, "
          f"{figures['manifest_seconds']:.3f}s writing the manifest (the last {figures['last_manifest_ms']:.1f} "
          f"ms)")  # fmt: skip
    h.write(record, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
