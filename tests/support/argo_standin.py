"""A recording stand-in for the Argo Server on 127.0.0.1, with the faults a CI network shows.

It answers `POST /api/v1/workflows/{ns}/submit` and `GET /api/v1/workflows/{ns}/{name}` like the
Argo Server; `FakeArgo`'s fields script its answers: a status for the submission, statuses to
answer polls with before the phases, a delay before every answer, a final workflow status, and
the token it accepts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from foxhunt_workflows.commands import add_workflow_commands

WORKFLOW = "train-pipeline-x7k2p"
NAMESPACE = "ci"
TOKEN = "s3cr3t-token"
SUBMIT_PATH = f"/api/v1/workflows/{NAMESPACE}/submit"
GET_PATH = f"/api/v1/workflows/{NAMESPACE}/{WORKFLOW}"
# The data URIs every submission of the pipeline names (they have no default).
DATA = {
    "bars-uri": "s3://ci-data/EURUSD.parquet",
    "fxcache-uri": "s3://ci-data/EURUSD.arrow",
    "output-uri": "s3://ci-runs",
}
DATA_ARGS = tuple(word for name, value in DATA.items() for word in ("-p", f"{name}={value}"))
CI_RUN = (
    "submit",
    "--model",
    "dqn",
    "--epochs",
    "50",
    "--trials",
    "0",
    "--gpu-pool",
    "ci-training-h100",
    *DATA_ARGS,
)
# What the train step reports when it succeeds: Argo's global output parameters.
OUTPUTS = {"summary-uri": "s3://ci-runs/train-pipeline-x7k2p/summary.json", "stitched-sharpe": "1.25"}
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")


@dataclass
class FakeArgo:
    """Records every request; answers submit with a workflow and GET with the next scripted phase."""

    phases: list[str] = field(default_factory=lambda: ["Succeeded"])
    submit_status: int = 200
    poll_statuses: list[int] = field(default_factory=list)
    delay: float = 0.0
    final_status: dict = field(default_factory=dict)
    https_only: bool = False
    requests: list[dict] = field(default_factory=list)
    port: int = 0

    def next_phase(self) -> str:
        return self.phases.pop(0) if len(self.phases) > 1 else self.phases[0]


def _workflow(status: dict, template: str = "train-pipeline") -> dict:
    # As the Argo Server makes a Workflow from a WorkflowTemplate: the spec refers to the template.
    spec = {"workflowTemplateRef": {"name": template}}
    return {"metadata": {"name": WORKFLOW, "namespace": NAMESPACE}, "spec": spec, "status": status}


class ArgoHandler(BaseHTTPRequestHandler):
    """The stand-in's answers; `handler_for` binds it to one FakeArgo."""

    fake: FakeArgo

    def log_message(self, *args) -> None:
        pass

    def reply(self, status: int, body: dict) -> None:
        time.sleep(self.fake.delay)
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def refuse_plain_http(self) -> bool:
        # What Go's TLS server (the Argo Server's) answers a plain-http request with.
        if not self.fake.https_only:
            return False
        payload = b"Client sent an HTTP request to an HTTPS server.\n"
        self.send_response(400)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        return True

    def record(self) -> bool:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        authorization = self.headers.get("Authorization")
        self.fake.requests.append(
            {
                "method": self.command,
                "path": self.path.split("?")[0],
                "authorization": authorization,
                "body": json.loads(body) if body else None,
            }
        )
        if self.refuse_plain_http():
            return False
        if authorization != f"Bearer {TOKEN}":
            self.reply(401, {"code": 16, "message": "token not valid"})
            return False
        return True

    def do_POST(self) -> None:
        if not self.record():
            return
        if self.path != SUBMIT_PATH:
            self.reply(
                404, {"code": 5, "message": 'workflowtemplates.argoproj.io "train-pipeline" not found'}
            )
        elif self.fake.submit_status != 200:
            self.reply(self.fake.submit_status, {"code": 7, "message": "permission denied"})
        else:
            self.reply(200, _workflow({}, self.fake.requests[-1]["body"]["resourceName"]))

    def do_GET(self) -> None:
        if not self.record():
            return
        if self.path.split("?")[0] != GET_PATH:
            self.reply(404, {"code": 5, "message": "not found"})
        elif self.fake.poll_statuses:
            self.reply(self.fake.poll_statuses.pop(0), {"code": 14, "message": "upstream connect error"})
        else:
            phase = self.fake.next_phase()
            final = self.fake.final_status if phase in ("Failed", "Error") else {}
            if phase == "Succeeded":
                outputs = [{"name": k, "value": v} for k, v in OUTPUTS.items()]
                final = {"outputs": {"parameters": outputs}}
            self.reply(200, _workflow({"phase": phase, **final}))


def handler_for(fake: FakeArgo) -> type[BaseHTTPRequestHandler]:
    """`ArgoHandler` answering for `fake`."""
    return type("Handler", (ArgoHandler,), {"fake": fake})


@contextlib.contextmanager
def running_argo(monkeypatch) -> Iterator[FakeArgo]:
    """A FakeArgo on a free port of 127.0.0.1, with the argo CLI's variables pointing at it."""
    fake = FakeArgo()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(fake))
    fake.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    point_argo_cli_at(monkeypatch, fake.port, secure=False)
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def point_argo_cli_at(monkeypatch, port: int, *, secure: bool) -> None:
    """ARGO_SERVER and friends for a stand-in on 127.0.0.1:`port`, with no proxy in between."""
    for proxy in PROXY_VARIABLES:
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setenv("ARGO_SERVER", f"127.0.0.1:{port}")
    monkeypatch.setenv("ARGO_SECURE", "true" if secure else "false")
    monkeypatch.setenv("ARGO_TOKEN", TOKEN)
    monkeypatch.setenv("ARGO_NAMESPACE", NAMESPACE)
    monkeypatch.delenv("ARGO_BASE_HREF", raising=False)


@contextlib.contextmanager
def silent_listener() -> Iterator[socket.socket]:
    """A socket that accepts connections (through the kernel's backlog) and never answers."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        yield listener
    finally:
        listener.close()


def foxhunt(*argv: str) -> int:
    """Run a `foxhunt` workflows command in this process, as the CLI would."""
    parser = argparse.ArgumentParser(prog="foxhunt")
    add_workflow_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(list(argv))
    return args.func(args)


@pytest.fixture
def argo(monkeypatch) -> Iterator[FakeArgo]:
    """The Argo stand-in for one test (a fixture: import it into the test module)."""
    with running_argo(monkeypatch) as fake:
        yield fake


def refused(capsys, *argv: str) -> str:
    """Run a submission that must be refused with exit 2; return its one line of stderr."""
    with pytest.raises(SystemExit) as exit_info:
        foxhunt(*argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2
    assert len(err) == 1, err
    return err[0]


def sent_parameters(argo: FakeArgo) -> list[str]:
    (request,) = argo.requests
    return request["body"]["submitOptions"]["parameters"]
