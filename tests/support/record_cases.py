"""Hand-built records of minute bars for the evaluation tests."""

import numpy as np
import torch

from foxhunt.evaluate.evaluation import (
    Record,
    Scoring,
    fold_record,
)

MINUTE = 60_000_000_000
T0 = np.datetime64("2024-01-01T00:00", "ns").astype(np.int64)  # a Monday
NO_BOOTSTRAP = Scoring(resamples=0)
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


def minutes(n: int, every: int = 1) -> np.ndarray:
    return T0 + np.arange(n, dtype=np.int64) * every * MINUTE


def one_window(positions, returns, every: int = 1) -> Record:
    returns = np.asarray(returns, dtype=np.float64)
    return fold_record(0, 0, np.asarray(positions, dtype=np.float64), minutes(len(returns), every), returns)


# ---- Sharpe, its standard errors and its interval ---------------------------------------------
FIXED_RETURNS = np.array(
    [0.012, -0.004, 0.007, 0.001, -0.009, 0.015, 0.003, -0.002, 0.006, -0.011, 0.008, 0.004]
)
