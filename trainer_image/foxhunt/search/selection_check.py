"""`study.json`'s `selection`: the Deflated Sharpe Ratio of the best trial and the probability of backtest
overfitting over the trials' folds, each with its count of trials, its reading, or why it is undefined.

Which trials each counts. The DSR's N is every trial tried (complete, pruned, failed by its settings:
`study.is_finished`), because the best trial was chosen among all of them; its variance is that of the
complete trials' Sharpe ratios, the only trials with a stitched record. PBO counts the complete trials
only: CSCV needs every trial's result in every fold, and a pruned trial has none after the fold it was
stopped at; the trials left out are listed beside it (`left_out`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from foxhunt.evaluate.overfitting import dsr_inputs, dsr_reading, dsr_undefined_reason, overfitting_record
from foxhunt.evaluate.sharpe import deflated_sharpe_ratio, expected_max_sharpe
from foxhunt.search.study import best_trial, is_finished

DSR_RULE = (
    "N = every trial tried (complete, pruned, failed by its settings): the best was chosen among all of "
    "them; variance (ddof 1) of the complete trials' per-period Sharpe ratios, the only ones with a record"
)
PBO_RULE = (
    "complete trials only: CSCV needs every trial's result in every fold, and a pruned trial has none "
    "after the fold it was stopped at"
)


@dataclass(frozen=True)
class SelectionCheck:
    """The Deflated Sharpe Ratio of the best trial (None where undefined, with `reason`) and the probability
    of backtest overfitting over the trials' folds (`overfitting`), each with a plain reading."""

    dsr: float | None = None
    reason: str | None = None  # why there is no DSR (too few trials, a flat best trial, …)
    dsr_reading: str | None = None
    dsr_rule: str = DSR_RULE
    trial: int | None = None
    n_trials: int | None = None  # the DSR's N: every trial tried
    n_tried: int | None = None  # every finished trial: complete, pruned and failed ones
    n_with_sharpe: int | None = None  # the complete trials whose Sharpe ratios give the variance
    counted: dict[str, int] = field(default_factory=dict)  # the trials tried, by how they ended
    sharpe_per_period: float | None = None
    sharpe_variance: float | None = None
    expected_max_sharpe_per_period: float | None = None
    selection_share: float | None = None
    n_obs: int | None = None
    skew: float | None = None
    kurtosis: float | None = None
    overfitting: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """`study.json`'s `selection`: every figure (None where there is none), the reason when the DSR is undefined."""
        data = asdict(self)
        if data["reason"] is None:
            del data["reason"]
        return data


def _counted(trials: Sequence[FrozenTrial]) -> dict[str, int]:
    """The finished trials by how they ended: complete, pruned, failed (by their settings)."""
    finished = [t for t in trials if is_finished(t)]
    return {
        "complete": sum(t.state == TrialState.COMPLETE for t in finished),
        "pruned": sum(t.state == TrialState.PRUNED for t in finished),
        "failed": sum(t.state == TrialState.FAIL for t in finished),
    }


def selection_check(study: optuna.Study, trials: Sequence[FrozenTrial] | None = None) -> SelectionCheck:
    """The Deflated Sharpe Ratio of the best trial and the probability of backtest overfitting, with readings.

    DSR rule (`selection.dsr_inputs`): N is every trial tried, the variance that of the complete trials'
    per-period Sharpe ratios. `selection_share` is the Sharpe that the best of N trials with no skill
    would reach, as a share of the best trial's: the part that is selection. The DSR is undefined where the
    best trial's Sharpe is 0 (`selection.dsr_undefined_reason`). `overfitting`: `overfitting_check`.
    `trials`: the study's trials as the caller read them (default: read now).
    """
    trials = study.get_trials(deepcopy=False) if trials is None else trials
    counted = _counted(trials)
    n_tried = sum(counted.values())
    overfitting = overfitting_check(study, trials)
    best = best_trial(study, trials)
    sharpes = [t.user_attrs.get("sharpe") if t.state == TrialState.COMPLETE else None for t in trials]
    sharpes = [x for x, t in zip(sharpes, trials, strict=True) if is_finished(t)]
    try:
        inputs = dsr_inputs(sharpes)
    except ValueError:
        inputs = None
    known: dict[str, Any] = {"n_tried": n_tried, "counted": counted, "overfitting": overfitting}
    if best is None or "sharpe" not in best.user_attrs or inputs is None:
        reason = "needs two or more complete trials that report a Sharpe ratio"
        return SelectionCheck(reason=reason, dsr_reading=f"DSR undefined: {reason}", **known)
    attrs = best.user_attrs
    n_trials, variance = inputs.n_trials, inputs.sharpe_variance
    expected_max = expected_max_sharpe(n_trials, variance)
    sharpe = float(attrs["sharpe"])
    skew, kurtosis = float(attrs.get("skew", 0.0)), float(attrs.get("kurtosis", 3.0))
    figures: dict[str, Any] = dict(
        trial=best.number, n_trials=n_trials, n_with_sharpe=inputs.n_with_sharpe, sharpe_per_period=sharpe,
        sharpe_variance=variance, expected_max_sharpe_per_period=expected_max, n_obs=int(attrs["n_obs"]),
        skew=skew, kurtosis=kurtosis, **known,
    )  # fmt: skip
    flat = dsr_undefined_reason(sharpe, sharpes)
    if flat is not None:
        return SelectionCheck(reason=flat, dsr_reading=f"DSR undefined: {flat}", **figures)
    dsr = deflated_sharpe_ratio(sharpe, n_trials, variance, int(attrs["n_obs"]), skew, kurtosis)
    share = expected_max / sharpe if sharpe > 0 else None
    dsr_value = None if math.isnan(dsr) else dsr
    return SelectionCheck(
        dsr=dsr_value,
        reason=None if dsr_value is not None else "the best trial's returns are too skewed for the test",
        dsr_reading=dsr_reading(dsr_value, n_trials, share),
        selection_share=share,
        **figures,
    )


def overfitting_check(study: optuna.Study, trials: Sequence[FrozenTrial] | None = None) -> dict[str, Any]:
    """PBO by CSCV over the complete trials' per-fold net Sharpe ratios (what each fold reported), with the
    trials it counts and those it leaves out (`PBO_RULE`), or why there is none (`overfitting_record`);
    of `trials` where given, else of the study now."""
    trials = [t for t in (study.get_trials(deepcopy=False) if trials is None else trials) if is_finished(t)]
    complete = [t for t in trials if t.state == TrialState.COMPLETE and t.intermediate_values]
    left_out = {
        "pruned": [t.number for t in trials if t.state == TrialState.PRUNED],
        "failed": [t.number for t in trials if t.state == TrialState.FAIL],
    }
    counts = {"rule": PBO_RULE, "left_out": left_out}
    folds = sorted(set.intersection(*(set(t.intermediate_values) for t in complete))) if complete else []
    if len(complete) < 2:
        reason = f"needs two or more complete trials ({len(complete)} completed)"
        return {"pbo": None, "reason": reason, "trials": [t.number for t in complete], **counts}
    results = np.array([[t.intermediate_values[f] for t in complete] for f in folds], dtype=np.float64)
    return {**overfitting_record(results, folds, [t.number for t in complete]), **counts}
