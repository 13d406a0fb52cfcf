"""Real EURUSD windows for the scoring tests: policies with every kind of P&L over one window of the
tests/data slice, as records (`window_records`), and a window's stacked gross and net P&L."""

import numpy as np

from foxhunt.data.bars import read_bars
from foxhunt.data.features import FEATURE_NAMES, compute_features
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.evaluation import BUY_AND_HOLD, MODEL
from foxhunt.evaluate.records import fold_record
from support.data_files import EURUSD

COST = 1e-4
START, VAL = 20_000, 6_000  # the window's first row in the EURUSD slice, and its bars


def eurusd_arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(timestamp, features, targets) of the EURUSD slice."""
    table = compute_features(read_bars([str(EURUSD)]))
    return table.timestamp, table.features, table.targets


def policies(features: np.ndarray, start: int, bars: int) -> dict[str, np.ndarray]:
    """The model (against the last return) and baselines with every kind of P&L: flat, always long,
    trading every bar, trading rarely (the sign of the 60-bar return), and long a third of the time."""
    rows = slice(start, start + bars)
    last = np.sign(features[rows, FEATURE_NAMES.index("log_return_1")]).astype(np.float64)
    slow = np.sign(features[rows, FEATURE_NAMES.index("log_return_60")]).astype(np.float64)
    return {
        MODEL: -last,
        BUY_AND_HOLD: np.ones(bars),
        "flat": np.zeros(bars),
        "last_return_sign": last,
        "slow_sign": slow,
        "third_long": (np.arange(bars) % 3 == 0).astype(np.float64),
    }


def window_records(eurusd, start: int = START, bars: int = VAL, fold: int = 0):
    """Each policy's record over the window of `bars` bars from row `start`."""
    timestamp, features, targets = eurusd
    return {
        name: fold_record(fold, start, pos, timestamp, targets[:, 0])
        for name, pos in policies(features, start, bars).items()
    }


# Overlapping windows (the later fold takes the shared bars) and a gap before the last one.
STITCHED_FOLDS = [
    FoldRange(0, 0, START - 60, START, START + 3_000, 0.0),
    FoldRange(1, 0, START + 1_940, START + 2_000, START + 5_000, 0.0),
    FoldRange(2, 0, START + 5_940, START + 6_000, START + 8_500, 0.0),
]


def stitched_plans(features: np.ndarray) -> tuple[dict, dict]:
    """Per fold of STITCHED_FOLDS: the model's positions, and the baselines' (by name)."""
    plans = {f.fold: policies(features, f.val_start, f.val_rows) for f in STITCHED_FOLDS}
    return {fold: plan.pop(MODEL) for fold, plan in plans.items()}, plans
