"""`foxhunt submit` when the network or the server misbehaves: each case ends in time, in one line."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from support.argo_standin import (
    CI_RUN,
    NAMESPACE,
    WORKFLOW,
    FakeArgo,
    foxhunt,
    point_argo_cli_at,
    running_argo,
    silent_listener,
)


@pytest.fixture
def argo(monkeypatch) -> Iterator[FakeArgo]:
    with running_argo(monkeypatch) as fake:
        yield fake


def timed(*argv: str) -> tuple[int, float]:
    start = time.monotonic()
    code = foxhunt(*argv)
    return code, time.monotonic() - start


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_server_that_never_answers_ends_at_the_read_timeout(monkeypatch, capsys):
    with silent_listener() as listener:
        point_argo_cli_at(monkeypatch, listener.getsockname()[1], secure=False)
        code, seconds = timed(*CI_RUN, "--read-timeout", "0.3")

    assert code == 1
    assert seconds < 3
    assert "no answer" in one_line(capsys.readouterr().err)


def test_a_server_that_never_answers_ends_at_the_command_timeout(monkeypatch, capsys):
    with silent_listener() as listener:
        point_argo_cli_at(monkeypatch, listener.getsockname()[1], secure=False)
        code, seconds = timed(*CI_RUN, "--timeout", "0.4")

    assert code == 1
    assert 0.3 < seconds < 3
    assert "--timeout" in one_line(capsys.readouterr().err)


def test_a_slow_answer_past_the_read_timeout_fails_in_time(argo, capsys):
    argo.delay = 1.5

    code, seconds = timed(*CI_RUN, "--read-timeout", "0.2")

    assert code == 1
    assert seconds < 1.4
    assert "no answer" in one_line(capsys.readouterr().err)


def test_a_slow_answer_within_the_read_timeout_succeeds(argo, capsys):
    argo.delay = 0.2

    assert foxhunt(*CI_RUN, "--read-timeout", "5", "-o", "name") == 0
    assert capsys.readouterr().out == f"{WORKFLOW}\n"


def test_wait_outlasts_one_502_from_a_proxy(argo, capsys):
    argo.poll_statuses = [502]
    argo.phases = ["Running", "Succeeded"]

    assert foxhunt(*CI_RUN, "--wait", "--poll", "0.01") == 0
    assert [r["method"] for r in argo.requests] == ["POST", "GET", "GET", "GET"]
    assert "502" in capsys.readouterr().err


def test_wait_gives_up_after_many_5xx_in_a_row(argo, capsys):
    argo.poll_statuses = [503] * 20

    assert foxhunt(*CI_RUN, "--wait", "--poll", "0.001") == 1
    assert "gave up after 9 tries" in capsys.readouterr().err


def test_wait_is_bounded_by_the_command_timeout_while_the_server_is_slow(argo):
    argo.phases = ["Running"]
    argo.delay = 0.3

    code, seconds = timed(*CI_RUN, "--wait", "--poll", "0.05", "--timeout", "1")

    assert code == 1
    assert seconds < 3


def test_a_failed_workflow_prints_its_message_the_failed_step_and_the_logs_command(argo, capsys):
    argo.phases = ["Running", "Failed"]
    argo.final_status = {
        "message": "child 'train-pipeline-x7k2p-2786001423' failed",
        "nodes": {
            "train-pipeline-x7k2p": {"id": "train-pipeline-x7k2p", "type": "DAG", "phase": "Failed"},
            "train-pipeline-x7k2p-2786001423": {
                "id": "train-pipeline-x7k2p-2786001423",
                "displayName": "train(0)",
                "type": "Pod",
                "phase": "Failed",
                "message": "Error (exit code 1)",
                "templateRef": {"name": "train", "template": "train"},
                "finishedAt": "2024-06-01T12:00:00Z",
            },
        },
    }

    assert foxhunt(*CI_RUN, "--wait", "--poll", "0.01") == 1
    err = capsys.readouterr().err
    assert "child 'train-pipeline-x7k2p-2786001423' failed" in err
    assert "failed step: train(0): Error (exit code 1)" in err
    assert f"argo logs -n {NAMESPACE} {WORKFLOW} {WORKFLOW}-train-2786001423" in err


def test_a_wrong_token_is_one_line_naming_argo_token(argo, monkeypatch, capsys):
    monkeypatch.setenv("ARGO_TOKEN", "expired-token")

    assert foxhunt(*CI_RUN) == 1
    line = one_line(capsys.readouterr().err)
    assert "401" in line and "ARGO_TOKEN" in line


def test_a_wrong_namespace_is_one_line_naming_argo_namespace(argo, capsys):
    assert foxhunt(*CI_RUN, "-n", "ml-typo") == 1
    line = one_line(capsys.readouterr().err)
    assert "ml-typo" in line and "ARGO_NAMESPACE" in line


def test_https_to_a_plain_http_server_says_to_set_argo_secure_false(argo, monkeypatch, capsys):
    monkeypatch.setenv("ARGO_SECURE", "true")

    assert foxhunt(*CI_RUN) == 1
    assert "ARGO_SECURE=false" in one_line(capsys.readouterr().err)


def test_http_to_an_https_server_says_to_use_https(argo, capsys):
    argo.https_only = True

    assert foxhunt(*CI_RUN) == 1
    assert "ARGO_SECURE" in one_line(capsys.readouterr().err)


def test_an_unreachable_server_is_one_line_after_a_few_tries(monkeypatch, capsys):
    with silent_listener() as listener:
        port = listener.getsockname()[1]
    point_argo_cli_at(monkeypatch, port, secure=False)

    code, seconds = timed(*CI_RUN, "--timeout", "10")

    assert code == 1
    assert seconds < 8
    assert "cannot connect" in one_line(capsys.readouterr().err)
