"""`foxhunt submit` against a recording Argo Server stand-in on 127.0.0.1."""

from __future__ import annotations

import argparse
import json
import shlex
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from foxhunt_workflows.commands import add_workflow_commands
from foxhunt_workflows.submit import ArgoServer, SubmitUsageError

WORKFLOW = "train-pipeline-x7k2p"
NAMESPACE = "ci"
SUBMIT_PATH = f"/api/v1/workflows/{NAMESPACE}/submit"
GET_PATH = f"/api/v1/workflows/{NAMESPACE}/{WORKFLOW}"


@dataclass
class FakeArgo:
    """Records every request; answers submit with a workflow and GET with the next scripted phase."""

    phases: list[str] = field(default_factory=lambda: ["Succeeded"])
    submit_status: int = 200
    requests: list[dict] = field(default_factory=list)
    port: int = 0

    def next_phase(self) -> str:
        return self.phases.pop(0) if len(self.phases) > 1 else self.phases[0]


def handler_for(fake: FakeArgo) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def reply(self, status: int, body: dict) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def record(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            fake.requests.append(
                {
                    "method": self.command,
                    "path": self.path.split("?")[0],
                    "authorization": self.headers.get("Authorization"),
                    "body": json.loads(body) if body else None,
                }
            )

        def do_POST(self) -> None:
            self.record()
            if self.path != SUBMIT_PATH:
                self.reply(404, {"code": 5, "message": "not found"})
            elif fake.submit_status != 200:
                self.reply(fake.submit_status, {"code": 7, "message": "permission denied"})
            else:
                self.reply(200, {"metadata": {"name": WORKFLOW, "namespace": NAMESPACE}, "spec": {}})

        def do_GET(self) -> None:
            self.record()
            if self.path.split("?")[0] != GET_PATH:
                self.reply(404, {"code": 5, "message": "not found"})
                return
            self.reply(200, {"metadata": {"name": WORKFLOW}, "spec": {}, "status": {"phase": fake.next_phase()}})

    return Handler


@pytest.fixture
def argo(monkeypatch) -> Iterator[FakeArgo]:
    fake = FakeArgo()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(fake))
    fake.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setenv("ARGO_SERVER", f"127.0.0.1:{fake.port}")
    monkeypatch.setenv("ARGO_SECURE", "false")
    monkeypatch.setenv("ARGO_TOKEN", "s3cr3t-token")
    monkeypatch.setenv("ARGO_NAMESPACE", NAMESPACE)
    monkeypatch.delenv("ARGO_BASE_HREF", raising=False)
    yield fake
    server.shutdown()
    server.server_close()
    thread.join()


def foxhunt(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="foxhunt")
    add_workflow_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(list(argv))
    return args.func(args)


CI_RUN = ("submit", "--model", "dqn", "--epochs", "50", "--trials", "0", "--gpu-pool", "ci-training-h100")


def test_submit_posts_what_the_argo_server_submit_endpoint_expects(argo):
    assert foxhunt(*CI_RUN, "--param", "max-folds=3") == 0

    (request,) = argo.requests
    assert (request["method"], request["path"]) == ("POST", SUBMIT_PATH)
    assert request["body"] == {
        "namespace": NAMESPACE,
        "resourceKind": "WorkflowTemplate",
        "resourceName": "train-pipeline",
        "submitOptions": {
            "parameters": ["model=dqn", "epochs=50", "trials=0", "gpu-pool=ci-training-h100", "max-folds=3"],
            "labels": "foxhunt.io/submitted-by=foxhunt-cli",
        },
    }


def test_submit_adds_requested_labels(argo):
    foxhunt(*CI_RUN, "--label", "ci.job=1234")

    assert argo.requests[0]["body"]["submitOptions"]["labels"] == "foxhunt.io/submitted-by=foxhunt-cli,ci.job=1234"


