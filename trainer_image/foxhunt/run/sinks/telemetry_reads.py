"""The figures a run tells its telemetry, read off its reports and evaluations.

`run/sinks/telemetry.py` takes plain numbers (`run/sinks/telemetry_figures.py`) and imports no report type;
what a fold report or an evaluation means in those numbers is said here, once.
"""

from __future__ import annotations

from foxhunt.evaluate.evaluation import MODEL, WindowEvaluation
from foxhunt.evaluate.reports import FoldReport
from foxhunt.run.sinks.telemetry_figures import FoldFigures, HoldoutFigures, PolicyFigures, StitchedFigures


def _model_figures(window: WindowEvaluation) -> PolicyFigures:
    """The model's figures after costs over a window."""
    net = window.policies[MODEL].net
    return PolicyFigures(net.sharpe, net.sharpe_se, net.log_return, net.max_drawdown, net.turnover)


def fold_figures(report: FoldReport) -> FoldFigures:
    """A fold report's figures for the telemetry."""
    window = report.evaluation
    best = window.best_baseline
    return FoldFigures(
        fold=report.fold,
        phases=dict(report.phases),
        fold_seconds=report.fold_seconds,
        epoch_seconds=tuple(report.epoch_seconds),
        samples_per_second=report.samples_per_second,
        final_loss=report.final_loss,
        train_rows=report.train_rows,
        val_rows=report.val_rows,
        difficulty_score=report.difficulty_score,
        val_first_bar=report.dates.val_first_bar,
        val_last_bar=report.dates.val_last_bar,
        model=_model_figures(window),
        best_baseline=best,
        best_baseline_sharpe=window.policies[best].net.sharpe,
    )


def stitched_figures(stitched: WindowEvaluation) -> StitchedFigures:
    """The stitched record's figures for the telemetry: the model's, and each baseline's Sharpe."""
    baselines = {name: e.net.sharpe for name, e in stitched.policies.items() if name != MODEL}
    return StitchedFigures(_model_figures(stitched), baselines)


def holdout_figures(holdout: dict) -> HoldoutFigures:
    """The held-out period's headline (`RunSummary.holdout`, foxhunt.run.holdout) for the telemetry."""
    low, high = holdout["net_sharpe_ci"]
    return HoldoutFigures(
        days=holdout["days"],
        net_sharpe=holdout["net_sharpe"],
        net_sharpe_ci_low=low,
        net_sharpe_ci_high=high,
        net_sharpe_se=holdout["net_sharpe_se"],
    )
