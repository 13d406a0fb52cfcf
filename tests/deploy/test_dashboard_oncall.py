"""The dashboard's on-call panels and the failed-run alert, against real runs pushed to a real Pushgateway.

Beside the session's two succeeded pipeline runs, this module runs a pipeline that fails (a fold's Q
values diverge) and one stopped by SIGTERM after its first fold, as a preempted pod is. DCGM and Argo
controller series are pushed under those exporters' names (tests/exporter_series.py).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from support.exporter_series import MIB, push_dcgm, push_step_runs
from support.forked_runs import ForkedProcess, start_foxhunt
from support.prom_services import PIPELINE_ARGS, pushed_samples, unique_run_id

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

DASHBOARD = Path(__file__).resolve().parents[2] / "helm" / "foxhunt" / "dashboards" / "foxhunt-training.json"
STATUSES = {"running", "succeeded", "failed", "interrupted"}


def panel(title: str) -> dict:
    return next(p for p in json.loads(DASHBOARD.read_text())["panels"] if p["title"] == title)


def expr(title: str, ref: str = "A", run_id: str = "") -> str:
    target = next(t for t in panel(title)["targets"] if t["refId"] == ref)
    return target["expr"].replace("$run_id", run_id)


def pipeline(workdir: Path, run_id: str, pushgateway: str, *extra: str) -> ForkedProcess:
    """A real `foxhunt pipeline` with the session's test sizes, in its own process like a pod (forked with
    torch imported, tests/support/forked_runs.py)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FOXHUNT_PUSHGATEWAY", "FOXHUNT_RUN_ID")}
    argv = ["pipeline", "--out", str(workdir / "out"),
            "--pushgateway", pushgateway, "--run-id", run_id, *PIPELINE_ARGS, *extra]  # fmt: skip
    return start_foxhunt(argv, workdir / "console.log", env)


@pytest.fixture(scope="module")
def failed_run(pushgateway, prometheus, tmp_path_factory) -> tuple[str, float]:
    """A run whose first fold diverges (|Q| past a tiny limit): it ends with status failed, exit 1."""
    workdir = tmp_path_factory.mktemp("failed-run")
    params = workdir / "params.json"
    params.write_text(
        json.dumps({"dqn": {"hidden": 32, "batch_size": 1024, "steps_per_epoch": 5, "q_limit": 1e-6}})
    )
    run_id, started = unique_run_id("failed"), time.time()
    process = pipeline(workdir, run_id, pushgateway, "--hyperopt-params", str(params))
    assert process.wait(timeout=300) == 1
    prometheus.wait_for(f'foxhunt_run_finished{{run_id="{run_id}", status="failed"}}', 1)
    return run_id, started


@pytest.fixture(scope="module")
def interrupted_run(pushgateway, prometheus, tmp_path_factory) -> tuple[str, float]:
    """A four-fold run sent SIGTERM once Prometheus has seen its first fold done: it ends interrupted (143)."""
    workdir = tmp_path_factory.mktemp("interrupted-run")
    run_id, started = unique_run_id("interrupted"), time.time()
    argv = list(PIPELINE_ARGS)
    argv[argv.index("--max-folds") + 1] = "4"
    process = pipeline(workdir, run_id, pushgateway, *argv)
    try:
        prometheus.wait_for(f'foxhunt_folds_completed_total{{run_id="{run_id}"}} >= 1', 1, timeout=240)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 128 + signal.SIGTERM
    finally:
        if process.poll() is None:
            process.kill()
    prometheus.wait_for(f'foxhunt_run_finished{{run_id="{run_id}", status="interrupted"}}', 1)
    return run_id, started


def last_status(prometheus, run_id: str, since: float) -> tuple[str, set[str]]:
    """The run's status at the end of the range, and every status the panel showed for it."""
    series = [
        s for s in prometheus.query_since(expr("Run status"), since - 5) if s["metric"]["run_id"] == run_id
    ]
    latest = max(series, key=lambda s: s["values"][-1][0])
    return latest["metric"]["status"], {s["metric"]["status"] for s in series}


def test_run_status_shows_running_then_how_each_real_run_ended(
    prometheus, pipeline_run, failed_run, interrupted_run
):
    succeeded = pipeline_run
    assert last_status(prometheus, succeeded.run_id, succeeded.started)[0] == "succeeded"
    assert last_status(prometheus, *failed_run)[0] == "failed"
    status, shown = last_status(prometheus, *interrupted_run)
    assert status == "interrupted" and "running" in shown and shown <= STATUSES


def test_the_selected_runs_status_is_shown_by_name(prometheus, failed_run):
    run_id, _ = failed_run
    status = panel("Status of this run")

    assert status["options"]["textMode"] == "name" and status["targets"][0]["legendFormat"] == "{{status}}"
    assert [s["metric"]["status"] for s in prometheus.query(expr("Status of this run", run_id=run_id))] == [
        "failed"
    ]


def instant_value(prometheus, promql: str) -> float:
    (result,) = prometheus.query(promql)
    return float(result["value"][1])


def test_folds_done_of_planned_for_a_finished_a_failed_and_an_interrupted_run(
    prometheus, pipeline_run, failed_run, interrupted_run
):
    ratio = "Folds done of planned"
    assert instant_value(prometheus, expr(ratio, run_id=pipeline_run.run_id)) == 1.0
    assert instant_value(prometheus, expr(ratio, run_id=failed_run[0])) == 0.0
    assert instant_value(prometheus, expr("Folds done / planned", "B", run_id=failed_run[0])) == 2.0
    assert 0.25 <= instant_value(prometheus, expr(ratio, run_id=interrupted_run[0])) < 1.0


