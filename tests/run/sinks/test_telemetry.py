"""RunMetrics against a real Pushgateway on 127.0.0.1: what a run pushes, and how a failing gateway is survived."""

from __future__ import annotations

import dataclasses
import logging
import re
import socket
import threading
import time
import urllib.request

import pytest
from support.evaluation_cases import window
from support.prom_services import free_port, pushed_samples, unique_run_id
from support.telemetry_cases import (
    MARGIN_S,
    TIMEOUT_S,
    dead_url,
    fold_report,
    new_metrics,
    one_run,
    value,
)

import foxhunt
from foxhunt.evaluate.evaluation import MODEL
from foxhunt.run.sinks.pushgateway import live_run
from foxhunt.run.sinks.telemetry import PHASES
from foxhunt.run.sinks.telemetry_reads import fold_figures, stitched_figures

pytestmark = pytest.mark.services


def test_every_phase_of_every_fold_is_pushed_with_the_reports_seconds(pushgateway):
    run_id = unique_run_id("phases")
    one_run(new_metrics(run_id, pushgateway))
    samples = pushed_samples(pushgateway, run_id)
    for fold in range(2):
        for phase in PHASES:
            expected = fold_report(fold).phases[phase]
            assert value(samples, "foxhunt_fold_phase_seconds", fold=str(fold), phase=phase) == expected


def test_fold_gauges_equal_the_report(pushgateway):
    run_id = unique_run_id("fold")
    one_run(new_metrics(run_id, pushgateway))
    samples = pushed_samples(pushgateway, run_id)
    r = fold_report(1)
    epochs = r.epoch_seconds
    expected = {
        "foxhunt_fold_seconds": r.fold_seconds,
        "foxhunt_fold_epoch_seconds": sum(epochs) / len(epochs),
        "foxhunt_fold_last_epoch_seconds": epochs[-1],
        "foxhunt_fold_epochs": len(epochs),
        "foxhunt_fold_samples_per_second": r.samples_per_second,
        "foxhunt_fold_final_loss": r.final_loss,
        "foxhunt_fold_train_rows": r.train_rows,
        "foxhunt_fold_validation_rows": r.val_rows,
        "foxhunt_fold_difficulty_score": r.difficulty_score,
        "foxhunt_fold_validation_sharpe": r.evaluation.policies[MODEL].net.sharpe,
        "foxhunt_fold_validation_return": r.evaluation.policies[MODEL].net.log_return,
        "foxhunt_fold_validation_max_drawdown": r.evaluation.policies[MODEL].net.max_drawdown,
        "foxhunt_fold_validation_turnover": r.evaluation.policies[MODEL].net.turnover,
    }
    assert {name: value(samples, name, fold="1") for name in expected} == expected


def test_a_fold_without_epochs_pushes_zero_epochs_and_zero_epoch_seconds():
    m = new_metrics(unique_run_id("no-epochs"), None)
    m.fold_finished(dataclasses.replace(fold_figures(fold_report(0)), epoch_seconds=()))
    for name in ("foxhunt_fold_epochs", "foxhunt_fold_epoch_seconds", "foxhunt_fold_last_epoch_seconds"):
        assert m.registry.get_sample_value(name, {"fold": "0", "instrument": "", "trial": ""}) == 0, name


def test_a_folds_dates_standard_error_and_best_baseline_are_pushed(pushgateway):
    run_id = unique_run_id("evaluated")
    evaluated = dataclasses.replace(fold_report(2), evaluation=window(2, seed=5))
    new_metrics(run_id, pushgateway).fold_finished(fold_figures(evaluated))
    samples = pushed_samples(pushgateway, run_id)
    dates, best = evaluated.dates, evaluated.evaluation.best_baseline
    net = evaluated.evaluation.policies
    assert (
        value(
            samples, "foxhunt_fold_info", fold="2", val_start=dates.val_first_bar, val_end=dates.val_last_bar
        )
        == 1
    )
    assert value(samples, "foxhunt_fold_validation_sharpe_se", fold="2") == net[MODEL].net.sharpe_se
    assert (
        value(samples, "foxhunt_fold_best_baseline_sharpe", fold="2", baseline=best) == net[best].net.sharpe
    )
    assert [k for k in samples if k[0] == "foxhunt_fold_best_baseline_sharpe"] == [
        ("foxhunt_fold_best_baseline_sharpe", frozenset({("fold", "2"), ("baseline", best)}))
    ]


def test_the_stitched_record_is_pushed_with_every_baseline(pushgateway):
    run_id = unique_run_id("stitched")
    stitched = window(-1, n=600, seed=6)
    new_metrics(run_id, pushgateway).stitched_scored(stitched_figures(stitched))
    samples = pushed_samples(pushgateway, run_id)
    model = stitched.policies[MODEL].net
    assert value(samples, "foxhunt_stitched_validation_sharpe") == model.sharpe
    assert value(samples, "foxhunt_stitched_validation_sharpe_se") == model.sharpe_se
    assert value(samples, "foxhunt_stitched_return") == model.log_return
    assert value(samples, "foxhunt_stitched_max_drawdown") == model.max_drawdown
    for name in ("buy_and_hold", "flat"):
        assert (
            value(samples, "foxhunt_stitched_baseline_sharpe", baseline=name)
            == stitched.policies[name].net.sharpe
        )


