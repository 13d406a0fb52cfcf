"""What `foxhunt submit` prints for scripts (-o, --wait, dry runs), the templates it submits (--from), and -f files."""

from __future__ import annotations

import json

import pytest
import yaml
from support.argo_standin import (
    CI_RUN,
    DATA,
    DATA_ARGS,
    NAMESPACE,
    OUTPUTS,
    WORKFLOW,
    foxhunt,
    refused,
    sent_parameters,
)

TRAIN_DATA = ("-p", f"fxcache-uri={DATA['fxcache-uri']}", "-p", "output-uri=s3://ci-runs/one")


def test_dry_run_prints_the_workflow_and_sends_nothing(argo, capsys):
    assert foxhunt(*CI_RUN, "-p", "seed=7", "-l", "ci.job=42", "--dry-run") == 0

    workflow = yaml.safe_load(capsys.readouterr().out)
    assert argo.requests == []
    assert workflow["kind"] == "Workflow"
    assert workflow["metadata"]["namespace"] == NAMESPACE
    assert workflow["metadata"]["labels"] == {"foxhunt.io/submitted-by": "foxhunt-cli", "ci.job": "42"}
    assert workflow["spec"]["workflowTemplateRef"] == {"name": "train-pipeline"}
    assert {"name": "seed", "value": "7"} in workflow["spec"]["arguments"]["parameters"]


def test_dry_run_needs_no_argo_server(monkeypatch, capsys):
    monkeypatch.delenv("ARGO_SERVER", raising=False)

    assert foxhunt(*CI_RUN, "--dry-run", "-o", "json") == 0
    assert json.loads(capsys.readouterr().out)["spec"]["workflowTemplateRef"]["name"] == "train-pipeline"


def test_from_train_renders_a_workflow_of_the_train_template(argo, capsys):
    assert foxhunt("submit", "--from", "train", "--epochs", "3", *TRAIN_DATA, "--dry-run", "-o", "json") == 0

    workflow = json.loads(capsys.readouterr().out)
    assert workflow["metadata"]["generateName"] == "train-"
    assert workflow["spec"]["workflowTemplateRef"] == {"name": "train"}
    assert workflow["spec"]["arguments"]["parameters"] == [
        {"name": "epochs", "value": "3"},
        {"name": "fxcache-uri", "value": DATA["fxcache-uri"]},
        {"name": "output-uri", "value": "s3://ci-runs/one"},
    ]


def test_from_train_checks_against_the_train_template(argo, capsys):
    message = refused(capsys, "submit", "--from", "train", *DATA_ARGS, "--dry-run")

    assert "unknown parameter 'bars-uri'" in message and "train takes: fxcache-uri, output-uri," in message


def test_from_train_submits_the_train_template(argo):
    assert foxhunt("submit", "--from", "train", *TRAIN_DATA) == 0

    assert argo.requests[0]["body"]["resourceName"] == "train"


def test_from_precompute_features_takes_only_its_own_parameters(argo, capsys):
    argv = ("submit", "--from", "precompute-features", "-p", f"bars-uri={DATA['bars-uri']}")
    assert foxhunt(*argv, "-p", f"fxcache-uri={DATA['fxcache-uri']}") == 0
    assert argo.requests[0]["body"]["resourceName"] == "precompute-features"

    assert "unknown parameter 'epochs'" in refused(capsys, *argv, "--epochs", "5")


def test_output_name_prints_exactly_one_line(argo, capsys):
    assert foxhunt(*CI_RUN, "-o", "name") == 0

    assert capsys.readouterr().out == f"{WORKFLOW}\n"


def test_output_json_prints_the_created_workflow(argo, capsys):
    assert foxhunt(*CI_RUN, "-o", "json") == 0

    assert json.loads(capsys.readouterr().out)["metadata"] == {"name": WORKFLOW, "namespace": NAMESPACE}


def test_output_yaml_prints_the_created_workflow(argo, capsys):
    assert foxhunt(*CI_RUN, "-o", "yaml") == 0

    assert yaml.safe_load(capsys.readouterr().out)["metadata"] == {"name": WORKFLOW, "namespace": NAMESPACE}


def test_wait_prints_the_finished_workflows_outputs_as_json_on_stdout(argo, capsys):
    argo.phases = ["Running", "Succeeded"]

    assert foxhunt(*CI_RUN, "--wait", "--poll", "0.01") == 0

    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "name": WORKFLOW,
        "namespace": NAMESPACE,
        "phase": "Succeeded",
        "outputs": OUTPUTS,
    }
    assert f"{WORKFLOW}: Succeeded" in err and "argo submit --from" in err


def test_wait_prints_the_failed_phase_as_json_and_exits_1(argo, capsys):
    argo.phases = ["Failed"]

    assert foxhunt(*CI_RUN, "--wait", "--poll", "0.01") == 1

    assert json.loads(capsys.readouterr().out)["phase"] == "Failed"


