"""`--mlflow-uri` while the run goes: a tiny `foxhunt pipeline` against a real MLflow tracking server (the
MLflow app on loopback, over a SQLite store in a temporary folder), its store read while fold 1 trains."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from foxhunt.cli import commands, main
from foxhunt.run.sinks.mlflow_live import LiveRecord, fold_policy_from_mlflow

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

EPOCHS = 2
PIPELINE_ARGS = (
    "--sample-bars", "20000", "--epochs", str(EPOCHS), "--train-days", "5", "--val-days", "2",
    "--step-days", "2", "--max-folds", "2", "--device", "cpu", "--seed", "5",
)  # fmt: skip
REPO = Path(__file__).resolve().parents[3]
SERVER_ENV = ("_MLFLOW_SERVER_FILE_STORE", "_MLFLOW_SERVER_ARTIFACT_ROOT", "_MLFLOW_SERVER_SERVE_ARTIFACTS")


@contextlib.contextmanager
def tracking_server(root: Path):
    """MLflow's tracking server app, served on a free loopback port from a thread: its URI."""
    with pytest.MonkeyPatch.context() as patch:
        store, artifacts = f"sqlite:///{root / 'server.db'}", str(root / "artifacts")
        for name, value in zip(SERVER_ENV, (store, artifacts, "false"), strict=True):
            patch.setenv(name, value)
        from mlflow.server import app
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
        server = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_port}"
        finally:
            server.shutdown()
            thread.join()


class StoreProbe(LiveRecord):
    """The live record, reading its own store back when fold 1's first epoch ends (the run still going)."""

    seen: dict | None = None

    def epoch_finished(self, fold: int, epoch: int, epochs: int, figures) -> None:
        if fold == 1 and epoch == 0:
            assert self.flush(120)
            client = MlflowClient(tracking_uri=self.uri)
            run = client.get_run(self.run_id)
            self.seen = {
                "status": run.info.status,
                "metrics": set(run.data.metrics),
                "loss_steps": [m.step for m in client.get_metric_history(self.run_id, "fold_0/loss")],
                "fold_0": {a.path for a in client.list_artifacts(self.run_id, "fold_0")},
                "fold_1": {a.path for a in client.list_artifacts(self.run_id, "fold_1")},
            }
        super().epoch_finished(fold, epoch, epochs, figures)


@pytest.fixture(scope="module")
def live(tmp_path_factory, tiny_params):
    """A tiny pipeline recorded live on a tracking server: its --out, the client, the MLflow run, the
    probe and the console (stdout and stderr)."""
    root = tmp_path_factory.mktemp("mlflow-live")
    out, console = root / "run", io.StringIO()
    probes: list[StoreProbe] = []
    with tracking_server(root) as uri, pytest.MonkeyPatch.context() as patch:
        patch.delenv("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", raising=False)
        patch.setattr(commands, "live_record", lambda u: probes.append(StoreProbe(u)) or probes[-1])
        argv = ["pipeline", "--out", str(out), "--hyperopt-params", str(tiny_params), *PIPELINE_ARGS]
        with contextlib.redirect_stdout(console), contextlib.redirect_stderr(console):
            assert main([*argv, "--mlflow-uri", uri]) == 0
        client = MlflowClient(tracking_uri=uri)
        (run,) = client.search_runs([client.get_experiment_by_name("foxhunt").experiment_id])
        yield out, client, run, probes[0], console.getvalue()


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


def test_fold_0s_figures_and_weights_are_in_the_store_while_fold_1_trains(live):
    seen = live[3].seen

    assert seen["status"] == "RUNNING"
    assert {"net.sharpe", "fold_0/loss", "fold_0/q_mean"} <= seen["metrics"]
    assert seen["loss_steps"] == [0, 1]
    assert {"fold_0/weights.pt", "fold_0/norm_stats_fold0.json", "fold_0/positions.npy"} <= seen["fold_0"]
    assert seen["fold_1"] == set()


def test_each_epochs_figures_are_metrics_of_its_fold_at_the_global_epoch_index(live):
    out, client, run, _, _ = live
    for fold in (0, 1):
        epochs = read_json(out / f"fold_{fold}" / "report.json")["epochs"]
        for figure in ("loss", "q_mean", "train_sharpe"):
            history = client.get_metric_history(run.info.run_id, f"fold_{fold}/{figure}")

            assert [m.step for m in history] == [fold * EPOCHS + e for e in range(EPOCHS)]
            assert [m.value for m in history] == pytest.approx([e[figure] for e in epochs], rel=1e-6)


def test_a_folds_policy_loaded_from_mlflow_reproduces_its_validation_positions(live):
    from foxhunt.data.fxcache import read_fxcache

    out, client, run, _, _ = live
    features = read_fxcache(str(out / "features.fxcache")).features
    for fold in (0, 1):
        report = read_json(out / f"fold_{fold}" / "report.json")
        policy = fold_policy_from_mlflow(client.tracking_uri, run.info.run_id, fold)

        positions = policy.rollout(features[report["val_start"] : report["val_end"]])
        assert np.array_equal(positions, np.load(out / f"fold_{fold}" / "positions.npy"))
        assert np.abs(positions).sum() > 0  # a policy that trades: a flat one would prove little