def test_run_level_gauges_and_counters_are_pushed(pushgateway):
    run_id = unique_run_id("run")
    before = time.time()
    one_run(new_metrics(run_id, pushgateway))
    samples = pushed_samples(pushgateway, run_id)
    assert value(samples, "foxhunt_data_load_seconds") == 1.25
    assert value(samples, "foxhunt_data_rows") == 60_000
    assert value(samples, "foxhunt_folds_completed_total") == 2
    assert value(samples, "foxhunt_push_failures_total") == 0
    assert value(samples, "foxhunt_run_info", model="dqn", device="cpu", version=foxhunt.__version__) == 1
    assert value(samples, "foxhunt_run_finished", status="succeeded") == 1
    start = value(samples, "foxhunt_run_start_timestamp_seconds")
    last_fold = value(samples, "foxhunt_last_fold_completed_timestamp_seconds")
    end = value(samples, "foxhunt_run_end_timestamp_seconds")
    assert before <= start <= last_fold <= end <= time.time()


def test_group_is_keyed_by_job_and_run_id(pushgateway):
    run_id = unique_run_id("key")
    new_metrics(run_id, pushgateway).run_started()
    text = urllib.request.urlopen(f"{pushgateway}/metrics", timeout=5).read().decode()
    line = next(
        x
        for x in text.splitlines()
        if x.startswith("foxhunt_run_start_timestamp_seconds{") and f'run_id="{run_id}"' in x
    )
    assert 'job="foxhunt-train"' in line


def test_two_runs_with_different_ids_are_both_fully_present(pushgateway):
    first, second = unique_run_id("first"), unique_run_id("second")
    a, b = new_metrics(first, pushgateway), new_metrics(second, pushgateway)
    # Interleaved, as two pods pushing to one gateway would be.
    a.run_started()
    b.run_started()
    a.fold_finished(fold_figures(fold_report(0)))
    b.fold_finished(fold_figures(fold_report(1)))
    a.run_finished("succeeded")
    b.run_finished("failed")
    got_a, got_b = pushed_samples(pushgateway, first), pushed_samples(pushgateway, second)
    assert (
        value(got_a, "foxhunt_fold_validation_sharpe", fold="0")
        == fold_report(0).evaluation.policies[MODEL].net.sharpe
    )
    assert (
        value(got_b, "foxhunt_fold_validation_sharpe", fold="1")
        == fold_report(1).evaluation.policies[MODEL].net.sharpe
    )
    assert value(got_a, "foxhunt_run_finished", status="succeeded") == 1
    assert value(got_b, "foxhunt_run_finished", status="failed") == 1


def test_unreachable_pushgateway_neither_raises_nor_blocks_and_counts_every_failure():
    m = new_metrics(unique_run_id("down"), dead_url())
    calls = [
        m.run_started,
        lambda: m.data_loaded(1.0, 10),
        lambda: m.fold_finished(fold_figures(fold_report(0))),
        lambda: m.run_finished("failed"),
    ]
    for call in calls:
        t0 = time.monotonic()
        call()
        assert time.monotonic() - t0 < TIMEOUT_S + MARGIN_S
    assert m.push_failures == len(calls)


def test_no_call_blocks_longer_than_its_timeout_on_a_gateway_that_never_answers():
    # A listening socket that never accepts: connections complete in the kernel, no response ever comes.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        m = new_metrics(unique_run_id("hung"), f"http://127.0.0.1:{silent.getsockname()[1]}")
        for call in (m.run_started, lambda: m.fold_finished(fold_figures(fold_report(0)))):
            t0 = time.monotonic()
            call()
            assert time.monotonic() - t0 < TIMEOUT_S + MARGIN_S
    assert m.push_failures == 2


def test_a_gateway_answering_with_something_other_than_http_is_counted_not_raised():
    with socket.socket() as garbage:
        garbage.bind(("127.0.0.1", 0))
        garbage.listen(1)
        m = new_metrics(unique_run_id("garbage"), f"http://127.0.0.1:{garbage.getsockname()[1]}")
        answer = threading.Thread(target=answer_once, args=(garbage, b"HELLO\r\n"))
        answer.start()
        m.run_started()
        answer.join()
    assert m.push_failures == 1


def answer_once(listener: socket.socket, reply: bytes) -> None:
    conn, _ = listener.accept()
    with conn:
        conn.recv(65536)
        conn.sendall(reply)


def test_a_pushgateway_value_that_is_not_a_url_is_rejected_at_construction():
    with pytest.raises(ValueError, match="expected a URL"):
        new_metrics(unique_run_id("bad-url"), "http://")


