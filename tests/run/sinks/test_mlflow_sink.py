"""`--mlflow-uri`: a run's settings, per-fold and stitched figures and pictures, read back from a real
MLflow store (SQLite, MLflow's local default, and the file store)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import tomllib
from mlflow.tracking import MlflowClient
from support import strict_json

from foxhunt import extras
from foxhunt.cli import main
from foxhunt.run.sinks.mlflow_sink import record_run, tracking_uri

# A real MLflow store and runs behind every test: in CI, left out by -m "not slow".
pytestmark = pytest.mark.slow

PIPELINE_ARGS = (
    "--sample-bars", "20000", "--epochs", "1", "--train-days", "5", "--val-days", "2", "--step-days", "2",
    "--max-folds", "2", "--device", "cpu", "--seed", "5",
)  # fmt: skip


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, tiny_params):
    """A tiny `foxhunt pipeline --mlflow-uri sqlite:///...`: its --out and the store."""
    root = tmp_path_factory.mktemp("mlflow")
    out, store = root / "run", f"sqlite:///{root / 'mlflow.db'}"
    argv = ["pipeline", "--out", str(out), "--hyperopt-params", str(tiny_params), *PIPELINE_ARGS]
    assert main([*argv, "--mlflow-uri", store]) == 0
    return out, store


def only_run(store: str):
    client = MlflowClient(tracking_uri=store)
    (run,) = client.search_runs([client.get_experiment_by_name("foxhunt").experiment_id])
    return client, run


def read_json(path: Path) -> dict:
    return strict_json.read(path)


def test_the_runs_settings_are_its_params(recorded):
    out, store = recorded
    _, run = only_run(store)
    summary = read_json(out / "summary.json")
    params = run.data.params

    assert params["epochs"] == "1" and params["seed"] == "5" and params["model"] == "dqn"
    assert {k: params[f"dqn.{k}"] for k in summary["dqn_config"]} == {
        k: str(v) for k, v in summary["dqn_config"].items()
    }
    assert params["dqn.hidden"] == "16" and params["folds.max_folds"] == "2"
    assert params["eval.cost"] == str(summary["eval_config"]["cost"])


def test_each_folds_figures_are_metrics_with_the_fold_as_the_step(recorded):
    out, store = recorded
    client, run = only_run(store)
    for key, level, figure in [("net.sharpe", "net", "sharpe"), ("gross.turnover", "gross", "turnover")]:
        history = {m.step: m.value for m in client.get_metric_history(run.info.run_id, key)}
        expected = {
            fold: read_json(out / f"fold_{fold}" / "report.json")["evaluation"]["policies"]["model"][level][figure]
            for fold in (0, 1)
        }  # fmt: skip

        assert history == pytest.approx(expected, rel=1e-12)


def test_each_folds_baselines_are_metrics_beside_the_model(recorded):
    out, store = recorded
    client, run = only_run(store)
    history = {m.step: m.value for m in client.get_metric_history(run.info.run_id, "buy_and_hold.net.sharpe")}
    expected = {
        fold: read_json(out / f"fold_{fold}" / "report.json")["evaluation"]["policies"]["buy_and_hold"][
            "net"
        ]["sharpe"]
        for fold in (0, 1)
    }

    assert history == pytest.approx(expected, rel=1e-12)


def test_the_stitched_figures_are_metrics(recorded):
    out, store = recorded
    _, run = only_run(store)
    stitched = read_json(out / "summary.json")["stitched"]["policies"]["model"]

    assert run.data.metrics["stitched.net.sharpe"] == pytest.approx(stitched["net"]["sharpe"], rel=1e-12)
    assert run.data.metrics["stitched.gross.log_return"] == pytest.approx(
        stitched["gross"]["log_return"], rel=1e-12
    )
    assert run.data.metrics["stitched.net.max_drawdown"] == pytest.approx(
        stitched["net"]["max_drawdown"], rel=1e-12
    )


def test_the_runs_pictures_are_artifacts_with_their_bytes(recorded, tmp_path):
    out, store = recorded
    client, run = only_run(store)
    names = {a.path for a in client.list_artifacts(run.info.run_id)}

    assert {"run.png", "timings.png", "summary.json"} <= names
    local = Path(client.download_artifacts(run.info.run_id, "run.png", str(tmp_path)))
    assert local.read_bytes() == (out / "run.png").read_bytes()


def test_the_mlflow_run_is_named_for_the_run_and_finished(recorded):
    out, store = recorded
    _, run = only_run(store)

    assert run.info.run_name == read_json(out / "summary.json")["run_id"]
    assert run.info.status == "FINISHED"


def test_a_failed_run_is_recorded_as_failed(recorded, tmp_path):
    out, _ = recorded
    failed = tmp_path / "failed"
    shutil.copytree(out, failed, ignore=shutil.ignore_patterns("*.fxcache", "fold_*"))
    summary = read_json(failed / "summary.json")
    (failed / "summary.json").write_text(json.dumps({**summary, "status": "failed", "error": "boom"}))
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"

    record_run(store, str(failed))

    assert only_run(store)[1].info.status == "FAILED"


def test_a_file_store_holds_the_same_record(recorded, tmp_path):
    out, store = recorded
    file_store = tracking_uri(str(tmp_path / "mlruns"))

    record_run(file_store, str(out))

    assert file_store == f"file:{tmp_path / 'mlruns'}"
    live = only_run(store)[1].data.metrics  # the live record adds each epoch's `fold_N/` figures
    assert only_run(file_store)[1].data.metrics == {k: v for k, v in live.items() if "/" not in k}


def test_an_sqlite_stores_artifacts_lie_beside_its_database(recorded):
    out, store = recorded
    client, run = only_run(store)

    assert run.info.artifact_uri.removeprefix("file://").startswith(str(out.parent / "mlruns" / "foxhunt"))


def test_the_flag_alone_is_the_local_file_store_in_the_working_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)

    assert tracking_uri("") == f"file:{tmp_path / 'mlruns'}"
    assert tracking_uri("file:") == f"file:{tmp_path / 'mlruns'}"


def test_the_flag_alone_takes_mlflow_tracking_uri_when_set(monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")

    assert tracking_uri("") == "http://127.0.0.1:5000"


def test_an_unknown_scheme_exits_2_naming_the_flag_before_any_work(capsys, tmp_path, tiny_fxcache):
    argv = [
        "train",
        "--fxcache",
        str(tiny_fxcache),
        "--out",
        str(tmp_path / "run"),
        "--mlflow-uri",
        "ftp://h/x",
    ]

    assert main(argv) == 2
    assert (
        "foxhunt train: error: --mlflow-uri: no MLflow store for the scheme ftp:" in capsys.readouterr().err
    )
    assert list(tmp_path.iterdir()) == []


def test_without_the_mlflow_extra_the_flag_exits_2_with_the_install_line(monkeypatch, capsys, tmp_path):
    find_spec = extras.importlib.util.find_spec
    monkeypatch.setattr(
        extras.importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else find_spec(name, *a)
    )

    assert main(["pipeline", "--out", str(tmp_path / "run"), "--mlflow-uri"]) == 2
    assert capsys.readouterr().err == (
        "foxhunt pipeline: error: foxhunt pipeline --mlflow-uri needs the mlflow extra, and mlflow is not "
        "installed: pip install '.[mlflow]' (in the foxhunt checkout)\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_mlflow_extra_is_the_skinny_client_and_the_tests_install_it():
    extras_table = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())[
        "project"
    ]["optional-dependencies"]

    assert [r.split(">")[0] for r in extras_table["mlflow"]] == ["mlflow-skinny"]
    assert extras.REQUIRED_MODULES["mlflow"] == extras.EXTRA_MODULES["mlflow"] == ("mlflow",)
    assert any(r.startswith("foxhunt[") and "mlflow" in r for r in extras_table["test"])


def refused_before_work(capsys, tmp_path, tiny_fxcache, uri: str) -> str:
    out = tmp_path / "run"
    argv = ["train", "--fxcache", str(tiny_fxcache), "--out", str(out), "--mlflow-uri", uri]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert not out.exists()
    return line


@pytest.mark.parametrize(
    ("uri", "words"),
    [
        ("http://[::1", "is not a URL"),
        ("http://127.0.0.1:notaport", "is not a URL"),
        ("http://127.0.0.1:70000", "is not a URL"),
        ("http://127.0.0.1:0", "has port 0"),
        ("http:///path", "names no host"),
    ],
)
def test_a_tracking_uri_that_cannot_work_exits_2_before_any_work(capsys, tmp_path, tiny_fxcache, uri, words):
    line = refused_before_work(capsys, tmp_path, tiny_fxcache, uri)
    assert line.startswith("foxhunt train: error: --mlflow-uri:") and words in line


def test_a_file_that_is_no_database_exits_2_before_any_work(capsys, tmp_path, tiny_fxcache):
    (tmp_path / "notes.db").write_text("my notes, not a database")

    line = refused_before_work(capsys, tmp_path, tiny_fxcache, f"sqlite:///{tmp_path / 'notes.db'}")
    assert "not an SQLite database" in line


def test_a_file_store_under_a_file_exits_2_before_any_work(capsys, tmp_path, tiny_fxcache):
    (tmp_path / "afile").write_text("x")

    line = refused_before_work(capsys, tmp_path, tiny_fxcache, str(tmp_path / "afile" / "mlruns"))
    assert "is not a folder" in line


def test_a_bad_mlflow_tracking_uri_from_the_environment_exits_2_naming_it(
    capsys, tmp_path, tiny_fxcache, monkeypatch
):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://u:pw-secret@[::1")

    line = refused_before_work(capsys, tmp_path, tiny_fxcache, "")
    assert line.startswith("foxhunt train: error: $MLFLOW_TRACKING_URI:") and "pw-secret" not in line


def test_an_unreachable_server_fails_the_record_within_seconds(one_fold_run, monkeypatch):
    import socket
    import time

    from foxhunt.run.sinks.mlflow_store import BOUNDED_RETRIES

    for name in BOUNDED_RETRIES:
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()

    with pytest.raises(Exception):  # noqa: B017 (MLflow's own connection error)
        record_run(f"http://127.0.0.1:{port}", str(one_fold_run))

    assert time.monotonic() - start < 15
    for name in BOUNDED_RETRIES:
        monkeypatch.delenv(name, raising=False)  # record_run set them in this process
