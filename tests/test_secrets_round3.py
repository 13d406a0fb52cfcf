"""Secrets by URL structure and by registered variable: a password without a scheme, a Pushgateway
login sent as basic auth, MLflow's password, and a secret's value masked only where it stands as
that secret (never a setting or a folder name that happens to spell it)."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.run_cases import ONE_FOLD, copy_run, train_argv

from foxhunt import redaction
from foxhunt.cli import main
from foxhunt.redaction import MASK, scrub_record, scrub_text
from foxhunt.run.sinks.telemetry import RunMetrics

PASSWORD = "pl4nted-pw"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in ("FOXHUNT_PUSHGATEWAY", "FOXHUNT_RUN_ID", "ARGO_WORKFLOW_NAME", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(redaction, "_registered", set())


@contextlib.contextmanager
def recording_gateway():
    """A Pushgateway stand-in on 127.0.0.1 that records each request's method, path and Authorization."""
    seen: list[tuple[str, str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            seen.append((self.command, self.path, self.headers.get("Authorization")))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_PUT = do_POST = do_DELETE = answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("scheme", ["", "http://"])
def test_pushgateway_credentials_are_sent_as_basic_auth_to_the_host(scheme):
    with recording_gateway() as (port, seen):
        metrics = RunMetrics(
            "r1", pushgateway=f"{scheme}push:{PASSWORD}@127.0.0.1:{port}", model="dqn", device="cpu"
        )
        assert metrics.push() and metrics.delete_group()

    expected = "Basic " + base64.b64encode(f"push:{PASSWORD}".encode()).decode()
    assert [(method, auth) for method, _, auth in seen] == [("PUT", expected), ("DELETE", expected)]
    assert seen[0][1] == "/metrics/job/foxhunt-train/run_id/r1"


def test_a_pushgateway_password_without_a_scheme_reaches_no_file_of_the_run(
    tiny_fxcache, tiny_params, tmp_path, capsys
):
    out = tmp_path / "out"
    with recording_gateway() as (port, seen), contextlib.redirect_stdout(io.StringIO()) as console:
        code = main(
            train_argv(
                tiny_fxcache,
                out,
                tiny_params,
                *ONE_FOLD,
                "--pushgateway",
                f"push:{PASSWORD}@127.0.0.1:{port}",
            )
        )

    assert code == 0
    assert seen and all(auth and auth.startswith("Basic ") for _, _, auth in seen)
    texts = [console.getvalue(), capsys.readouterr().err] + [
        p.read_text("latin-1") for p in out.rglob("*.json")
    ]
    assert not [t for t in texts if PASSWORD in t]
    assert json.loads((out / "manifest.json").read_text())["config"]["pushgateway"].endswith(
        f"@127.0.0.1:{port}"
    )


def test_mlflows_password_and_its_basic_auth_are_registered_secrets():
    redaction.register_environment({"MLFLOW_TRACKING_USERNAME": "ml", "MLFLOW_TRACKING_PASSWORD": PASSWORD})
    header = base64.b64encode(f"ml:{PASSWORD}".encode()).decode()

    assert (
        scrub_text(f"401 for {PASSWORD} (Authorization: Basic {header})")
        == f"401 for {MASK} (Authorization: Basic {MASK})"
    )


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("push to admin:hunter22@pushgateway:9091 failed", f"push to admin:{MASK}@pushgateway:9091 failed"),
        ("'u:pw99@db:5432'", f"'u:{MASK}@db:5432'"),
        ("mail alice@example.com at 12:30", "mail alice@example.com at 12:30"),
    ],
)
def test_userinfo_without_a_scheme_is_masked_in_free_text(text, shown):
    assert scrub_text(text) == shown


def test_a_short_secret_masks_no_setting_that_spells_it():
    redaction.register(["close"], urls=False)

    assert scrub_record({"eval": {"fill": "close"}, "dir": "/data/closet"}) == {
        "eval": {"fill": "close"},
        "dir": "/data/closet",
    }
    assert scrub_text("password=close") == f"password={MASK}"


def test_a_four_letter_userinfo_masks_no_folder_name():
    redaction.register(["http://abcd@gateway:9091"])

    assert scrub_text("/runs/abcd/fold_0") == "/runs/abcd/fold_0"
    assert scrub_text("token: abcd") == f"token: {MASK}"


def test_a_long_secret_is_masked_as_a_whole_token_only():
    redaction.register(["s3cr3t-value"], urls=False)

    assert scrub_text("key s3cr3t-value, (s3cr3t-value)") == f"key {MASK}, ({MASK})"
    assert scrub_text("xs3cr3t-values") == "xs3cr3t-values"


def test_a_secret_that_spells_a_setting_never_breaks_the_resume(
    one_fold_run, tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    out = copy_run(one_fold_run, tmp_path / "out")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "expanding")  # the folds' default mode, spelt as a secret

    with contextlib.redirect_stdout(io.StringIO()) as console:
        code = main(train_argv(tiny_fxcache, out, tiny_params, *ONE_FOLD))

    assert code == 0, console.getvalue()
    assert "fold 0 skipped" in console.getvalue()
    assert json.loads((out / "manifest.json").read_text())["config"]["folds"]["mode"] == "expanding"


def test_a_manifest_keeps_settings_a_short_secret_spells(tiny_fxcache, tiny_params, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "close")
    out = tmp_path / "out"

    with contextlib.redirect_stdout(io.StringIO()):
        assert main(train_argv(tiny_fxcache, out, tiny_params, *ONE_FOLD)) == 0

    assert json.loads(Path(out / "manifest.json").read_text())["config"]["eval"]["fill"] == "close"
