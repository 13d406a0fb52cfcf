"""Pipeline runs pushed to a real Pushgateway, scraped by a real Prometheus: the figures there equal the run's reports."""

from __future__ import annotations

import time

import pytest
from support.prom_services import finish_pipeline, start_pipeline, unique_run_id

pytestmark = [pytest.mark.slow, pytest.mark.services]


def prometheus_values(prometheus, promql: str, count: int) -> dict[tuple, float]:
    """{(fold, phase): value} of a query once Prometheus has scraped `count` series of it."""
    result = prometheus.wait_for(promql, count)
    return {(r["metric"].get("fold"), r["metric"].get("phase")): float(r["value"][1]) for r in result}


def assert_phases_in_prometheus_equal_the_report(prometheus, run) -> None:
    folds = run.summary["folds"]
    expected = {(str(r["fold"]), phase): seconds for r in folds for phase, seconds in r["phases"].items()}
    got = prometheus_values(
        prometheus, f'foxhunt_fold_phase_seconds{{job="foxhunt-train", run_id="{run.run_id}"}}', len(expected)
    )
    assert got == expected


def test_every_phase_of_every_fold_reaches_prometheus_equal_to_the_run_report(prometheus, pipeline_runs):
    run = pipeline_runs[0]
    assert len(run.summary["folds"]) == 2
    assert_phases_in_prometheus_equal_the_report(prometheus, run)


def test_validation_sharpe_in_prometheus_equals_the_run_report(prometheus, pipeline_runs):
    run = pipeline_runs[0]
    expected = {
        (str(r["fold"]), None): r["evaluation"]["policies"]["model"]["net"]["sharpe"]
        for r in run.summary["folds"]
    }
    got = prometheus_values(
        prometheus, f'foxhunt_fold_validation_sharpe{{run_id="{run.run_id}"}}', len(expected)
    )
    assert got == expected


def test_the_stitched_sharpe_and_fold_dates_in_prometheus_equal_the_run_report(prometheus, pipeline_runs):
    run = pipeline_runs[0]
    stitched = prometheus.wait_for(f'foxhunt_stitched_validation_sharpe{{run_id="{run.run_id}"}}', 1)
    assert float(stitched[0]["value"][1]) == run.summary["stitched"]["policies"]["model"]["net"]["sharpe"]
    folds = run.summary["folds"]
    info = prometheus.wait_for(f'foxhunt_fold_info{{run_id="{run.run_id}"}}', len(folds))
    got = {r["metric"]["fold"]: (r["metric"]["val_start"], r["metric"]["val_end"]) for r in info}
    assert got == {str(f["fold"]): (f["dates"]["val_first_bar"], f["dates"]["val_last_bar"]) for f in folds}


def test_the_held_out_headline_in_prometheus_equals_the_run_report(prometheus, pipeline_runs):
    run = pipeline_runs[0]
    holdout = run.summary["holdout"]
    expected = {
        "foxhunt_holdout_net_sharpe": holdout["net_sharpe"],
        "foxhunt_holdout_net_sharpe_ci_low": holdout["net_sharpe_ci"][0],
        "foxhunt_holdout_net_sharpe_ci_high": holdout["net_sharpe_ci"][1],
        "foxhunt_holdout_net_sharpe_se": holdout["net_sharpe_se"],
    }
    for name, figure in expected.items():
        (series,) = prometheus.wait_for(f'{name}{{run_id="{run.run_id}"}}', 1)
        assert (series["metric"]["days"], float(series["value"][1])) == (f"{holdout['days']:g}", figure), name


def test_the_console_table_ends_with_the_held_out_row_and_names_its_files(pipeline_runs):
    run = pipeline_runs[0]
    holdout = run.summary["holdout"]
    lines = run.output.splitlines()
    (row,) = [line.split() for line in lines if line.split()[:1] == ["held-out"]]
    outputs = next(line for line in lines if line.startswith("outputs: "))

    assert row[1:3] == [holdout["start"][:16], holdout["end"][:16]]
    assert row[6:9] == [f"{holdout['net_sharpe']:.2f}", "±", f"{holdout['net_sharpe_se']:.2f}"]
    assert row[10:] == [holdout["best_baseline"], f"{holdout['best_baseline_sharpe']:.2f}"]
    assert "holdout.json (the headline), holdout.png, holdout/" in outputs


def test_two_concurrent_runs_are_both_fully_present_in_prometheus(prometheus, pipeline_runs):
    for run in pipeline_runs:
        assert_phases_in_prometheus_equal_the_report(prometheus, run)
        finished = prometheus.wait_for(
            f'foxhunt_run_finished{{run_id="{run.run_id}", status="succeeded"}}', 1
        )
        assert float(finished[0]["value"][1]) == 1


def test_a_run_whose_pushgateway_dies_mid_run_completes_with_the_same_results(
    own_pushgateway, pipeline_runs, tmp_path
):
    reference = pipeline_runs[0].summary
    started = start_pipeline(tmp_path, unique_run_id("e2e-killed"), own_pushgateway.url)
    deadline = time.monotonic() + 300
    # Kill the gateway once the first fold has been pushed, so the rest of the run pushes into nothing.
    while "fold 0 done" not in started.output():
        assert started.process.poll() is None, started.output()
        assert time.monotonic() < deadline, started.output()
        time.sleep(0.1)
    own_pushgateway.kill()
    summary = finish_pipeline(started).summary
    assert summary["push_failures"] > 0
    assert reference["push_failures"] == 0
    assert [r["evaluation"] for r in summary["folds"]] == [r["evaluation"] for r in reference["folds"]]
