"""A search's scoring on the host (issue 36): each trial's stitched record (`stitch_outcomes`, after its last
fold) and each member fold's window (`evaluate_fold`, as the fold ends), timed in one `foxhunt train
--trials N` process on the CPU.

    python bench/trial_scoring.py --fxcache FILE [--trials 8] [--population 8] [--tree DIR] [--commit SHA]
        [-- more `foxhunt train` flags]
    CPU check: --fxcache tiny.fxcache --trials 2 --population 2 -- --train-days 5 --val-days 2 --step-days 2

The trials train one epoch of one gradient step of a 32-wide net (`--hyperopt-params`), so that the
scoring, which does not depend on the net, is what the process spends its time on beside the baselines'
fits. The first trial's stitched scoring and the first round's folds include the scoring's first calls;
the record keeps every call. One process, one search: run it three times for a median. `--tree` imports
foxhunt from another checkout's `trainer_image` (a before/after on one machine).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import harness as h

TINY_NET = {"dqn": {"steps_per_epoch": 1, "batch_size": 256, "hidden": 32}}


def _timed(walls: list[float], function):
    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            walls.append(time.perf_counter() - started)

    return timed


def measure(fxcache: str, trials: int, population: int, flags: list[str]) -> dict:
    """The walls of every stitched scoring and every fold's scoring of one search, and the search's wall."""
    from foxhunt.cli import main
    from foxhunt.run import fold
    from foxhunt.search import driver

    stitched: list[float] = []
    folds: list[float] = []
    kept = driver.stitch_outcomes, fold.evaluate_fold
    driver.stitch_outcomes = _timed(stitched, driver.stitch_outcomes)
    fold.evaluate_fold = _timed(folds, fold.evaluate_fold)
    try:
        wall = _search(main, fxcache, trials, population, flags)
    finally:
        driver.stitch_outcomes, fold.evaluate_fold = kept
    return {
        "wall_seconds": wall,
        "stitched": {"calls": len(stitched), "seconds": sum(stitched), "walls": stitched,
                     "median_after_first": statistics.median(stitched[1:]) if len(stitched) > 1 else None},
        "folds": {"calls": len(folds), "seconds": sum(folds),
                  "median": statistics.median(folds) if folds else None},
    }  # fmt: skip


def _search(main, fxcache: str, trials: int, population: int, flags: list[str]) -> float:
    with tempfile.TemporaryDirectory(prefix="foxhunt-trial-scoring-") as tmp:
        params = Path(tmp) / "tiny.json"
        params.write_text(json.dumps(TINY_NET))
        argv = ["train", "--fxcache", fxcache, "--out", str(Path(tmp) / "out"), "--device", "cpu",
                "--trials", str(trials), "--population", str(population), "--epochs", "1",
                "--pruner", "none", "--pictures", "off", "--hyperopt-params", str(params), *flags]  # fmt: skip
        started = time.perf_counter()
        if main(argv) != 0:
            raise SystemExit("the search failed")
        return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fxcache", required=True)
    p.add_argument("--trials", type=int, default=8)
    p.add_argument("--population", type=int, default=8)
    h.tree_args(p)
    p.add_argument("--out", default=None)
    p.add_argument("flags", nargs="*", help="more `foxhunt train` flags, after --")
    args = p.parse_args(argv)
    record = h.tree_provenance("trial_scoring", args)
    record["settings"] = {"fxcache": Path(args.fxcache).name, "trials": args.trials,
                          "population": args.population, "flags": args.flags, "tree": str(args.tree)}  # fmt: skip
    record["figures"] = figures = measure(args.fxcache, args.trials, args.population, args.flags)
    stitched, folds = figures["stitched"], figures["folds"]
    print(f"{stitched['calls']} stitched scorings {stitched['seconds']:.2f}s (after the first, median "
          f"{stitched['median_after_first'] or 0:.3f}s); {folds['calls']} fold scorings {folds['seconds']:.2f}s; "
          f"the search {figures['wall_seconds']:.1f}s")  # fmt: skip
    h.write(record, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
