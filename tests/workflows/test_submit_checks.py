"""`foxhunt submit` checks its parameters against the template before any request, and prints for scripts."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator

import pytest
import yaml
from support.argo_standin import CI_RUN, NAMESPACE, WORKFLOW, FakeArgo, foxhunt, running_argo

from foxhunt_workflows.arguments import SubmitUsageError, TemplateParameters, check_parameters
from foxhunt_workflows.render import shipped_template

STUDY = ("-p", "study-storage-secret=foxhunt-study")


@pytest.fixture
def argo(monkeypatch) -> Iterator[FakeArgo]:
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


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("-p", "window=sliding"), "window='sliding' is not one of rolling, expanding"),
        (("-p", "log-format=xml"), "log-format='xml' is not one of text, json"),
        (("-p", "epochs=abc"), "epochs='abc' is not an integer"),
        (("-p", "max-folds=2.5"), "max-folds='2.5' is not an integer"),
        (("-p", "train-days=ninety"), "train-days='ninety' is not a number"),
        (("-p", "eval-cost=nan"), "eval-cost='nan' is not a finite number"),
        (("-p", "dqn-params={lr: 1}"), "dqn-params='{lr: 1}' is not valid JSON"),
        (("-p", "dqn-params=[1, 2]"), "dqn-params='[1, 2]' is not a JSON object"),
        (("-p", "windw=rolling"), "unknown parameter 'windw'"),
        (("--trials", "20"), "trials=20 needs a study storage"),
        (("-p", "trials=5", "-p", "study-storage-secret= "), "trials=5 needs a study storage"),
        (("--trials", "2", *STUDY, "-p", "trial-workers=0"), "needs trial-workers of 1 or more"),
        (("--trials", "2", *STUDY, "-p", "trial-population=0"), "trial-population=0: expected 1 to 16"),
        (("--trials", "2", *STUDY, "-p", "trial-population=17"), "trial-population=17: expected 1 to 16"),
    ],
)
def test_bad_parameters_are_refused_before_any_request(argo, capsys, argv, message):
    assert message in refused(capsys, "submit", *argv)
    assert argo.requests == []


def test_trials_with_a_study_storage_secret_are_submitted(argo):
    assert foxhunt("submit", "--trials", "20", *STUDY, "-p", "trial-workers=4") == 0

    assert sent_parameters(argo) == ["trials=20", "study-storage-secret=foxhunt-study", "trial-workers=4"]


def test_the_checks_come_from_the_template_they_are_given():
    template = copy.deepcopy(shipped_template("train-pipeline"))
    window = next(p for p in template["spec"]["arguments"]["parameters"] if p["name"] == "window")
    window["enum"] = ["rolling", "expanding", "anchored"]
    spec = TemplateParameters.from_document(template)

    check_parameters({"window": "anchored"}, spec)
    with pytest.raises(SubmitUsageError, match="not one of"):
        check_parameters(
            {"window": "anchored"}, TemplateParameters.from_document(shipped_template("train-pipeline"))
        )


def test_a_template_without_study_storage_takes_trials_alone():
    train = TemplateParameters.from_document(shipped_template("train"))

    check_parameters({"trials": "20"}, train)


def test_dry_run_prints_the_workflow_and_sends_nothing(argo, capsys):
    assert foxhunt(*CI_RUN, "-p", "seed=7", "-l", "ci.job=42", "--dry-run") == 0

    workflow = yaml.safe_load(capsys.readouterr().out)
    assert argo.requests == []
    assert workflow["kind"] == "Workflow"
    assert workflow["metadata"]["namespace"] == NAMESPACE
    assert workflow["metadata"]["labels"] == {"foxhunt.io/submitted-by": "foxhunt-cli", "ci.job": "42"}
    assert workflow["spec"]["workflowTemplateRef"] == {"name": "train-pipeline"}
    assert {"name": "seed", "value": "7"} in workflow["spec"]["arguments"]["parameters"]


def test_dry_run_checks_too(argo, capsys):
    assert "is not an integer" in refused(capsys, "submit", "-p", "seed=x", "--dry-run")
    assert argo.requests == []


def test_dry_run_needs_no_argo_server(monkeypatch, capsys):
    monkeypatch.delenv("ARGO_SERVER", raising=False)

    assert foxhunt(*CI_RUN, "--dry-run", "-o", "json") == 0
    assert json.loads(capsys.readouterr().out)["spec"]["workflowTemplateRef"]["name"] == "train-pipeline"


def test_output_name_prints_exactly_one_line(argo, capsys):
    assert foxhunt(*CI_RUN, "-o", "name") == 0

    assert capsys.readouterr().out == f"{WORKFLOW}\n"


def test_output_json_prints_the_created_workflow(argo, capsys):
    assert foxhunt(*CI_RUN, "-o", "json") == 0

    assert json.loads(capsys.readouterr().out)["metadata"] == {"name": WORKFLOW, "namespace": NAMESPACE}


def test_parameter_file_in_yaml_with_nested_settings(argo, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("epochs: 7\nwindow: expanding\ndqn-params:\n  lr: 0.001\n  hidden: 128\n")

    assert foxhunt("submit", "-f", str(path)) == 0
    assert sent_parameters(argo) == ["epochs=7", "window=expanding", 'dqn-params={"lr":0.001,"hidden":128}']


def test_parameter_file_in_json_and_flags_and_p_win_over_it(argo, tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"epochs": 7, "seed": 3, "window": "expanding"}))

    assert foxhunt("submit", "-f", str(path), "--epochs", "9", "-p", "seed=4") == 0
    assert sent_parameters(argo) == ["epochs=9", "seed=4", "window=expanding"]


def test_parameter_file_values_are_checked(argo, capsys, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("window: sliding\n")

    assert "window='sliding'" in refused(capsys, "submit", "-f", str(path))
    assert argo.requests == []


@pytest.mark.parametrize(
    ("text", "message"),
    [("epochs: [1\n", "not valid YAML or JSON (line 2)"), ("- epochs\n", "expected a mapping")],
)
def test_a_malformed_parameter_file_is_one_line(argo, capsys, tmp_path, text, message):
    path = tmp_path / "run.yaml"
    path.write_text(text)

    assert message in refused(capsys, "submit", "-f", str(path))


def test_a_missing_parameter_file_is_one_line(argo, capsys, tmp_path):
    assert "cannot read the parameter file" in refused(capsys, "submit", "-f", str(tmp_path / "nope.yaml"))
