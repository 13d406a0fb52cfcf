"""RunMetrics against a real Pushgateway on 127.0.0.1, and the run id / Pushgateway resolution rules."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import logging
import re
import socket
import threading
import time
import urllib.request

import pytest
from support.evaluation_cases import window
from support.prom_services import finish_pipeline, free_port, pushed_samples, start_pipeline, unique_run_id
from support.run_cases import train_argv

import foxhunt
from foxhunt.cli import main
from foxhunt.errors import UsageError
from foxhunt.evaluate.evaluation import MODEL
from foxhunt.evaluate.reports import EpochStats, FoldDates, FoldReport, PolicyMetrics, Validation
from foxhunt.run.telemetry import PHASES, RunMetrics, live_run, resolve_pushgateway, resolve_run_id

pytestmark = pytest.mark.services

TIMEOUT_S = 0.5
# What a call may take beyond its push timeout: building the request and Python's own overhead.
MARGIN_S = 0.5


def policy(
    sharpe: float, total_return: float, max_drawdown: float, turnover: float = 0.0, hit_rate: float = 0.0
) -> PolicyMetrics:
    return PolicyMetrics(
        sharpe,
        total_return,
        max_drawdown,
        turnover,
        hit_rate,
        gross_sharpe=sharpe,
        gross_return=total_return,
        exposure=0.5,
    )


def fold_report(fold: int) -> FoldReport:
    """A fold report like the pipeline's fold_N/report.json, with values distinct per fold."""
    base = 1.0 + fold
    epochs = [
        EpochStats(
            epoch=i,
            loss=0.125 * base,
            epsilon=0.5,
            steps=10,
            collect_seconds=0.1 * base,
            train_seconds=(s - 0.1) * base,
            samples_per_second=1.0,
        )
        for i, s in enumerate((0.5, 0.7, 0.6))
    ]
    return FoldReport(
        fold=fold,
        train_start=1000 * fold,
        train_end=1000 * fold + 800 + fold,
        val_start=1000 * fold + 810,
        val_end=1000 * fold + 1000 + fold,
        difficulty_score=0.25 * base,
        dates=FoldDates(
            "2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z", "2024-01-02T01:00:00Z", "2024-01-03T00:00:00Z"
        ),
        phases={p: base * (i + 1) / 1000.0 for i, p in enumerate(PHASES)},
        fold_seconds=3.5 * base,
        samples_per_second=12345.5 * base,
        steps=30,
        epochs=epochs,
        validation=Validation(
            model=policy(1.5 * base - 4.0, 0.01 * base, 0.02 * base, 17.0 * base, 0.51),
            baselines={"buy_and_hold": policy(0.3, 0.001, 0.05), "flat": policy(0.0, 0.0, 0.0)},
            periods_per_year=525_960.0,
        ),
    )


def new_metrics(run_id: str, pushgateway: str | None, **kwargs) -> RunMetrics:
    return RunMetrics(run_id, pushgateway=pushgateway, model="dqn", device="cpu", timeout=TIMEOUT_S, **kwargs)


def one_run(m: RunMetrics, folds: int = 2) -> None:
    m.run_started()
    m.data_loaded(1.25, 60_000)
    for fold in range(folds):
        m.fold_finished(fold_report(fold))
    m.run_finished("succeeded")


def value(samples: dict, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


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
        "foxhunt_fold_validation_sharpe": r.validation.model.sharpe,
        "foxhunt_fold_validation_return": r.validation.model.total_return,
        "foxhunt_fold_validation_max_drawdown": r.validation.model.max_drawdown,
        "foxhunt_fold_validation_turnover": r.validation.model.turnover,
    }
    assert {name: value(samples, name, fold="1") for name in expected} == expected


def test_a_folds_dates_standard_error_and_best_baseline_are_pushed(pushgateway):
    run_id = unique_run_id("evaluated")
    evaluated = dataclasses.replace(fold_report(2), evaluation=window(2, seed=5))
    new_metrics(run_id, pushgateway).fold_finished(evaluated)
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
    new_metrics(run_id, pushgateway).run_evaluated(stitched)
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
    a.fold_finished(fold_report(0))
    b.fold_finished(fold_report(1))
    a.run_finished("succeeded")
    b.run_finished("failed")
    got_a, got_b = pushed_samples(pushgateway, first), pushed_samples(pushgateway, second)
    assert value(got_a, "foxhunt_fold_validation_sharpe", fold="0") == fold_report(0).validation.model.sharpe
    assert value(got_b, "foxhunt_fold_validation_sharpe", fold="1") == fold_report(1).validation.model.sharpe
    assert value(got_a, "foxhunt_run_finished", status="succeeded") == 1
    assert value(got_b, "foxhunt_run_finished", status="failed") == 1


