"""Seconds to score a search trial's records on the host: a fold's window and the stitched record.

    python bench/evaluation_speed.py [--repeats 7] [--resamples 0] [--out FILE]

Issue 13's shape: three validation windows of 185,000 bars and their stitched record (555,000 bars),
the model and four baselines each, scored gross and net with `evaluation.evaluate_window` as a trial
scores them (`resamples 0`: a search skips the bootstrap; `--resamples 1000` times a run's scoring).
Random positions and returns; warm (one untimed call first); medians over repeats. A complete
trial's scoring (each fold as it ends, the folds again and the stitched record at the end) is timed
without a memo and with the study's `ScoreMemo` after a first trial (a new model each repeat, the
same baselines). Runs on the CPU, as the scoring does on every machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from provenance import git_commit

WINDOW_BARS, FOLDS = 185_000, 3
POLICIES = ("model", "buy_and_hold", "flat", "last_return_sign", "ridge")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--resamples", type=int, default=0, help="bootstrap resamples (a search uses 0)")
    p.add_argument("--out", default=None, help="the JSON to write (default: print only)")
    return p.parse_args(argv)


def median_seconds(call, repeats: int) -> float:
    """Median wall seconds of `call()` over `repeats`, after one untimed call."""
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def trial_scoring(windows: list[dict], scoring, memo) -> None:
    """What a complete trial scores: each fold's window as it ends, then the run's folds and stitched record."""
    from foxhunt.evaluate.evaluation import evaluate_window, stitch

    for fold, records in enumerate(windows):
        evaluate_window(records, scoring, fold, memo)
    for fold, records in enumerate(windows):
        evaluate_window(records, scoring, fold, memo)
    evaluate_window({name: stitch([w[name] for w in windows]) for name in POLICIES}, scoring, memo=memo)


def main(argv: list[str] | None = None) -> int:
    """Build the records, time the windows and a trial's scoring, print and write the figures."""
    from foxhunt.evaluate.evaluation import ScoreMemo, Scoring, evaluate_window, fold_record, stitch

    args = parse_args(argv)
    rng = np.random.default_rng(0)
    rows = WINDOW_BARS * (FOLDS + 1)
    returns = rng.normal(0.0, 1e-3, rows)
    timestamp = np.arange(rows, dtype=np.int64) * 60_000_000_000

    def record(fold: int):
        positions = rng.integers(-1, 2, WINDOW_BARS).astype(float)
        return fold_record(fold, (fold + 1) * WINDOW_BARS, positions, timestamp, returns)

    windows = [{name: record(fold) for name in POLICIES} for fold in range(FOLDS)]
    stitched = {name: stitch([w[name] for w in windows]) for name in POLICIES}
    scoring = Scoring(cost=1e-4, spread=0.0, seed=0, resamples=args.resamples)
    fold_s = median_seconds(lambda: evaluate_window(windows[0], scoring, 0), args.repeats)
    stitched_s = median_seconds(lambda: evaluate_window(stitched, scoring), args.repeats)
    plain_s = median_seconds(lambda: trial_scoring(windows, scoring, None), args.repeats)
    memo = ScoreMemo()
    trial_scoring(windows, scoring, memo)  # the study's first trial scores the baselines

    def next_trial() -> None:  # a new model, the same baselines
        for fold, window in enumerate(windows):
            window["model"] = record(fold)
        trial_scoring(windows, scoring, memo)

    memo_s = median_seconds(next_trial, args.repeats)
    report = {
        "benchmark": "evaluation_speed",
        "commit": git_commit(),
        "device": "cpu",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "warm": True,
        "repeats": args.repeats,
        "resamples": args.resamples,
        "policies": len(POLICIES),
        "fold_window_bars": WINDOW_BARS,
        "stitched_bars": len(stitched["model"]),
        "fold_window_seconds": fold_s,
        "stitched_seconds": stitched_s,
        "trial_seconds_without_memo": plain_s,
        "trial_seconds_with_study_memo": memo_s,
        "memo": {"hits": memo.hits, "misses": memo.misses},
    }
    print(
        f"{len(POLICIES)} policies, resamples {args.resamples} (medians of {args.repeats}, warm): fold window "
        f"({WINDOW_BARS:,} bars) {fold_s * 1e3:.1f} ms, stitched ({report['stitched_bars']:,} bars) "
        f"{stitched_s * 1e3:.1f} ms; a complete trial's scoring {plain_s:.3f} s, "
        f"{memo_s:.3f} s with the study's memo"
    )
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
