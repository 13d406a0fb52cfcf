"""`foxhunt submit` against a recording Argo Server stand-in on 127.0.0.1."""

from __future__ import annotations

import shlex
from collections.abc import Iterator

import pytest
from support.argo_standin import (
    CI_RUN,
    DATA,
    DATA_ARGS,
    GET_PATH,
    NAMESPACE,
    SUBMIT_PATH,
    WORKFLOW,
    FakeArgo,
    foxhunt,
    running_argo,
)

from foxhunt_workflows.submit import ArgoServer, SubmitUsageError


@pytest.fixture
def argo(monkeypatch) -> Iterator[FakeArgo]:
    with running_argo(monkeypatch) as fake:
        yield fake


def test_submit_posts_what_the_argo_server_submit_endpoint_expects(argo):
    assert foxhunt(*CI_RUN, "--param", "max-folds=3") == 0

    (request,) = argo.requests
    assert (request["method"], request["path"]) == ("POST", SUBMIT_PATH)
    assert request["body"] == {
        "namespace": NAMESPACE,
        "resourceKind": "WorkflowTemplate",
        "resourceName": "train-pipeline",
        "submitOptions": {
            "parameters": [
                "model=dqn",
                "epochs=50",
                "trials=0",
                "gpu-pool=ci-training-h100",
                *(f"{name}={value}" for name, value in DATA.items()),
                "max-folds=3",
            ],  # fmt: skip
            "labels": "foxhunt.io/submitted-by=foxhunt-cli",
        },
    }


def test_submit_adds_requested_labels(argo):
    foxhunt(*CI_RUN, "--label", "ci.job=1234")

    assert (
        argo.requests[0]["body"]["submitOptions"]["labels"]
        == "foxhunt.io/submitted-by=foxhunt-cli,ci.job=1234"
    )


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
        "-p", "bars-uri=s3://bars/EUR USD.parquet", "-p", f"fxcache-uri={DATA['fxcache-uri']}",
        "-p", f"output-uri={DATA['output-uri']}",
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
    foxhunt("submit", "--trials", "20", "-p", "study-storage-secret=foxhunt-study", *DATA_ARGS)

    assert "trials=20" in argo.requests[0]["body"]["submitOptions"]["parameters"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--param", "sede=1"), "unknown parameter 'sede'"),
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
    assert (
        ArgoServer.from_env({"ARGO_SERVER": "argo:2746", "ARGO_SECURE": "false"}).url == "http://argo:2746/"
    )


def test_insecure_skip_verify_turns_off_tls_verification():
    server = ArgoServer.from_env({"ARGO_SERVER": "argo:2746", "ARGO_INSECURE_SKIP_VERIFY": "true"})

    assert server.verify_ssl is False


def test_namespace_flag_beats_argo_namespace():
    server = ArgoServer.from_env({"ARGO_SERVER": "argo:2746", "ARGO_NAMESPACE": "argo"}, namespace="ml")

    assert server.namespace == "ml"


def test_argo_server_with_a_scheme_is_refused():
    with pytest.raises(SubmitUsageError, match="host:port"):
        ArgoServer.from_env({"ARGO_SERVER": "https://argo:2746"})
