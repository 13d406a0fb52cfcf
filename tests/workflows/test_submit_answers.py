"""`foxhunt submit` against answers that trickle or have the wrong shape: each ends in time, in one line.

The server is a scripted one on 127.0.0.1 (`support.raw_http`); its trickles stop by themselves
after a few seconds, so an unbounded client makes these tests fail rather than hang.
"""

from __future__ import annotations

import time

import pytest
from support.argo_standin import CI_RUN, NAMESPACE, TOKEN, WORKFLOW, foxhunt, point_argo_cli_at, refused
from support.raw_http import TRICKLED_BODY, TRICKLED_HEADERS, json_answer, scripted_server, trickle

TEMPLATE_REF = {"workflowTemplateRef": {"name": "train-pipeline"}}
CREATED = {"metadata": {"name": WORKFLOW, "namespace": NAMESPACE}, "spec": TEMPLATE_REF}


def finished(status: dict) -> dict:
    return {**CREATED, "status": status}


def run_against(monkeypatch, answers, *argv: str) -> tuple[int, float]:
    with scripted_server(answers) as port:
        point_argo_cli_at(monkeypatch, port, secure=False)
        start = time.monotonic()
        code = foxhunt(*CI_RUN, *argv)
        return code, time.monotonic() - start


def one_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("flag", ["--read-timeout", "--timeout"])
def test_a_body_trickled_a_byte_at_a_time_ends_at_the_flags_time_bound(monkeypatch, capsys, flag):
    code, seconds = run_against(monkeypatch, [trickle(TRICKLED_BODY)], flag, "1")

    assert code == 1
    assert seconds < 3
    assert flag in one_line(capsys)


def test_headers_trickled_a_byte_at_a_time_end_at_the_read_timeout(monkeypatch, capsys):
    code, seconds = run_against(monkeypatch, [trickle(TRICKLED_HEADERS)], "--read-timeout", "1")

    assert code == 1
    assert seconds < 3
    assert "no answer" in one_line(capsys)


def test_wait_on_a_trickled_poll_ends_at_the_command_timeout(monkeypatch, capsys):
    answers = [json_answer(CREATED), trickle(TRICKLED_BODY)]

    code, seconds = run_against(monkeypatch, answers, "--wait", "--timeout", "1.5", "--read-timeout", "0.5")

    assert code == 1
    assert seconds < 3.5
    assert "--timeout" in capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ({"metadata": "x"}, "metadata as str"),
        ({"status": "x"}, "names no workflow"),
        ({"metadata": {"name": "../../kube-system/secrets"}}, "names no workflow"),
        (b"[" * 100_000 + b"]" * 100_000, "nested over"),
        (
            b'{"metadata": {"name": "%s"}, "deep": ' % WORKFLOW.encode() + b"[" * 70 + b"]" * 70 + b"}",
            "nested over",
        ),
    ],
    ids=["metadata-text", "status-text", "name-a-path", "nested-100000", "nested-67"],
)
def test_a_submission_answer_of_the_wrong_shape_is_one_line_exit_1(monkeypatch, capsys, answer, words):
    code, _ = run_against(monkeypatch, [json_answer(answer)])

    assert code == 1
    assert words in one_line(capsys)


@pytest.mark.parametrize(
    ("status", "words"),
    [
        ("x", "status as str"),
        ({"phase": "Failed", "nodes": [{"id": "a"}]}, "status.nodes as list"),
        ({"phase": "Failed", "nodes": {"a": {"type": "Pod", "phase": "Failed", "id": 7}}}, "].id as int"),
        ({"phase": "Succeeded", "outputs": {"parameters": [{"value": "1"}]}}, "without a name"),
        ({"phase": ["Succeeded"]}, "status.phase as list"),
    ],
    ids=["status-text", "nodes-list", "node-id-number", "output-without-name", "phase-list"],
)
def test_a_poll_answer_of_the_wrong_shape_ends_the_wait_in_one_line_exit_1(
    monkeypatch, capsys, status, words
):
    answers = [json_answer(CREATED), json_answer(finished(status))]

    code, _ = run_against(monkeypatch, answers, "--wait", "--poll", "0.01")

    assert code == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert words in last and "watching" in last


def test_server_dry_run_refuses_an_empty_object_as_its_result(monkeypatch, capsys):
    code, _ = run_against(monkeypatch, [json_answer({})], "--server-dry-run")

    assert code == 1
    assert "not a dry run's result" in one_line(capsys)


def test_server_dry_run_accepts_a_workflow_made_from_the_template(monkeypatch, capsys):
    code, _ = run_against(monkeypatch, [json_answer(CREATED)], "--server-dry-run", "-o", "name")

    assert code == 0
    assert capsys.readouterr().out == f"{WORKFLOW}\n"


def test_a_token_the_server_echoes_in_an_error_is_masked(monkeypatch, capsys):
    echo = {"message": f"token not valid: Bearer {TOKEN}; Authorization: Bearer other-secret-9"}
    code, _ = run_against(monkeypatch, [json_answer(echo, status=401)])

    assert code == 1
    line = one_line(capsys)
    assert TOKEN not in line and "other-secret-9" not in line
    assert "Bearer ***" in line


def test_a_token_the_server_echoes_into_the_workflow_is_masked(monkeypatch, capsys):
    echoed = {**CREATED, "metadata": {**CREATED["metadata"], "annotations": {"by": TOKEN}}}
    code, _ = run_against(monkeypatch, [json_answer(echoed)], "-o", "json")

    assert code == 0
    assert TOKEN not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--connect-timeout", "1e308"), ("--read-timeout", "601"), ("--poll", "1e9"), ("--timeout", "1e308")],
)
def test_a_time_flag_past_its_upper_bound_is_refused_before_sending(capsys, flag, value):
    assert f"{flag} must be at most" in refused(capsys, *CI_RUN, flag, value)


@pytest.mark.parametrize(
    "server", ["127.0.0.1:notaport", "127.0.0.1:0", "127.0.0.1:70000", "host:1:2", "host/path:80", ""]
)
def test_a_bad_argo_server_is_refused_in_one_line_exit_2(monkeypatch, capsys, server):
    monkeypatch.setenv("ARGO_SERVER", server)

    assert "ARGO_SERVER" in refused(capsys, *CI_RUN)


def test_credentials_in_argo_server_are_refused_without_echoing_them(monkeypatch, capsys):
    monkeypatch.setenv("ARGO_SERVER", "user:hunter22@127.0.0.1:2746")

    line = refused(capsys, *CI_RUN)
    assert "ARGO_TOKEN" in line and "hunter22" not in line


@pytest.mark.parametrize("server", ["argo.example.com:2746", "[::1]:2746", "argo-server"])
def test_a_good_argo_server_is_read_as_host_and_port(monkeypatch, server):
    from foxhunt_workflows.argo_api import ArgoServer

    assert ArgoServer.from_env({"ARGO_SERVER": server}).url == f"https://{server}/"
