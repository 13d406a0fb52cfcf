"""The figures of one scored record: `Metrics` per cost level, `Evaluation` before and after costs, and
the `SeriesFigures` of one P&L series they are built from.

Conventions (units, annualisation, costs) are in `foxhunt.evaluate.evaluation`, which computes them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metrics:
    """One record's figures at one cost level; Sharpe figures annualised unless named per period."""

    n_bars: int
    periods_per_year: float
    sharpe: float
    sharpe_per_period: float
    sharpe_se: float  # Lo (2002), i.i.d. returns
    sharpe_se_hac: float  # Lo (2002) GMM with Newey–West weights: autocorrelation and fat tails
    sharpe_ci_low: float  # circular block bootstrap, percentile interval at Scoring.level
    sharpe_ci_high: float
    psr_zero: float  # P(true Sharpe > 0)
    psr_benchmark: float  # P(true Sharpe > buy-and-hold's Sharpe on the same bars)
    benchmark_sharpe: float
    skewness: float
    kurtosis: float  # not excess: 3 for normal returns
    log_return: float  # sum of per-bar log P&L
    total_return: float  # exp(log_return) − 1
    annual_return: float  # exp(mean log P&L × periods per year) − 1
    max_drawdown: float  # largest fall from a peak of wealth, as a fraction of the peak
    turnover: float  # total |Δposition| over the record
    turnover_per_year: float
    exposure: float  # mean |position|
    hit_rate: float  # share of bars in the market with positive P&L


@dataclass(frozen=True)
class Evaluation:
    """A record's metrics before and after costs."""

    gross: Metrics
    net: Metrics


@dataclass(frozen=True)
class SeriesFigures:
    """One P&L series' figures before annualisation (`evaluation.record_metrics` annualises them)."""

    sharpe: float  # per period, population std
    skewness: float
    kurtosis: float  # not excess
    hac_error: float  # `sharpe.hac_standard_error`, per period
    constant: bool  # every bar's P&L the same (a flat policy): Sharpe 0 with no uncertainty
    log_return: float  # sum of the per-bar log P&L
    max_drawdown: float  # largest fall from a peak of wealth, as a fraction of the peak
    hit_rate: float  # share of the bars in the market with positive P&L
