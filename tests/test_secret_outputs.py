"""A password planted in every form a URL can carry it reaches no output: not the console, not a log
line, not an error, not a file in --out, not Argo's step outputs.

Forms: userinfo (plain, with `@`, with reserved characters not percent-encoded), a `password` query
parameter, a token as the whole userinfo, and URLs that are no URLs. Places: the Pushgateway, the
study storage (the suite's real PostgreSQL, which accepts any password), the S3 endpoint.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from foxhunt import redaction
from foxhunt.cli import main

MARK = "pl4nted"
RUN = ("--epochs", "1", "--train-days", "5", "--val-days", "2", "--step-days", "2", "--max-folds", "1")
RUN += ("--seed", "11", "--device", "cpu")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    """No inherited Pushgateway or run id; Argo's step outputs written where the test reads them."""
    for name in ("FOXHUNT_PUSHGATEWAY", "FOXHUNT_RUN_ID", "ARGO_WORKFLOW_NAME", "FOXHUNT_STUDY_STORAGE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FOXHUNT_OUTPUTS_DIR", str(tmp_path / "argo-outputs"))
    monkeypatch.setattr(redaction, "_registered", set())  # each case registers its own


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def leaks(tmp_path: Path, streams: str) -> list[str]:
    """Every place under tmp_path (file names and bytes) and in `streams` where the planted marker shows."""
    found = [f"stream: {line}" for line in streams.splitlines() if MARK in line]
    for path in tmp_path.rglob("*"):
        if MARK in path.name:
            found.append(f"name: {path}")
        elif path.is_file() and MARK.encode() in path.read_bytes():
            found.append(f"file: {path}")
    return found


@pytest.fixture
def run(capsys, caplog):
    """`foxhunt ARGV` in this process: its exit code, and stdout, stderr and every log line together."""

    def run_main(argv: list[str]) -> tuple[int, str]:
        caplog.set_level("DEBUG")
        code = main(argv)
        captured = capsys.readouterr()
        return code, captured.out + captured.err + caplog.text

    return run_main


def train_argv(tiny_fxcache, tiny_params, out: Path, *extra: str) -> list[str]:
    base = ["train", "--fxcache", str(tiny_fxcache), "--out", str(out), "--hyperopt-params", str(tiny_params)]
    return [*base, *RUN, *extra]


@pytest.mark.parametrize(
    "userinfo",
    [f"push:{MARK}", f"push:p@ss-{MARK}", f"{MARK}-token"],
    ids=["password", "password-with-at", "token-as-user"],
)
def test_a_pushgateway_password_reaches_no_output(userinfo, tiny_fxcache, tiny_params, tmp_path, run):
    url = f"http://{userinfo}@127.0.0.1:{closed_port()}/?token=t-{MARK}"
    code, streams = run(train_argv(tiny_fxcache, tiny_params, tmp_path / "out", "--pushgateway", url))
    assert code == 0, streams
    assert "push:***@127.0.0.1" in streams or "***@127.0.0.1" in streams  # the failed pushes are named
    assert (tmp_path / "out" / "manifest.json").exists()
    assert leaks(tmp_path, streams) == []


@pytest.mark.parametrize(
    "url",
    [f"http://push:p/{MARK}@127.0.0.1:9091", f"http://push:{MARK}#x@127.0.0.1:9091", f"not a url {MARK}"],
    ids=["slash-in-password", "hash-in-password", "no-url"],
)
def test_a_malformed_pushgateway_url_exits_2_without_its_password(
    url, tiny_fxcache, tiny_params, tmp_path, run
):
    code, streams = run(train_argv(tiny_fxcache, tiny_params, tmp_path / "out", "--pushgateway", url))
    assert code == 2 and "pushgateway" in streams
    assert leaks(tmp_path, streams) == [] and not (tmp_path / "out").exists()


def study_urls(postgres_server) -> list[str]:
    port = postgres_server.port
    return [
        f"postgresql://postgres:p%40ss-{MARK}@127.0.0.1:{port}/postgres",
        f"postgresql://postgres@127.0.0.1:{port}/postgres?password=q-{MARK}",
    ]


@pytest.mark.parametrize("form", [0, 1], ids=["encoded-at-in-password", "password-query"])
def test_a_study_storage_password_reaches_no_output(
    form, postgres_server, tiny_fxcache, tiny_params, tmp_path, run
):
    url = study_urls(postgres_server)[form]
    extra = ("--trials", "1", "--study-storage", url, "--study-name", f"secret-{form}")
    code, streams = run(train_argv(tiny_fxcache, tiny_params, tmp_path / "out", *extra))
    assert code == 0, streams
    assert (tmp_path / "out" / "trials.json").exists()
    assert leaks(tmp_path, streams) == []


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://u:pw/{MARK}@127.0.0.1:notaport/db",
        f"postgresql://postgres:p@ss-{MARK}@127.0.0.1:{{port}}/postgres",
        f"postgresql://u:{MARK}@127.0.0.1:{{port}}/no_such_database",
        f"pg:/u:{MARK}@",
    ],
    ids=["malformed", "bare-at-in-password", "unusable", "no-url"],
)
def test_a_study_storage_that_fails_names_it_without_its_password(
    url, postgres_server, tiny_fxcache, tiny_params, tmp_path, run
):
    url = url.replace("{port}", str(postgres_server.port))
    extra = ("--trials", "1", "--study-storage", url, "--study-name", "s")
    code, streams = run(train_argv(tiny_fxcache, tiny_params, tmp_path / "out", *extra))
    assert code in (1, 2) and "study storage" in streams
    assert leaks(tmp_path, streams) == []


def test_an_s3_endpoint_password_reaches_no_output(tiny_fxcache, tiny_params, tmp_path, monkeypatch, run):
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://key:{MARK}@127.0.0.1:{closed_port()}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", f"secret-{MARK}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("FOXHUNT_S3_ATTEMPTS", "2")  # the final error, after one retry, is what must not leak
    code, streams = run(train_argv(tiny_fxcache, tiny_params, "s3://bucket/out"))  # type: ignore[arg-type]
    assert code in (1, 2) and streams.strip()
    assert leaks(tmp_path, streams) == []
