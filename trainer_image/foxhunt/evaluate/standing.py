"""Where the model stands against one baseline: the figures `evaluation.compare` gives per baseline."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Standing:
    """Where the model stands against one baseline on the same bars, after costs (annualised).

    The verdict is the paired test's (`foxhunt.evaluate.paired`): the bootstrap interval of the Sharpe
    difference, both streams resampled with the same blocks, lies above 0 ("above"), below 0
    ("below"), or holds 0 ("no clear difference"); "not tested" without bootstrap resamples.
    Alpha, beta and information ratio are the model's against this baseline's net P&L.
    """

    baseline: str
    model_sharpe: float
    baseline_sharpe: float
    difference: float  # model − baseline
    difference_ci_low: float  # paired circular block bootstrap, percentile interval at Scoring.level
    difference_ci_high: float
    p_value: float  # two-sided, centred bootstrap
    alpha: float  # per year, log-return units
    beta: float
    information_ratio: float
    verdict: str
