"""Small arrays with a signal the features carry, and a driftless twin: data for learning tests on the CPU.

`signal_arrays(n_rows, seed)` builds what a loaded fxcache holds (42 float32 features, 4 float32
forward-return targets over 1, 5, 15, 60 bars, int64 minute timestamps) from a hidden regime:

* the regime s[t] ∈ {−1, 0, +1} persists: at each bar it is redrawn (uniformly) with probability
  1 / `REGIME_BARS`, so it lasts about `REGIME_BARS` bars;
* the 1-bar log return from bar t's close to the next is r[t] = drift · s[t] + `SIGMA` · ε (drift
  `DRIFT` unless given; the draws are the same at any drift): the
  regime known at t's close moves the next bar (target column 0 is r[t]; column k sums r over the
  next 1, 5, 15, 60 bars);
* feature `SIGNAL_FEATURE` is s[t] plus noise of std `FEATURE_NOISE` (one column carries the
  regime, in the unit of a standardised feature); the other 41 are standard normal noise.

`signal=False` gives the driftless twin: the same draws, the same features (the regime is still in
the features), and returns without the drift, so nothing in the features predicts them.

Sized for seconds on the CPU: the default 24,000 rows are 16.7 days of minutes, enough for a fold
of 12 training days and 4 validation days (`FOLDS`). With the drift of 0.5 bp a bar over regimes of
about 60 bars, a policy that holds the regime's sign earns about 30 bp a regime against 2 bp of
round-trip cost: a Sharpe after 1 bp costs in the tens, so a learner that finds the column wins clearly.

Measured on the CPU (one thread, seed 0, the one fold): a DQN of hidden 32 with `PIPELINE_DQN`'s
batch 1,024, learning rate 1e-3 and training cost 2 bp, 60 steps an epoch for 15 epochs, trains in
about 5 s of CPU and earns a validation Sharpe of 51 after 1 bp costs (turnover 77, exposure 96%);
on the twin 3.4 (turnover 14, exposure 42%). With 4 epochs of 30 steps at batch 512 and the default
training cost it churns on both (turnover about 4,500 on 5,760 bars, Sharpe −133 and −157).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from foxhunt.config import TARGET_HORIZONS, FoldConfig
from foxhunt.data.features import FEATURE_NAMES

N_ROWS = 24_000
REGIME_BARS = 60  # mean bars a regime lasts
DRIFT = 5e-5  # 0.5 bp a bar in the regime's direction
SIGMA = 4e-4  # 4 bp a bar of noise
FEATURE_NOISE = 0.2  # noise on the regime's feature, in its own units
SIGNAL_FEATURE = FEATURE_NAMES.index("macd_hist")  # any column: the learner must find which one
MINUTE_NS = 60_000_000_000
T0_NS = int(np.datetime64("2024-01-01T00:00", "ns").astype(np.int64))
# One fold of 12 training days then 4 validation days (purged by the longest horizon, 60 bars).
FOLDS = FoldConfig(train_days=12.0, val_days=4.0, step_days=4.0, max_folds=1)


@dataclass(frozen=True)
class SignalArrays:
    """What a loaded fxcache holds, plus the hidden regime and the expected next return."""

    features: np.ndarray  # float32 (n, 42)
    targets: np.ndarray  # float32 (n, 4): forward log returns over TARGET_HORIZONS bars
    timestamp: np.ndarray  # int64 ns, one minute apart
    regime: np.ndarray  # int8 (n,): s[t]
    expected: np.ndarray  # float64 (n,): E[r[t] | bar t's close] = drift · s[t] (0 for the twin)
    returns: np.ndarray  # float64 (n + 59,): the 1-bar log returns r[t] the targets sum (bars ahead included)


def forward_sums(returns: np.ndarray, horizons=TARGET_HORIZONS) -> np.ndarray:
    """(n, len(horizons)) sums of returns[t .. t + h − 1]; rows without h bars ahead are cut off."""
    n, longest = len(returns), max(horizons)
    cum = np.concatenate([[0.0], np.cumsum(returns)])
    rows = np.arange(n - longest + 1)
    return np.stack([cum[rows + h] - cum[rows] for h in horizons], axis=1)


def signal_arrays(
    n_rows: int = N_ROWS, seed: int = 0, *, signal: bool = True, drift: float = DRIFT
) -> SignalArrays:
    """The arrays of `n_rows` minute bars with the regime's `drift` a bar (or without it: `signal=False`);
    the draws do not depend on `drift`, so fixtures of two drifts differ in the drift alone."""
    rng = np.random.default_rng(seed)
    longest = max(TARGET_HORIZONS)
    total = n_rows + longest - 1  # the last rows' targets need bars ahead
    redraw = rng.random(total) < 1.0 / REGIME_BARS
    redraw[0] = True
    draws = rng.integers(-1, 2, total)
    regime = draws[np.maximum.accumulate(np.where(redraw, np.arange(total), 0))].astype(np.int8)
    noise = rng.standard_normal(total) * SIGMA
    expected = drift * regime * (1.0 if signal else 0.0)
    returns = expected + noise
    features = rng.standard_normal((n_rows, len(FEATURE_NAMES)))
    features[:, SIGNAL_FEATURE] = regime[:n_rows] + FEATURE_NOISE * rng.standard_normal(n_rows)
    return SignalArrays(
        features=np.ascontiguousarray(features, dtype=np.float32),
        targets=np.ascontiguousarray(forward_sums(returns), dtype=np.float32),
        timestamp=T0_NS + np.arange(n_rows, dtype=np.int64) * MINUTE_NS,
        regime=regime[:n_rows],
        expected=expected[:n_rows],
        returns=returns,
    )
