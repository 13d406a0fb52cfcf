"""What a run tells its telemetry (`run/sinks/telemetry.py`): plain numbers in small records.

The telemetry knows no report or evaluation type; the run reads these figures off its reports
(`run/sinks/telemetry_reads.py`) and hands them over.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class PolicyFigures:
    """A policy's figures over a validation window, after costs."""

    sharpe: float  # annualised
    sharpe_se: float  # Lo (2002), annualised
    log_return: float  # total log return
    max_drawdown: float
    turnover: float


@dataclass(frozen=True)
class FoldFigures:
    """A finished fold: its ranges, timings, training and the model's validation figures."""

    fold: int
    phases: Mapping[str, float]  # seconds per phase (config.PHASES)
    fold_seconds: float
    epoch_seconds: tuple[float, ...]  # one per training epoch
    samples_per_second: float
    final_loss: float
    train_rows: int
    val_rows: int
    difficulty_score: float
    val_first_bar: str  # ISO-8601 UTC
    val_last_bar: str
    model: PolicyFigures
    best_baseline: str  # the name of the fold's best baseline
    best_baseline_sharpe: float


@dataclass(frozen=True)
class StitchedFigures:
    """The folds' validation windows as one out-of-sample record: the model's figures, each baseline's Sharpe."""

    model: PolicyFigures
    baseline_sharpes: Mapping[str, float]  # baseline name → its Sharpe after costs


@dataclass(frozen=True)
class HoldoutFigures:
    """The held-out final period's headline (--holdout-days)."""

    days: float
    net_sharpe: float
    net_sharpe_ci_low: float  # the bootstrap interval of the Sharpe
    net_sharpe_ci_high: float
    net_sharpe_se: float  # Lo (2002)