def test_pushgateway_killed_mid_run_leaves_the_remaining_calls_returning_and_counted(own_pushgateway):
    m = new_metrics(unique_run_id("killed"), own_pushgateway.url)
    m.run_started()
    m.data_loaded(1.0, 10)
    own_pushgateway.kill()
    for fold in range(3):
        t0 = time.monotonic()
        m.fold_finished(fold_figures(fold_report(fold)))
        assert time.monotonic() - t0 < TIMEOUT_S + MARGIN_S
    m.run_finished("succeeded")
    assert m.push_failures == 4


def test_failures_are_carried_by_the_next_successful_push(pushgateway):
    run_id = unique_run_id("carried")
    m = new_metrics(run_id, dead_url())
    m.run_started()
    m.data_loaded(1.0, 10)
    m.pushgateway = pushgateway
    m.fold_finished(fold_figures(fold_report(0)))
    samples = pushed_samples(pushgateway, run_id)
    assert value(samples, "foxhunt_push_failures_total") == 2
    # The push after the gap carries what the failed ones would have.
    assert value(samples, "foxhunt_data_load_seconds") == 1.0


def test_first_push_failure_warns_and_later_ones_log_at_debug(caplog):
    m = new_metrics(unique_run_id("logged"), dead_url())
    with caplog.at_level(logging.DEBUG, logger="foxhunt.run.sinks.telemetry"):
        m.run_started()
        m.data_loaded(1.0, 10)
        m.run_finished("failed")
    levels = [r.levelno for r in caplog.records if r.name == "foxhunt.run.sinks.telemetry"]
    assert levels == [logging.WARNING, logging.DEBUG, logging.DEBUG]


def test_without_a_pushgateway_nothing_is_pushed_and_nothing_fails():
    m = new_metrics(unique_run_id("local"), None)
    one_run(m)
    assert m.push_failures == 0


def test_live_metrics_endpoint_serves_the_runs_registry():
    port = free_port()
    m = new_metrics(
        unique_run_id("live"), None, metrics_port=port, metrics_addr="127.0.0.1", instrument="EURUSD"
    )
    try:
        m.fold_finished(fold_figures(fold_report(0)))
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        m.close()
    expected = fold_report(0).phases["train"]
    match = re.search(
        r'^foxhunt_fold_phase_seconds\{fold="0",instrument="EURUSD",phase="train",trial=""\} (\S+)$',
        text,
        re.M,
    )
    assert match is not None and float(match.group(1)) == expected


def test_run_finished_rejects_an_unknown_status():
    with pytest.raises(ValueError, match="cancelled"):
        new_metrics(unique_run_id("status"), None).run_finished("cancelled")


def test_the_planned_folds_are_pushed_for_progress_and_eta(pushgateway):
    run_id = unique_run_id("planned")
    m = new_metrics(run_id, pushgateway)
    m.folds_planned(3)
    m.fold_finished(fold_figures(fold_report(0)))
    samples = pushed_samples(pushgateway, run_id)
    assert value(samples, "foxhunt_folds_planned") == 3
    assert value(samples, "foxhunt_folds_completed_total") == 1


def test_the_planned_folds_are_pushed_before_any_fold_finishes(pushgateway):
    run_id = unique_run_id("planned-early")
    new_metrics(run_id, pushgateway).folds_planned(4)
    assert value(pushed_samples(pushgateway, run_id), "foxhunt_folds_planned") == 4


def test_without_a_pushgateway_deleting_the_group_succeeds_and_counts_no_failure():
    m = new_metrics(unique_run_id("local-delete"), None)
    assert m.delete_group() is True
    assert m.push_failures == 0


def test_a_failed_group_deletion_returns_false_and_is_counted():
    m = new_metrics(unique_run_id("delete-down"), dead_url())
    assert m.delete_group() is False
    assert m.push_failures == 1


def test_an_interrupted_run_is_pushed_as_interrupted(pushgateway):
    run_id = unique_run_id("interrupted")
    m = new_metrics(run_id, pushgateway)
    m.run_started()
    m.run_finished("interrupted")
    assert value(pushed_samples(pushgateway, run_id), "foxhunt_run_finished", status="interrupted") == 1


def test_a_started_unfinished_recently_pushed_group_is_a_live_run(pushgateway):
    run_id = unique_run_id("live")
    m = new_metrics(run_id, pushgateway)
    assert live_run(pushgateway, run_id, stale_seconds=60) is None
    before = time.time()
    m.run_started()
    live = live_run(pushgateway, run_id, stale_seconds=60)
    assert live is not None and before <= live["started"] <= live["last_push"] <= time.time()
    assert live_run(pushgateway, run_id, stale_seconds=0) is None  # no push within the last 0 s: stale
    m.run_finished("succeeded")
    assert live_run(pushgateway, run_id, stale_seconds=60) is None


def test_asking_an_unreachable_pushgateway_for_live_runs_answers_none():
    assert live_run(dead_url(), "any", stale_seconds=60, timeout=TIMEOUT_S) is None