def test_the_run_names_the_codes_commit(live):
    tags = live[2].data.tags
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)

    assert tags["mlflow.source.git.commit"] == tags["foxhunt.commit"] == head.stdout.strip()


def test_an_images_commit_from_the_environment_wins(monkeypatch):
    from foxhunt.run.sinks.mlflow_live import code_commit

    monkeypatch.setenv("FOXHUNT_COMMIT", "0123abc")

    assert code_commit() == "0123abc"


def test_the_fxcache_is_a_dataset_input_with_its_checksum(live):
    out, _, run, _, _ = live
    checksum = read_json(out / "summary.json")["fxcache_checksum"]
    (found,) = run.inputs.dataset_inputs

    assert len(checksum) == 64 and run.data.tags["foxhunt.fxcache_checksum"] == checksum
    assert found.dataset.digest == checksum[:36] and json.loads(found.dataset.profile) == {
        "checksum": checksum
    }
    assert json.loads(found.dataset.source) == {"uri": str(out / "features.fxcache")}


def test_the_live_run_is_completed_by_the_end_of_run_record_not_doubled(live):
    out, client, run, probe, _ = live
    history = client.get_metric_history(run.info.run_id, "net.sharpe")
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}

    assert run.info.status == "FINISHED" and probe.complete
    assert [m.step for m in history] == [0, 1]  # each fold's figures once: live, not again at the end
    assert {"run.png", "summary.json", "manifest.json", "fold_0", "fold_1"} <= artifacts
    stitched = read_json(out / "summary.json")["stitched"]["policies"]["model"]["net"]["sharpe"]
    assert run.data.metrics["stitched.net.sharpe"] == pytest.approx(stitched, rel=1e-12)


def test_no_view_run_line_reaches_the_console(live):
    console = live[4]

    assert "mlflow: recorded run" in console  # the console was captured
    assert "View run" not in console and "View experiment" not in console


def test_a_store_that_fails_never_stops_training(tiny_params, tmp_path, caplog, monkeypatch):
    from foxhunt.config import DQNConfig, FoldConfig, RunConfig, override
    from foxhunt.run.pipeline import pipeline

    for name, value in (("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0"), ("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")):
        monkeypatch.setenv(name, value)
    dead = LiveRecord("http://127.0.0.1:9", flush_seconds=30)  # the discard port: nothing answers
    settings = RunConfig(
        epochs=1,
        seed=5,
        device="cpu",
        dqn=override(DQNConfig(), read_json(tiny_params)["dqn"], what="tiny params"),
        folds=FoldConfig(train_days=5, val_days=2, step_days=2, max_folds=2),
    )

    with caplog.at_level(logging.WARNING):
        summary = pipeline(
            None, str(tmp_path / "run"), settings, sample_bars=20_000, progress=lambda _: None, sink=dead
        )

    assert summary.status == "succeeded" and len(summary.folds) == 2
    assert dead.run_id is None and dead.failures == 1 + 2 + 2  # the start, each epoch, each fold
    said = [r.levelname for r in caplog.records if r.name == "foxhunt.run.sinks.mlflow_live"]
    assert said == ["WARNING"]  # said once; the rest are counted


def test_the_run_and_its_live_record_import_no_mlflow_until_a_run_starts():
    code = (
        "import sys; import foxhunt.cli.commands, foxhunt.run.pipeline, foxhunt.run.sinks.mlflow_sink; "
        "from foxhunt.run.sinks.mlflow_live import LiveRecord; LiveRecord('sqlite:///x.db'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'mlflow'))"
    )
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'trainer_image'}{os.pathsep}{REPO}"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)

    assert done.stdout.strip() == "[]", done.stderr


def test_a_live_call_to_an_unreachable_server_gives_up_within_the_end_of_run_records_bound(
    tmp_path, monkeypatch
):
    import socket
    import time

    from foxhunt.evaluate.reports import RunSummary
    from foxhunt.run.sinks.mlflow_store import BOUNDED_RETRIES

    for name in BOUNDED_RETRIES:  # MLflow's own defaults would retry for minutes
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing answers there
    summary = RunSummary(
        run_id="r", model="dqn", device="cpu", version="v", fxcache="f", fxcache_checksum=None, rows=1,
        epochs=1, seed=0, trials=0, fold_config={}, dqn_config={}, eval_config={}, started_at="t",
    )  # fmt: skip
    record = LiveRecord(f"http://127.0.0.1:{port}", flush_seconds=15)
    start = time.monotonic()

    record.run_started(str(tmp_path), summary, None)
    record.run_finished("failed")

    assert not record.left_behind and record.failures == 1 and record.run_id is None
    assert time.monotonic() - start < 15
    assert {name: os.environ[name] for name in BOUNDED_RETRIES} == BOUNDED_RETRIES
    for name in BOUNDED_RETRIES:
        monkeypatch.delenv(name, raising=False)  # the live record set them in this process