def test_time_left_is_the_folds_left_at_the_pace_of_the_folds_done_and_zero_once_ended(
    prometheus, interrupted_run
):
    run_id, started = interrupted_run
    end = time.time() + 1
    selector = f'{{job="foxhunt-train", run_id="{run_id}"}}'

    def series(promql: str) -> dict[float, float]:
        result = prometheus.query_range(promql, started - 5, end, 1.0)
        return {t: float(v) for t, v in result[0]["values"]} if result else {}

    eta = series(expr("Time left", run_id=run_id))
    planned, done = (
        series(f"foxhunt_folds_planned{selector}"),
        series(f"foxhunt_folds_completed_total{selector}"),
    )
    last, start = (
        series(f"foxhunt_last_fold_completed_timestamp_seconds{selector}"),
        series(f"foxhunt_run_start_timestamp_seconds{selector}"),
    )
    ended = series(f"foxhunt_run_end_timestamp_seconds{selector}")
    running = [t for t in eta if done.get(t, 0) >= 1 and ended.get(t) == 0]
    assert running, "Prometheus saw no moment between the first fold and the end"
    for t in running:
        expected = (planned[t] - done[t]) * (last[t] - start[t]) / done[t]
        assert eta[t] == pytest.approx(expected, rel=1e-9) and eta[t] > 0
    assert [eta[t] for t in eta if ended.get(t, 0) > 0][-1] == 0.0


def test_gpu_panels_show_the_dcgm_series_of_the_selected_runs_pods_only(prometheus, pushgateway, failed_run):
    run_id, _ = failed_run
    pod = f"{run_id}-train-3141592653"
    push_dcgm(pushgateway, pod, utilisation=93.0, used_mib=1024.0, free_mib=2048.0)
    push_dcgm(pushgateway, f"other-{run_id}-train-1", utilisation=5.0, used_mib=1.0, free_mib=1.0)
    prometheus.wait_for(f'DCGM_FI_DEV_FB_FREE{{pod="{pod}"}}', 1)

    utilisation = prometheus.query(expr("GPU utilisation (DCGM)", run_id=run_id))
    used = prometheus.query(expr("GPU memory (DCGM)", "A", run_id=run_id))
    total = prometheus.query(expr("GPU memory (DCGM)", "B", run_id=run_id))

    assert [(r["metric"]["pod"], float(r["value"][1])) for r in utilisation] == [(pod, 93.0)]
    assert [float(r["value"][1]) for r in used] == [1024.0 * MIB]
    assert [float(r["value"][1]) for r in total] == [3072.0 * MIB]


def test_step_failures_count_failed_attempts_by_step_and_leave_out_successes(
    prometheus, pushgateway, exporter_series
):
    push_step_runs(pushgateway, "precompute", "Succeeded", 0)
    prometheus.wait_for('argo_workflows_foxhunt_workflow_step_runs{step="precompute"} == 0', 1)
    push_step_runs(pushgateway, "precompute", "Succeeded", 5)
    prometheus.wait_for('argo_workflows_foxhunt_workflow_step_runs{step="precompute"} == 5', 1)

    result = prometheus.query(expr("Workflow step failures (Argo)"))
    failures = {(r["metric"]["step"], r["metric"]["status"]): float(r["value"][1]) for r in result}

    assert set(failures) == {("train", "Failed")}
    assert 2.0 <= failures[("train", "Failed")] < 3.0  # 0 then 2 failed attempts, extrapolated a little


def test_a_failed_run_raises_the_failed_run_alert_and_other_ends_do_not(
    prometheus, pipeline_run, failed_run, interrupted_run
):
    alerts = prometheus.wait_for(f'ALERTS{{alertname="FoxhuntRunFailed", run_id="{failed_run[0]}"}}', 1)
    assert alerts[0]["metric"]["severity"] == "critical"
    for run_id in (pipeline_run.run_id, interrupted_run[0]):
        assert prometheus.query(f'ALERTS{{alertname="FoxhuntRunFailed", run_id="{run_id}"}}') == []


def test_every_on_call_panel_returns_data_for_the_failed_run(
    prometheus, failed_run, exporter_series, pushgateway
):
    run_id, started = failed_run
    push_dcgm(pushgateway, f"{run_id}-precompute-27", utilisation=0.0, used_mib=0.0, free_mib=1.0)
    prometheus.wait_for(f'DCGM_FI_DEV_GPU_UTIL{{pod="{run_id}-precompute-27"}}', 1)
    # Time left starts with the first fold done; this run failed in its first fold.
    titles = ["Run status", "Status of this run", "Folds done of planned", "Folds done / planned",
              "Workflow step failures (Argo)", "GPU utilisation (DCGM)", "GPU memory (DCGM)"]  # fmt: skip
    empty = [
        f"{title} [{t['refId']}]"
        for title in titles
        for t in panel(title)["targets"]
        if not any(
            r["metric"].get("run_id", run_id) == run_id and r["values"]
            for r in prometheus.query_since(t["expr"].replace("$run_id", run_id), started - 5)
        )
    ]
    assert empty == []
    assert (
        pushed_samples(pushgateway, run_id)[("foxhunt_run_finished", frozenset({("status", "failed")}))] == 1
    )
