"""Small scored windows for the tests of the reports, the metrics and the table."""

from __future__ import annotations

import numpy as np

from foxhunt.evaluate.evaluation import MODEL, Scoring, WindowEvaluation, evaluate_window, fold_record

MINUTE = 60_000_000_000
T0 = np.datetime64("2024-01-01T00:00", "ns").astype(np.int64)


def window(fold: int, start: int = 0, n: int = 240, seed: int = 0) -> WindowEvaluation:
    """A scored window of `n` minute bars from 2024-01-01 plus `start` minutes: a model, buy-and-hold
    and flat, under 1 bp costs."""
    rng = np.random.default_rng(seed)
    timestamp = T0 + np.arange(start + n, dtype=np.int64) * MINUTE
    returns = rng.normal(1e-5, 4e-4, start + n)
    positions = {
        MODEL: np.sign(rng.normal(size=n)),
        "buy_and_hold": np.ones(n),
        "flat": np.zeros(n),
    }
    records = {name: fold_record(fold, start, pos, timestamp, returns) for name, pos in positions.items()}
    return evaluate_window(records, Scoring(resamples=50), fold)


def flat_window(fold: int, start: int = 0, n: int = 240, seed: int = 0) -> WindowEvaluation:
    """`window` with a model that holds no position (a fold the tail gate made flat)."""
    rng = np.random.default_rng(seed)
    timestamp = T0 + np.arange(start + n, dtype=np.int64) * MINUTE
    returns = rng.normal(1e-5, 4e-4, start + n)
    positions = {MODEL: np.zeros(n), "buy_and_hold": np.ones(n), "flat": np.zeros(n)}
    records = {name: fold_record(fold, start, pos, timestamp, returns) for name, pos in positions.items()}
    return evaluate_window(records, Scoring(resamples=50), fold)