def test_unreachable_pushgateway_neither_raises_nor_blocks_and_counts_every_failure():
    m = new_metrics(unique_run_id("down"), dead_url())
    calls = [
        m.run_started,
        lambda: m.data_loaded(1.0, 10),
        lambda: m.fold_finished(fold_report(0)),
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
        for call in (m.run_started, lambda: m.fold_finished(fold_report(0))):
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
        m.fold_finished(fold_report(fold))
        assert time.monotonic() - t0 < TIMEOUT_S + MARGIN_S
    m.run_finished("succeeded")
    assert m.push_failures == 4


def test_failures_are_carried_by_the_next_successful_push(pushgateway):
    run_id = unique_run_id("carried")
    m = new_metrics(run_id, dead_url())
    m.run_started()
    m.data_loaded(1.0, 10)
    m.pushgateway = pushgateway
    m.fold_finished(fold_report(0))
    samples = pushed_samples(pushgateway, run_id)
    assert value(samples, "foxhunt_push_failures_total") == 2
    # The push after the gap carries what the failed ones would have.
    assert value(samples, "foxhunt_data_load_seconds") == 1.0


def test_first_push_failure_warns_and_later_ones_log_at_debug(caplog):
    m = new_metrics(unique_run_id("logged"), dead_url())
    with caplog.at_level(logging.DEBUG, logger="foxhunt.run.telemetry"):
        m.run_started()
        m.data_loaded(1.0, 10)
        m.run_finished("failed")
    levels = [r.levelno for r in caplog.records if r.name == "foxhunt.run.telemetry"]
    assert levels == [logging.WARNING, logging.DEBUG, logging.DEBUG]


def test_without_a_pushgateway_nothing_is_pushed_and_nothing_fails():
    m = new_metrics(unique_run_id("local"), None)
    one_run(m)
    assert m.push_failures == 0


def test_live_metrics_endpoint_serves_the_runs_registry():
    port = free_port()
    m = new_metrics(unique_run_id("live"), None, metrics_port=port, metrics_addr="127.0.0.1")
    try:
        m.fold_finished(fold_report(0))
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        m.close()
    expected = fold_report(0).phases["train"]
    match = re.search(r'^foxhunt_fold_phase_seconds\{fold="0",phase="train"\} (\S+)$', text, re.M)
    assert match is not None and float(match.group(1)) == expected


def test_run_finished_rejects_an_unknown_status():
    with pytest.raises(ValueError, match="cancelled"):
        new_metrics(unique_run_id("status"), None).run_finished("cancelled")


def test_the_planned_folds_are_pushed_for_progress_and_eta(pushgateway):
    run_id = unique_run_id("planned")
    m = new_metrics(run_id, pushgateway)
    m.folds_planned(3)
    m.fold_finished(fold_report(0))
    samples = pushed_samples(pushgateway, run_id)
    assert value(samples, "foxhunt_folds_planned") == 3
    assert value(samples, "foxhunt_folds_completed_total") == 1


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


def test_a_second_live_run_with_the_same_id_is_refused_before_any_output(
    pushgateway, tiny_fxcache, tiny_params, tmp_path, capsys
):
    run_id = unique_run_id("dup")
    first = new_metrics(run_id, pushgateway)
    first.run_started()
    out = tmp_path / "second"
    argv = train_argv(
        tiny_fxcache,
        out,
        tiny_params,
        "--epochs",
        "1",
        "--max-folds",
        "1",
        "--pushgateway",
        pushgateway,
        "--run-id",
        run_id,
    )
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"run id {run_id} is live on {pushgateway}" in err and "another --run-id" in err
    assert not out.exists() or list(out.iterdir()) == []
    first.run_finished("succeeded")
    assert main(argv) == 0  # a finished run's id may be used again


def test_ten_concurrent_runs_on_one_pushgateway_keep_complete_separate_series(pushgateway):
    run_ids = [unique_run_id(f"ten{i}") for i in range(10)]

    def run_report(i: int, fold: int):
        return dataclasses.replace(fold_report(fold), fold_seconds=100.0 * i + fold)

    def one(i: int) -> None:
        m = new_metrics(run_ids[i], pushgateway)
        m.run_started()
        m.folds_planned(3)
        for fold in range(3):
            m.fold_finished(run_report(i, fold))
            m.push()  # a heartbeat between folds, as the run's thread sends
        m.run_finished("succeeded")
        assert m.push_failures == 0

    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        list(pool.map(one, range(10)))
    for i, run_id in enumerate(run_ids):
        samples = pushed_samples(pushgateway, run_id)
        assert {fold: value(samples, "foxhunt_fold_seconds", fold=str(fold)) for fold in range(3)} == {
            fold: run_report(i, fold).fold_seconds for fold in range(3)
        }
        assert value(samples, "foxhunt_folds_completed_total") == 3
        assert value(samples, "foxhunt_run_finished", status="succeeded") == 1


def test_a_deleted_group_is_gone_from_the_pushgateway_after_prometheus_scraped_it(
    prometheus, pushgateway, tiny_fxcache, tiny_params, tmp_path
):
    run_id = unique_run_id("deleted")
    argv = train_argv(
        tiny_fxcache,
        tmp_path / "out",
        tiny_params,
        "--epochs",
        "1",
        "--max-folds",
        "1",
        "--pushgateway",
        pushgateway,
        "--run-id",
        run_id,
        "--delete-metrics-group",
        "--metrics-keep-seconds",
        "3",
    )
    assert main(argv) == 0
    assert pushed_samples(pushgateway, run_id) == {}
    scraped = prometheus.query(
        f'last_over_time(foxhunt_run_finished{{run_id="{run_id}", status="succeeded"}}[1m])'
    )
    assert [float(r["value"][1]) for r in scraped] == [1.0]
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["push_failures"] == 0


@pytest.mark.parametrize("bad", ["..", ".", "a/b", "run id", "x" * 129, "ümlaut"])
def test_a_run_id_that_is_not_a_safe_label_value_is_a_usage_error(bad):
    with pytest.raises(UsageError, match="--run-id: run id must be 1-128 characters"):
        resolve_run_id(bad)


def test_a_run_id_of_128_safe_characters_is_accepted():
    assert resolve_run_id("a.B_c:d-1" + "x" * 119) == "a.B_c:d-1" + "x" * 119


def test_a_bad_run_id_in_the_environment_names_the_variable(monkeypatch):
    monkeypatch.delenv("FOXHUNT_RUN_ID", raising=False)
    monkeypatch.setenv("ARGO_WORKFLOW_NAME", "../up")
    with pytest.raises(UsageError, match=r"\$ARGO_WORKFLOW_NAME: run id"):
        resolve_run_id(None)


def test_run_id_flag_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("FOXHUNT_RUN_ID", "from-env")
    monkeypatch.setenv("ARGO_WORKFLOW_NAME", "train-pipeline-abcde")
    assert resolve_run_id("from-flag") == "from-flag"


def test_run_id_env_wins_over_the_argo_workflow_name(monkeypatch):
    monkeypatch.setenv("FOXHUNT_RUN_ID", "from-env")
    monkeypatch.setenv("ARGO_WORKFLOW_NAME", "train-pipeline-abcde")
    assert resolve_run_id(None) == "from-env"


def test_run_id_in_an_argo_pod_is_the_workflow_name(monkeypatch):
    monkeypatch.delenv("FOXHUNT_RUN_ID", raising=False)
    monkeypatch.setenv("ARGO_WORKFLOW_NAME", "train-pipeline-abcde")
    assert resolve_run_id(None) == "train-pipeline-abcde"


def test_run_id_is_generated_and_unique_without_flag_or_environment(monkeypatch):
    monkeypatch.delenv("FOXHUNT_RUN_ID", raising=False)
    monkeypatch.delenv("ARGO_WORKFLOW_NAME", raising=False)
    first, second = resolve_run_id(None), resolve_run_id(None)
    assert re.fullmatch(r"local-\d{8}T\d{6}-[0-9a-f]{6}", first)
    assert first != second


def test_pushgateway_flag_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("FOXHUNT_PUSHGATEWAY", "http://env:9091")
    assert resolve_pushgateway("http://flag:9091") == "http://flag:9091"


def test_pushgateway_comes_from_the_environment_without_a_flag(monkeypatch):
    monkeypatch.setenv("FOXHUNT_PUSHGATEWAY", "http://env:9091")
    assert resolve_pushgateway(None) == "http://env:9091"


def test_no_pushgateway_without_flag_or_environment(monkeypatch):
    monkeypatch.delenv("FOXHUNT_PUSHGATEWAY", raising=False)
    assert resolve_pushgateway(None) is None


# ---- end to end: the real `foxhunt pipeline`, the real Pushgateway, the real Prometheus -------------------------
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
    expected = {(str(r["fold"]), None): r["validation"]["sharpe"] for r in run.summary["folds"]}
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
    assert [r["validation"] for r in summary["folds"]] == [r["validation"] for r in reference["folds"]]
