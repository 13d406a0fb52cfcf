"""A search's headline files: the trade list, daily and monthly tables an ordinary run writes for its
stitched record, from the same code, for the folds' positions the search keeps."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.evaluation import Scoring, evaluate_run
from foxhunt.evaluate.trades import run_tables
from foxhunt.search.headline import headline_tables

MINUTE = 60_000_000_000
T0 = np.datetime64("2024-01-30T22:00", "ns").astype(np.int64)  # the record crosses a day and a month


def test_the_headline_files_are_a_runs_files_of_the_same_positions():
    # Overlapping windows (fold 1 starts inside fold 0's) stitch as a run's do, beside buy-and-hold.
    # Catches: another benchmark, windows laid end to end, the costs left out.
    rng = np.random.default_rng(8)
    n = 6000
    data = SimpleNamespace(
        timestamp=T0 + np.arange(n, dtype=np.int64) * MINUTE, targets=rng.normal(0, 4e-4, size=(n, 2))
    )
    folds = [FoldRange(0, 0, 2000, 2000, 4000, 1.0), FoldRange(1, 1500, 3500, 3500, 5500, 1.0)]
    positions = {f.fold: rng.integers(-1, 2, f.val_rows).astype(np.float64) for f in folds}
    scoring = Scoring(cost=2e-4, spread=1e-4, resamples=0)
    baselines = {f.fold: {"buy_and_hold": np.ones(f.val_rows), "flat": np.zeros(f.val_rows)} for f in folds}
    run = evaluate_run(None, data.targets, data.timestamp, folds, positions, scoring, baselines=baselines)
    assert headline_tables(data, folds, positions, scoring) == run_tables(run)
