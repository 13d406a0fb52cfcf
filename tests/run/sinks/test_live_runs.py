"""A live run with the same id is refused; the run id and the Pushgateway come from the flag, the environment or Argo."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from support import strict_json
from support.prom_services import pushed_samples, unique_run_id
from support.run_cases import train_argv
from support.telemetry_cases import (
    fold_report,
    new_metrics,
    value,
)

from foxhunt.cli import main
from foxhunt.errors import UsageError
from foxhunt.run.sinks.pushgateway import live_run, resolve_pushgateway, resolve_run_id
from foxhunt.run.sinks.telemetry_reads import fold_figures
from foxhunt.train import DQNTrainer

pytestmark = pytest.mark.services


@pytest.fixture
def pushing_run(pushgateway, tiny_fxcache, tiny_params):
    """The argv of a one-fold, one-epoch run on the tiny fxcache writing to `out`, pushing as `run_id`."""

    def argv(out, run_id: str, *more: str) -> list[str]:
        flags = ("--epochs", "1", "--max-folds", "1", "--pushgateway", pushgateway, "--run-id", run_id)
        return train_argv(tiny_fxcache, out, tiny_params, *flags, *more)

    return argv


def test_a_second_live_run_with_the_same_id_is_refused_before_any_output(
    pushing_run, pushgateway, tmp_path, capsys
):
    run_id = unique_run_id("dup")
    first = new_metrics(run_id, pushgateway)
    first.run_started()
    out = tmp_path / "second"
    argv = pushing_run(out, run_id)
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
            m.fold_finished(fold_figures(run_report(i, fold)))
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


@pytest.mark.slow
def test_a_deleted_group_is_gone_from_the_pushgateway_after_prometheus_scraped_it(
    prometheus, pushing_run, pushgateway, tmp_path
):
    run_id = unique_run_id("deleted")
    argv = pushing_run(tmp_path / "out", run_id, "--delete-metrics-group", "--metrics-keep-seconds", "3")
    assert main(argv) == 0
    assert pushed_samples(pushgateway, run_id) == {}
    scraped = prometheus.query(
        f'last_over_time(foxhunt_run_finished{{run_id="{run_id}", status="succeeded"}}[1m])'
    )
    assert [float(r["value"][1]) for r in scraped] == [1.0]
    assert strict_json.read(tmp_path / "out" / "summary.json")["push_failures"] == 0


def test_a_failed_run_keeps_its_group_for_the_failure_alert_even_when_asked_to_delete_it(
    pushgateway, tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    def boom(self, *args, **kwargs):
        raise ValueError("boom in the trainer")

    monkeypatch.setattr(DQNTrainer, "train_epoch", boom)
    run_id = unique_run_id("failed")
    argv = train_argv(
        tiny_fxcache, tmp_path / "out", tiny_params, "--epochs", "1", "--max-folds", "1",
        "--pushgateway", pushgateway, "--run-id", run_id, "--delete-metrics-group", "--metrics-keep-seconds", "0",
    )  # fmt: skip

    assert main(argv) == 1
    assert value(pushed_samples(pushgateway, run_id), "foxhunt_run_finished", status="failed") == 1


def test_a_group_that_never_marked_its_start_is_not_a_live_run(pushgateway):
    run_id = unique_run_id("unstarted")
    new_metrics(run_id, pushgateway).folds_planned(3)  # pushed, but no start time
    assert live_run(pushgateway, run_id, stale_seconds=60) is None


def test_a_live_run_of_another_job_with_the_same_id_is_not_this_jobs_live_run(pushgateway):
    run_id = unique_run_id("other-job")
    other = new_metrics(run_id, pushgateway, job="foxhunt-other")
    other.run_started()
    assert live_run(pushgateway, run_id, stale_seconds=60) is None
    assert live_run(pushgateway, run_id, stale_seconds=60, job="foxhunt-other") is not None


def test_a_pushgateway_answering_something_other_than_its_json_holds_no_live_run():
    class Html(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            body = b"<html>sign in</html>"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Html)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert live_run(url, "any", stale_seconds=60, timeout=5) is None
    finally:
        server.shutdown()
        server.server_close()


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