@pytest.mark.parametrize("token", ["s3cr3t-token", "Bearer s3cr3t-token"])
def test_submit_sends_the_token_as_one_bearer_header(argo, monkeypatch, token):
    monkeypatch.setenv("ARGO_TOKEN", token)

    foxhunt(*CI_RUN)

    assert argo.requests[0]["authorization"] == "Bearer s3cr3t-token"


def test_submit_prints_the_workflow_name_and_the_equivalent_argo_line(argo, capsys):
    foxhunt(*CI_RUN, "-p", "bars-uri=s3://bars/EUR USD.parquet")

    name, line = capsys.readouterr().out.splitlines()
    assert name == WORKFLOW
    assert shlex.split(line) == [
        "argo", "submit", "--from", "workflowtemplate/train-pipeline", "-n", NAMESPACE,
        "-p", "model=dqn", "-p", "epochs=50", "-p", "trials=0", "-p", "gpu-pool=ci-training-h100",
        "-p", "bars-uri=s3://bars/EUR USD.parquet",
    ]  # fmt: skip


def test_submit_does_not_poll_without_wait(argo):
    foxhunt(*CI_RUN)

    assert [r["method"] for r in argo.requests] == ["POST"]


def test_wait_follows_the_phase_to_success(argo):
    argo.phases = ["Pending", "Running", "Running", "Succeeded"]

    assert foxhunt(*CI_RUN, "--wait", "--poll", "0.01") == 0
    assert [r["path"] for r in argo.requests[1:]] == [GET_PATH] * 4


@pytest.mark.parametrize("final", ["Failed", "Error"])
def test_wait_exits_non_zero_when_the_workflow_fails(argo, final):
    argo.phases = ["Running", final]

    assert foxhunt(*CI_RUN, "--wait", "--poll", "0.01") == 1


def test_wait_gives_up_after_the_timeout(argo, capsys):
    argo.phases = ["Running"]

    assert foxhunt(*CI_RUN, "--wait", "--poll", "0.01", "--timeout", "0.05") == 1
    assert "still running" in capsys.readouterr().err


def test_a_refused_submission_exits_one_with_the_reason(argo, capsys):
    argo.submit_status = 403

    assert foxhunt(*CI_RUN) == 1
    assert "permission denied" in capsys.readouterr().err


def test_trials_above_zero_are_passed_through(argo):
    foxhunt("submit", "--trials", "20")

    assert "trials=20" in argo.requests[0]["body"]["submitOptions"]["parameters"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--param", "seed=1"), "unknown parameter 'seed'"),
        (("--param", "epochs"), "NAME=VALUE"),
        (("--epochs", "0"), "--epochs"),
        (("--wait", "--timeout", "-1"), "--timeout"),
    ],
)
def test_usage_errors_exit_2_with_one_line(argo, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        foxhunt("submit", *argv)

    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert argo.requests == []


def test_missing_argo_server_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.delenv("ARGO_SERVER", raising=False)

    with pytest.raises(SystemExit) as exit_info:
        foxhunt(*CI_RUN)

    assert exit_info.value.code == 2
    assert "ARGO_SERVER" in capsys.readouterr().err


def test_argo_server_is_https_unless_argo_secure_is_false():
    assert ArgoServer.from_env({"ARGO_SERVER": "argo.example:2746"}).url == "https://argo.example:2746/"
    assert ArgoServer.from_env({"ARGO_SERVER": "argo:2746", "ARGO_SECURE": "false"}).url == "http://argo:2746/"


def test_insecure_skip_verify_turns_off_tls_verification():
    server = ArgoServer.from_env({"ARGO_SERVER": "argo:2746", "ARGO_INSECURE_SKIP_VERIFY": "true"})

    assert server.verify_ssl is False


def test_namespace_flag_beats_argo_namespace():
    server = ArgoServer.from_env({"ARGO_SERVER": "argo:2746", "ARGO_NAMESPACE": "argo"}, namespace="ml")

    assert server.namespace == "ml"


def test_argo_server_with_a_scheme_is_refused():
    with pytest.raises(SubmitUsageError, match="host:port"):
        ArgoServer.from_env({"ARGO_SERVER": "https://argo:2746"})
