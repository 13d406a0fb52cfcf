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

When PBO is not read (`overfitting_record`): below MIN_PBO_FOLDS folds CSCV has two groups, whose two
splits mirror each other, so PBO can only be 0, ½ or 1 (over trials with no skill it reads "selection
explains" about 7 times in 10 and "holds up" 3 in 10: a coin, not a measurement); and when every trial has
the same per-fold record over the folds used (all flat, or tied) there is no ranking to test, so PBO is
undefined, not 1. Otherwise the record names the folds used, those left out and the number of splits.

The DSR rule (`dsr_inputs`): N is the number of trials *tried* (complete, pruned and failed by their
settings: each was a draw the selection chose among, and a search that pruned 40 of 50 trials still
chose the best of 50), and the variance is the sample variance (ddof 1) of the per-period Sharpe ratios of
the trials that produced one (a complete walk-forward: a stitched out-of-sample record); a pruned trial has
none. The DSR is undefined where the best trial's Sharpe is 0 (a flat record: nothing to deflate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

MAX_GROUPS = 16  # C(16, 8) = 12,870 splits: the most CSCV evaluates
OVERFIT_AT = 0.5  # PBO at or above this: the search's choice is no better than the median trial's
HOLDS_UP_BELOW = 0.2  # PBO below this: the choice holds up out of sample
DSR_SIGNIFICANT = 0.95  # DSR at or above this: the best Sharpe survives the selection
DSR_SELECTION = 0.5  # DSR below this: selection explains most of the best Sharpe
# Fewest folds PBO is read from: 4 folds give 4 groups and 6 splits; 2–3 folds give 2 groups, 2 mirror splits.
MIN_PBO_FOLDS = 4


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
    logits = split_logits(group_sums)
    lam = np.asarray(logits)
    pbo = float(np.mean(lam <= 0.0))
    return Overfitting(pbo, s, len(logits), size * s, n_trials, logits)


def split_logits(group_sums: np.ndarray) -> list[float]:
    """λ of every CSCV split of `group_sums` (rows: groups, columns: trials), in `itertools.combinations`'
    order: the logit of the relative out-of-sample rank of the trial that is best in sample.

    All splits at once (a search writes its study after every round that ends a trial, and at 16 groups a
    split-by-split loop took 0.2 s a call). Each split's in-sample sum adds its groups in their order, as
    `sum(axis=0)` over the chosen rows does, so the ranks, ties included, are those of the loop over
    splits."""
    s, n_trials = group_sums.shape
    chosen = np.array(list(combinations(range(s), s // 2)), dtype=np.intp)  # splits × S/2
    in_sample = group_sums[chosen[:, 0]].copy()
    for column in range(1, s // 2):
        in_sample += group_sums[chosen[:, column]]
    out_sample = group_sums.sum(axis=0) - in_sample
    value = out_sample[np.arange(len(chosen)), np.argmax(in_sample, axis=1)][:, None]
    rank = 1.0 + np.sum(out_sample < value, axis=1) + 0.5 * (np.sum(out_sample == value, axis=1) - 1)
    omega = rank / (n_trials + 1.0)
    return [math.log(w / (1.0 - w)) for w in omega.tolist()]


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


def _span(folds: Sequence[int]) -> str:
    """Fold numbers in words: "folds 1–4", "folds 0, 2, 5", "fold 3"."""
    if len(folds) == 1:
        return f"fold {folds[0]}"
    if list(folds) == list(range(folds[0], folds[-1] + 1)):
        return f"folds {folds[0]}–{folds[-1]}"
    return "folds " + ", ".join(map(str, folds))


def same_record_reason(results: np.ndarray) -> str | None:
    """Why PBO is undefined over `results` (rows: folds, columns: trials), or None: every trial has the
    same per-fold record (all flat, or tied), so no trial ranks above another."""
    m = np.asarray(results, dtype=np.float64)
    if not np.all(m == m[:, :1]):
        return None
    if not np.any(m):
        return "every trial was flat in every fold (net Sharpe 0): there is no ranking to test, so PBO is undefined"
    return "every trial has the same per-fold record (tied): there is no ranking to test, so PBO is undefined"


def overfitting_record(results: np.ndarray, folds: Sequence[int], trials: Sequence[int]) -> dict[str, Any]:
    """PBO by CSCV over `results` (one row per fold number in `folds`, one column per trial number in
    `trials`) with its reading, the folds used and left out and the splits; or `pbo` None and the reason
    (fewer than MIN_PBO_FOLDS folds, a result not finite, every trial's record the same)."""
    m = np.asarray(results, dtype=np.float64)
    base: dict[str, Any] = {
        "pbo": None,
        "folds": list(folds),
        "trials": list(trials),
        "n_trials": len(trials),
    }
    if len(folds) < MIN_PBO_FOLDS:
        reason = (
            f"{len(folds)} fold(s): PBO is read from {MIN_PBO_FOLDS} or more; with fewer, CSCV has 2 groups whose "
            "2 splits mirror each other, so PBO can only be 0, 0.5 or 1 and trials with no skill read "
            '"selection explains" about 7 times in 10'
        )
        return {**base, "reason": reason, "min_folds": MIN_PBO_FOLDS}
    if not np.all(np.isfinite(m)):
        return {**base, "reason": "a fold's result is not finite"}
    found = probability_of_overfitting(m)
    left_out = list(folds[: len(folds) - found.folds_used])
    used = list(folds[len(folds) - found.folds_used :])
    figures = {"folds_used": used, "folds_left_out": left_out, "groups": found.groups, "splits": found.splits}
    tied = same_record_reason(m[len(left_out) :])
    if tied is not None:
        return {**base, **figures, "reason": tied}
    scope = f"over {len(trials)} trials, {_span(used)}"
    if left_out:
        scope += f" ({_span(left_out)} left out: {len(folds)} folds do not fill {found.groups} groups evenly)"
    scope += f"; {found.splits} splits of {found.groups} groups, so PBO moves in steps of 1/{found.splits}"
    return {
        **base,
        **figures,
        "pbo": found.pbo,
        "reading": f"{pbo_reading(found.pbo)} ({scope})",
        "logit_median": float(np.median(found.logits)),
    }


@dataclass(frozen=True)
class DsrInputs:
    """The Deflated Sharpe Ratio's N (the trials tried) and variance (of the trials that produced a Sharpe)."""

    n_trials: int  # N: every trial tried, pruned and failed ones included
    n_with_sharpe: int  # the trials whose Sharpe ratios give the variance
    sharpe_variance: float


def dsr_inputs(sharpes: Sequence[float | None]) -> DsrInputs:
    """N = every trial tried (one entry each); the variance (ddof 1) of the (finite) Sharpe ratios among them.

    `sharpes` has one entry per trial tried, None for a trial that produced none (pruned, failed).
    """
    produced = [float(x) for x in sharpes if x is not None and math.isfinite(x)]
    if len(produced) < 2:
        raise ValueError(f"{len(produced)} trial(s) produced a Sharpe ratio: the DSR needs two or more")
    return DsrInputs(len(sharpes), len(produced), float(np.var(produced, ddof=1)))


def dsr_undefined_reason(best_sharpe: float, sharpes: Sequence[float | None]) -> str | None:
    """Why the DSR is undefined, or None: the best trial's Sharpe is 0 (every trial flat, or the best one)."""
    produced = [x for x in sharpes if x is not None and math.isfinite(x)]
    if produced and not any(produced):
        return "every trial that completed was flat (Sharpe 0): there is no Sharpe to deflate"
    if best_sharpe == 0:
        return "the best trial's Sharpe is 0 (a flat record): there is nothing to deflate"
    return None


def dsr_reading(dsr: float | None, n_trials: int, selection_share: float | None) -> str:
    """The DSR in words: how much of the best trial's Sharpe the selection of `n_trials` (tried) explains."""
    if dsr is None:
        return "DSR undefined (the best trial's returns are too skewed for the test)"
    if selection_share is None:
        return f"DSR {dsr:.2f}: the best trial's Sharpe is negative; there is nothing to deflate"
    share = f"; the best of {n_trials} trials tried with no skill would reach {selection_share:.0%} of this Sharpe"
    if dsr >= DSR_SIGNIFICANT:
        return f"DSR {dsr:.2f}: the best Sharpe survives the selection of {n_trials} trials{share}"
    if dsr < DSR_SELECTION:
        return f"DSR {dsr:.2f}: selection explains most of this Sharpe{share}"
    return f"DSR {dsr:.2f}: not significant once the selection of {n_trials} trials is counted{share}"
