"""The typed reports: the JSON shape of fold_N/report.json and summary.json, read back unchanged."""

from __future__ import annotations

import json
import math

import pytest

from foxhunt.config import PHASES
from foxhunt.reports import (
    RUN_STATUSES,
    EpochStats,
    FoldDates,
    FoldReport,
    PolicyMetrics,
    RunSummary,
    Validation,
    fold_table,
)

# The keys readers of report.json relied on before the reports were typed; they must all stay.
FOLD_KEYS = {
    "fold",
    "train_start",
    "train_end",
    "val_start",
    "val_end",
    "difficulty_score",
    "train_rows",
    "val_rows",
    "phases",
    "fold_seconds",
    "epoch_seconds",
    "samples_per_second",
    "final_loss",
    "loss",
    "steps",
    "validation",
}
VALIDATION_KEYS = {
    "sharpe",
    "total_return",
    "max_drawdown",
    "turnover",
    "hit_rate",
    "buy_and_hold",
    "flat",
    "periods_per_year",
}
SUMMARY_KEYS = {
    "run_id",
    "model",
    "device",
    "version",
    "fxcache",
    "fxcache_checksum",
    "rows",
    "data_load_seconds",
    "epochs",
    "seed",
    "fold_config",
    "dqn_config",
    "graph_captures",
    "folds",
    "status",
    "run_seconds",
    "push_failures",
}


def metrics(sharpe: float) -> PolicyMetrics:
    return PolicyMetrics(sharpe, 0.01, 0.02, 3.0, 0.5, sharpe + 0.1, 0.011, 0.75)


def report(fold: int = 0, losses=(0.5, 0.25)) -> FoldReport:
    epochs = [
        EpochStats(
            i, loss, 0.5, 10, 0.1, 0.2 + i, 1000.0, q_mean=1.0, q_max=2.0, action_shares=[0.2, 0.3, 0.5]
        )
        for i, loss in enumerate(losses)
    ]
    return FoldReport(
        fold=fold,
        train_start=0,
        train_end=900,
        val_start=960,
        val_end=1200,
        difficulty_score=1.25,
        dates=FoldDates(
            "2024-01-01T00:00:00Z", "2024-01-01T14:59:00Z", "2024-01-01T16:00:00Z", "2024-01-01T19:59:00Z"
        ),
        phases={p: 0.001 * (i + 1) for i, p in enumerate(PHASES)},
        fold_seconds=1.5,
        samples_per_second=5e4,
        steps=20,
        epochs=epochs,
        validation=Validation(metrics(1.5), {"buy_and_hold": metrics(0.3), "flat": metrics(0.0)}, 525_960.0),
    )


def summary(**changes) -> RunSummary:
    fields = dict(
        run_id="r",
        model="dqn",
        device="cpu",
        version="0.1.0",
        fxcache="x.fxcache",
        fxcache_checksum="abc",
        rows=1200,
        epochs=2,
        seed=0,
        trials=0,
        fold_config={"train_days": 1.0},
        dqn_config={"lr": 3e-4},
        eval_config={"cost": 1e-4, "spread": 0.0},
        started_at="2024-01-02T00:00:00+00:00",
        folds=[report(0), report(1)],
    )
    return RunSummary(**{**fields, **changes})


def test_a_fold_report_keeps_every_key_of_the_old_json():
    data = report().to_dict()
    assert FOLD_KEYS <= set(data)
    assert VALIDATION_KEYS <= set(data["validation"])
    assert set(data["phases"]) == set(PHASES)


def test_derived_figures_in_the_json_agree_with_the_epochs():
    data = report(losses=(0.5, 0.25, 0.125)).to_dict()
    assert data["loss"] == [0.5, 0.25, 0.125] and data["final_loss"] == 0.125
    assert data["epoch_seconds"] == [pytest.approx(0.1 + 0.2 + i) for i in range(3)]
    assert (data["train_rows"], data["val_rows"]) == (900, 240)


def test_a_fold_without_epochs_has_a_nan_final_loss():
    assert math.isnan(report(losses=()).final_loss)


def test_a_fold_report_reads_back_equal_through_json():
    original = report()
    assert FoldReport.from_dict(json.loads(json.dumps(original.to_dict()))) == original


def test_validation_puts_the_model_at_the_top_and_each_baseline_under_its_name():
    data = report().validation.to_dict()
    assert data["sharpe"] == 1.5 and data["buy_and_hold"]["sharpe"] == 0.3 and data["flat"]["sharpe"] == 0.0
    assert Validation.from_dict(data).baselines.keys() == {"buy_and_hold", "flat"}


def test_a_summary_keeps_every_key_of_the_old_json_and_reads_back_equal():
    original = summary(precompute={"cache_hit": True}, error="ValueError: x", status="failed")
    data = json.loads(json.dumps(original.to_dict()))
    assert SUMMARY_KEYS <= set(data)
    assert data["error"] == "ValueError: x" and data["precompute"] == {"cache_hit": True}
    assert RunSummary.from_dict(data) == original


def test_a_summary_leaves_out_error_and_precompute_when_unset():
    data = summary().to_dict()
    assert "error" not in data and "precompute" not in data


@pytest.mark.parametrize("status", RUN_STATUSES)
def test_every_run_status_is_accepted(status):
    assert summary(status=status).status == status


def test_an_unknown_run_status_is_refused():
    with pytest.raises(ValueError, match="cancelled"):
        summary(status="cancelled")


def test_the_fold_table_shows_each_folds_dates_rows_and_sharpe():
    lines = fold_table(summary()).splitlines()
    assert len(lines) == 4 and lines[0].split()[:3] == ["fold", "validation", "from"]
    row = lines[2].split()
    assert row[:4] == ["0", "2024-01-01T16:00", "900", "240"]
    assert row[-2:] == ["1.50", "0.30"]
