"""How much of a search's best result is selection: the probability of backtest overfitting (PBO) and the
Deflated Sharpe Ratio's inputs, each with a plain reading.

PBO by combinatorially symmetric cross-validation (CSCV; D. Bailey, J. Borwein, M. López de Prado and
J. Zhu, "The Probability of Backtest Overfitting", Journal of Computational Finance 20(4), 2017, working
paper 2015). The input is a matrix of per-fold results, one row per fold in time order, one column per
trial. The folds are cut into S contiguous groups of equal size (S even; the earliest folds that do not
fill a group are left out). For each of the C(S, S/2) ways to pick half the groups as in-sample (the
rest out of sample): the trial with the best in-sample mean is selected (ties: the lowest column), its
out-of-sample mean is ranked among all trials' (ties share the average rank), ω = rank / (N + 1), and
its logit λ = ln(ω / (1 − ω)). PBO = the share of splits with λ ≤ 0: the selected trial is at or
below the out-of-sample median. For trials with no skill PBO is about 1/2 (the in-sample winner is a
coin flip out of sample); near 1 when the in-sample winner is systematically the out-of-sample loser
(a bet that won one period by losing the other); near 0 when one trial's edge is real.

The DSR rule (`dsr_inputs`): N is the number of trials that produced a Sharpe ratio (a complete
walk-forward: a stitched out-of-sample record), and the variance is the sample variance (ddof 1) of those
same N per-period Sharpe ratios. Pruned and failed trials produced none and count in neither: both
inputs describe one population of trials. (The trials tried, pruned ones included, are reported beside.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

MAX_GROUPS = 16  # C(16, 8) = 12,870 splits: the most CSCV evaluates
OVERFIT_AT = 0.5  # PBO at or above this: the search's choice is no better than the median trial's
HOLDS_UP_BELOW = 0.2  # PBO below this: the choice holds up out of sample
DSR_SIGNIFICANT = 0.95  # DSR at or above this: the best Sharpe survives the selection
DSR_SELECTION = 0.5  # DSR below this: selection explains most of the best Sharpe


@dataclass(frozen=True)
class Overfitting:
    """The CSCV estimate over a folds × trials matrix."""

    pbo: float
    groups: int  # S
    splits: int  # C(S, S/2)
    folds_used: int
    trials: int
    logits: list[float]  # λ of every split, in the order of `itertools.combinations`


def default_groups(n_folds: int) -> int:
    """S when none is given: the largest even number ≤ min(folds, MAX_GROUPS)."""
    return min(n_folds, MAX_GROUPS) // 2 * 2


def probability_of_overfitting(results: np.ndarray, groups: int = 0) -> Overfitting:
    """PBO by CSCV over `results` (rows: folds in time order; columns: trials); `groups` 0: `default_groups`."""
    m = np.asarray(results, dtype=np.float64)
    if m.ndim != 2 or m.shape[1] < 2:
        raise ValueError(f"results of shape {m.shape}: needs a folds × trials matrix with two or more trials")
    if not np.all(np.isfinite(m)):
        raise ValueError("results hold a NaN or infinite value")
    n_folds, n_trials = m.shape
    s = groups or default_groups(n_folds)
    if s < 2 or s % 2 or s > n_folds:
        raise ValueError(f"{s} groups over {n_folds} folds: needs an even number from 2 to the folds")
    size = n_folds // s
    used = m[n_folds - size * s :]  # the latest folds fill the groups
    group_sums = used.reshape(s, size, n_trials).sum(axis=1)
    total = group_sums.sum(axis=0)
    logits = []
    for chosen in combinations(range(s), s // 2):
        in_sample = group_sums[list(chosen)].sum(axis=0)
        out_sample = total - in_sample
        best = int(np.argmax(in_sample))
        value = out_sample[best]
        rank = 1.0 + np.sum(out_sample < value) + 0.5 * (np.sum(out_sample == value) - 1)
        omega = rank / (n_trials + 1.0)
        logits.append(math.log(omega / (1.0 - omega)))
    lam = np.asarray(logits)
    pbo = float(np.mean(lam <= 0.0))
    return Overfitting(pbo, s, len(logits), size * s, n_trials, logits)


def pbo_reading(pbo: float) -> str:
    """PBO in words."""
    if pbo >= OVERFIT_AT:
        return (
            f"PBO {pbo:.2f}: the settings that look best on half the folds rank at or below the median on the "
            "other half in most splits; selection explains this ranking, not skill"
        )
    if pbo >= HOLDS_UP_BELOW:
        return (
            f"PBO {pbo:.2f}: the best-looking settings stay above the median out of sample only in part; "
            "treat the ranking with caution"
        )
    return (
        f"PBO {pbo:.2f}: the best-looking settings stay above the median out of sample; the ranking holds up"
    )


@dataclass(frozen=True)
class DsrInputs:
    """The Deflated Sharpe Ratio's N and variance, from the same trials."""

    n_trials: int
    sharpe_variance: float


def dsr_inputs(sharpes: Sequence[float | None]) -> DsrInputs:
    """N = the trials that produced a (finite) Sharpe ratio; the variance (ddof 1) of those same Sharpe ratios.

    `sharpes` has one entry per trial tried, None for a trial that produced none (pruned, failed).
    """
    produced = [float(x) for x in sharpes if x is not None and math.isfinite(x)]
    if len(produced) < 2:
        raise ValueError(f"{len(produced)} trial(s) produced a Sharpe ratio: the DSR needs two or more")
    return DsrInputs(len(produced), float(np.var(produced, ddof=1)))


def dsr_reading(dsr: float | None, n_trials: int, selection_share: float | None) -> str:
    """The DSR in words: how much of the best trial's Sharpe the selection of `n_trials` explains."""
    if dsr is None:
        return "DSR undefined (the best trial's returns are too skewed for the test)"
    if selection_share is None:
        return f"DSR {dsr:.2f}: the best trial's Sharpe is not positive; there is nothing to deflate"
    share = f"; the best of {n_trials} trials with no skill would reach {selection_share:.0%} of this Sharpe"
    if dsr >= DSR_SIGNIFICANT:
        return f"DSR {dsr:.2f}: the best Sharpe survives the selection of {n_trials} trials{share}"
    if dsr < DSR_SELECTION:
        return f"DSR {dsr:.2f}: selection explains most of this Sharpe{share}"
    return f"DSR {dsr:.2f}: not significant once the selection of {n_trials} trials is counted{share}"
