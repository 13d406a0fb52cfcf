"""The typed reports: the JSON shape of fold_N/report.json and summary.json, read back unchanged."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from support import strict_json
from support.evaluation_cases import window

from foxhunt.config import PHASES
from foxhunt.evaluate.evaluation import MODEL
from foxhunt.evaluate.reports import (
    RUN_STATUSES,
    FoldDates,
    FoldReport,
    RunSummary,
    fold_table,
    window_from_dict,
    window_to_dict,
)
from foxhunt.train.epoch_figures import EpochFigures

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
    "evaluation",
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


def report(fold: int = 0, losses=(0.5, 0.25)) -> FoldReport:
    epochs = [
        EpochFigures(
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
        evaluation=window(fold),
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


def test_a_fold_report_carries_each_figure_once():
    data = report().to_dict()
    assert "validation" not in data  # the earlier short form repeated the evaluation's net figures
    assert data["evaluation"]["policies"][MODEL]["net"]["sharpe"] == window(0).policies[MODEL].net.sharpe


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


def test_a_window_evaluation_reads_back_equal_through_json():
    original = window(2)
    data = json.loads(json.dumps(window_to_dict(original)))
    assert window_from_dict(data) == original
    assert (data["start"], data["end"]) == ("2024-01-01T00:00:00Z", "2024-01-01T03:59:00Z")


def test_a_fold_report_with_its_evaluation_and_warnings_reads_back_equal():
    original = dataclasses.replace(report(), evaluation=window(0, seed=4), warnings=["fold 0: collapsed"])
    assert FoldReport.from_dict(json.loads(json.dumps(original.to_dict()))) == original


def test_a_figure_that_is_not_finite_is_written_as_null_and_read_back_as_nan():
    from foxhunt import strict_json as writer

    original = window(0, seed=4)
    net = dataclasses.replace(original.policies[MODEL].net, sharpe_ci_low=math.nan, sharpe_ci_high=math.inf)
    nan_window = dataclasses.replace(
        original,
        policies={**original.policies, MODEL: dataclasses.replace(original.policies[MODEL], net=net)},
    )

    text = writer.dumps(window_to_dict(nan_window))
    read = window_from_dict(strict_json.loads(text))

    assert strict_json.loads(text)["policies"][MODEL]["net"]["sharpe_ci_low"] is None
    assert math.isnan(read.policies[MODEL].net.sharpe_ci_low) and math.isnan(
        read.policies[MODEL].net.sharpe_ci_high
    )
    assert read.policies[MODEL].net.sharpe == original.policies[MODEL].net.sharpe


def test_a_summary_lists_every_folds_warnings_and_its_stitched_record():
    folds = [dataclasses.replace(report(k), warnings=[f"fold {k}: w"]) for k in range(2)]
    data = summary(folds=folds, stitched=window(-1)).to_dict()
    assert data["warnings"] == ["fold 0: w", "fold 1: w"]
    assert data["stitched"]["n_bars"] == 240
    assert RunSummary.from_dict(json.loads(json.dumps(data))) == summary(folds=folds, stitched=window(-1))


def table_rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()[2:]]


def test_the_fold_table_shows_each_folds_dates_and_figures():
    w = window(0)
    folds = [dataclasses.replace(report(0), evaluation=w), report(1)]
    lines = fold_table(summary(folds=folds)).splitlines()
    assert len(lines) == 4 and lines[0].split()[:3] == ["fold", "validation", "from"]
    net = w.policies[MODEL].net
    row = lines[2].split()
    assert row[:4] == ["0", "2024-01-01T00:00", "2024-01-01T03:59", "240"]
    assert row[4:10] == [
        f"{net.total_return:+.2%}",
        f"{net.max_drawdown:.2%}",
        f"{net.sharpe:.2f}",
        "±",
        f"{net.sharpe_se:.2f}",
        f"{w.policies['buy_and_hold'].net.sharpe:.2f}",
    ]
    assert row[10:] == [w.best_baseline, f"{w.policies[w.best_baseline].net.sharpe:.2f}"]


def test_a_folds_row_is_its_evaluation_with_the_standard_error():
    row = fold_table(summary()).splitlines()[2].split()
    model = window(0).policies[MODEL].net
    assert row[:4] == ["0", "2024-01-01T00:00", "2024-01-01T03:59", "240"]
    assert row[6:9] == [f"{model.sharpe:.2f}", "±", f"{model.sharpe_se:.2f}"]


def test_the_table_ends_with_the_stitched_row():
    stitched = window(-1, n=480)
    lines = fold_table(summary(stitched=stitched)).splitlines()
    assert len(lines) == 5
    assert lines[-1].split()[:4] == ["stitched", "2024-01-01T00:00", "2024-01-01T07:59", "480"]
    assert lines[-1].split()[6] == f"{stitched.policies[MODEL].net.sharpe:.2f}"


def test_the_table_ends_with_the_held_out_headlines_row():
    holdout = {
        "start": "2024-01-05T00:00:00+00:00",
        "end": "2024-01-06T23:59:00+00:00",
        "n_bars": 2880,
        "net_return": 0.0123,
        "max_drawdown": 0.0456,
        "net_sharpe": 1.75,
        "net_sharpe_se": 0.625,
        "buy_and_hold_sharpe": -0.25,
        "best_baseline": "momentum",
        "best_baseline_sharpe": 0.5,
    }
    lines = fold_table(summary(stitched=window(-1, n=480), holdout=holdout)).splitlines()

    assert lines[-2].split()[0] == "stitched"
    assert lines[-1].split() == [
        "held-out", "2024-01-05T00:00", "2024-01-06T23:59", "2,880", "+1.23%", "4.56%",
        "1.75", "±", "0.62", "-0.25", "momentum", "0.50",
    ]  # fmt: skip


def test_a_run_without_a_held_out_period_has_no_held_out_row():
    assert [line.split()[0] for line in fold_table(summary()).splitlines()[2:]] == ["0", "1"]


def test_json_bytes_writes_strict_json_with_undefined_figures_as_null():
    import numpy as np

    from foxhunt.strict_json import json_bytes

    value = {
        "ci": [math.nan, math.inf],
        "tail": -math.inf,
        "n": np.int64(3),
        "x": np.float32(0.5),
        "ok": True,
    }
    text = json_bytes(value).decode()
    assert "NaN" not in text and "Infinity" not in text
    assert strict_json.loads(text) == {"ci": [None, None], "tail": None, "n": 3, "x": 0.5, "ok": True}


def test_a_fold_report_with_undefined_figures_is_strict_json_and_reads_back_nan():
    from foxhunt.strict_json import json_bytes

    w = window(0)
    net = dataclasses.replace(w.policies[MODEL].net, sharpe_ci_low=math.nan, sharpe_ci_high=math.nan)
    policies = {**w.policies, MODEL: dataclasses.replace(w.policies[MODEL], net=net)}
    original = dataclasses.replace(report(), evaluation=dataclasses.replace(w, policies=policies))

    data = strict_json.loads(json_bytes(original.to_dict()))
    back = FoldReport.from_dict(data).evaluation.policies[MODEL].net
    assert math.isnan(back.sharpe_ci_low) and back.sharpe == net.sharpe