@pytest.mark.parametrize(("output", "load"), [("json", json.loads), ("yaml", yaml.safe_load)])
def test_wait_with_output_prints_the_finished_workflow(argo, capsys, output, load):
    argo.phases = ["Running", "Succeeded"]

    assert foxhunt(*CI_RUN, "--wait", "--poll", "0.01", "-o", output) == 0

    finished = load(capsys.readouterr().out)
    assert finished["status"]["phase"] == "Succeeded"
    assert finished["status"]["outputs"]["parameters"][0] == {
        "name": "summary-uri",
        "value": OUTPUTS["summary-uri"],
    }


def test_server_dry_run_asks_the_server_to_create_nothing(argo, capsys):
    assert foxhunt(*CI_RUN, "--server-dry-run", "-o", "json") == 0

    (request,) = argo.requests
    assert request["body"]["submitOptions"]["serverDryRun"] is True
    assert json.loads(capsys.readouterr().out)["metadata"]["name"] == WORKFLOW


def test_a_server_that_refuses_a_server_dry_run_says_so_in_one_line(argo, capsys):
    argo.submit_status = 400

    assert foxhunt(*CI_RUN, "--server-dry-run") == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.endswith("(with --server-dry-run: the server may not support server-side dry runs)")


def test_a_plain_submission_is_no_server_dry_run(argo):
    assert foxhunt(*CI_RUN) == 0

    assert "serverDryRun" not in argo.requests[0]["body"]["submitOptions"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--dry-run", "--server-dry-run"), "choose one"),
        (("--server-dry-run", "--wait"), "a dry run creates no workflow to wait for"),
        (("--dry-run", "-o", "name"), "has no name"),
        (("-n", "ml/../kube-system"), "-n 'ml/../kube-system': a namespace is at most 63 lower-case"),
        (("--poll", "inf", "--wait"), "--poll must be a positive number of seconds, got inf"),
        (("--timeout", "nan"), "--timeout must be a positive number of seconds, got nan"),
    ],
)
def test_options_that_contradict_each_other_are_refused(argo, capsys, argv, message):
    assert message in refused(capsys, *CI_RUN, *argv)
    assert argo.requests == []


def test_parameter_file_in_yaml_with_nested_settings(argo, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("epochs: 7\nwindow: expanding\ndqn-params:\n  lr: 0.001\n  hidden: 128\n")

    assert foxhunt("submit", "-f", str(path), *DATA_ARGS) == 0
    assert sent_parameters(argo)[:3] == [
        "epochs=7",
        "window=expanding",
        'dqn-params={"lr":0.001,"hidden":128}',
    ]


def test_a_parameter_files_true_and_false_are_sent_as_yaml_writes_them(argo, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("gpu-pool: true\nstudy-storage-secret: false\n")

    assert foxhunt("submit", "-f", str(path), *DATA_ARGS) == 0
    assert sent_parameters(argo)[:2] == ["gpu-pool=true", "study-storage-secret=false"]


def test_parameter_file_in_json_and_flags_and_p_win_over_it(argo, tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"epochs": 7, "seed": 3, "window": "expanding", **DATA}))

    assert foxhunt("submit", "-f", str(path), "--epochs", "9", "-p", "seed=4") == 0
    assert sent_parameters(argo)[:3] == ["epochs=9", "seed=4", "window=expanding"]


def test_a_parameter_files_bad_value_is_named_with_the_file(argo, capsys, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("epochs: 0\n")

    assert f"{path}: epochs='0': must be an integer in [1, 100000]" in refused(
        capsys, "submit", "-f", str(path)
    )
    assert argo.requests == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("epochs: [1\n", "not valid YAML or JSON (line 2)"),
        ("- epochs\n", "expected a mapping"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "not a YAML or JSON text file (not UTF-8; binary?)"),
        (b"epochs: 1\x00\n", "not valid YAML or JSON"),
        ("dqn-params: " + "[" * 600 + "]" * 600 + "\n", "nested too deeply"),
    ],
    ids=["unclosed", "a-list", "binary", "nul-byte", "deep"],
)
def test_an_unreadable_parameter_file_is_one_line(argo, capsys, tmp_path, content, message):
    path = tmp_path / "run.yaml"
    path.write_bytes(content.encode() if isinstance(content, str) else content)

    assert message in refused(capsys, "submit", "-f", str(path))
    assert argo.requests == []


def test_a_missing_parameter_file_is_one_line(argo, capsys, tmp_path):
    assert "cannot read the parameter file: no such file" in refused(
        capsys, "submit", "-f", str(tmp_path / "nope.yaml")
    )


def test_a_folder_as_parameter_file_is_one_line(argo, capsys, tmp_path):
    assert "cannot read the parameter file: not a regular file" in refused(
        capsys, "submit", "-f", str(tmp_path)
    )


def test_a_bad_argo_namespace_is_refused_before_any_request(argo, capsys, monkeypatch):
    monkeypatch.setenv("ARGO_NAMESPACE", "Team A")

    assert "ARGO_NAMESPACE 'Team A': a namespace" in refused(capsys, *CI_RUN)
    assert argo.requests == []
