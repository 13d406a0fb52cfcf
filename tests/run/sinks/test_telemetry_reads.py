"""Specification of foxhunt.run.sinks.telemetry_reads: which figure of a report the telemetry is told, and that
the telemetry itself knows no report or evaluation type."""

from __future__ import annotations

import ast
from pathlib import Path

from support.evaluation_cases import window
from support.telemetry_cases import fold_report

from foxhunt.evaluate.evaluation import MODEL
from foxhunt.run.sinks.telemetry_reads import fold_figures, holdout_figures, stitched_figures

PACKAGE = Path(__file__).resolve().parents[3] / "trainer_image" / "foxhunt"


def test_a_folds_figures_are_the_models_net_figures_not_the_gross_ones():
    report = fold_report(1)
    net, gross = report.evaluation.policies[MODEL].net, report.evaluation.policies[MODEL].gross
    model = fold_figures(report).model
    assert (model.sharpe, model.sharpe_se, model.log_return, model.max_drawdown, model.turnover) == (
        net.sharpe,
        net.sharpe_se,
        net.log_return,
        net.max_drawdown,
        net.turnover,
    )
    assert model.log_return != gross.log_return  # costs were paid, so a mix-up would show


def test_a_folds_best_baseline_is_named_with_its_own_net_sharpe():
    report = fold_report(2)
    figures = fold_figures(report)
    best = report.evaluation.best_baseline
    assert (figures.best_baseline, figures.best_baseline_sharpe) == (
        best,
        report.evaluation.policies[best].net.sharpe,
    )


def test_a_folds_timings_rows_and_dates_come_from_its_report():
    report = fold_report(1)
    figures = fold_figures(report)
    assert figures.epoch_seconds == tuple(report.epoch_seconds) and figures.final_loss == report.final_loss
    assert (figures.train_rows, figures.val_rows) == (report.train_rows, report.val_rows)
    assert (figures.val_first_bar, figures.val_last_bar) == (
        report.dates.val_first_bar,
        report.dates.val_last_bar,
    )


def test_the_stitched_baselines_are_every_policy_but_the_model():
    stitched = window(-1, n=600, seed=6)
    figures = stitched_figures(stitched)
    assert figures.baseline_sharpes == {"buy_and_hold": stitched.policies["buy_and_hold"].net.sharpe,
                                        "flat": stitched.policies["flat"].net.sharpe}  # fmt: skip
    assert figures.model.sharpe == stitched.policies[MODEL].net.sharpe


def test_the_holdout_interval_is_read_low_then_high():
    figures = holdout_figures({"days": 7.5, "net_sharpe": 1.25, "net_sharpe_ci": [-0.375, 2.875],
                               "net_sharpe_se": 0.8125})  # fmt: skip
    assert (figures.net_sharpe_ci_low, figures.net_sharpe_ci_high) == (-0.375, 2.875)
    assert (figures.days, figures.net_sharpe, figures.net_sharpe_se) == (7.5, 1.25, 0.8125)


def test_the_telemetry_imports_no_report_or_evaluation_module():
    for name in ("telemetry.py", "telemetry_figures.py"):
        tree = ast.parse((PACKAGE / "run" / "sinks" / name).read_text())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert [m for m in imported if m.startswith(("foxhunt.evaluate", "foxhunt.train"))] == [], name
