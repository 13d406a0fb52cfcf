"""The held-out final period's headline on a real Pushgateway: its gauges, and none for a run without one."""

from __future__ import annotations

import pytest
from support.prom_services import pushed_samples, unique_run_id
from support.telemetry_cases import new_metrics, one_run, value

from foxhunt.run.sinks.telemetry_reads import holdout_figures

pytestmark = pytest.mark.services

# A `RunSummary.holdout` record's figures (foxhunt.run.holdout), each distinct so a swap shows.
HOLDOUT = {
    "days": 7.5,
    "net_sharpe": 1.25,
    "net_sharpe_ci": [-0.375, 2.875],
    "net_sharpe_se": 0.8125,
    "net_return": 0.0125,
}


def test_the_headline_is_pushed_with_its_interval_labelled_by_the_periods_days(pushgateway):
    run_id = unique_run_id("holdout")
    metrics = new_metrics(run_id, pushgateway)
    metrics.holdout_scored(holdout_figures(HOLDOUT))

    samples = pushed_samples(pushgateway, run_id)
    assert value(samples, "foxhunt_holdout_net_sharpe", days="7.5") == 1.25
    assert value(samples, "foxhunt_holdout_net_sharpe_ci_low", days="7.5") == -0.375
    assert value(samples, "foxhunt_holdout_net_sharpe_ci_high", days="7.5") == 2.875
    assert value(samples, "foxhunt_holdout_net_sharpe_se", days="7.5") == 0.8125


def test_a_run_without_a_held_out_period_pushes_no_headline(pushgateway):
    run_id = unique_run_id("no-holdout")
    one_run(new_metrics(run_id, pushgateway))

    samples = pushed_samples(pushgateway, run_id)
    assert value(samples, "foxhunt_run_finished", status="succeeded") == 1
    assert [name for name, _ in samples if name.startswith("foxhunt_holdout")] == []
