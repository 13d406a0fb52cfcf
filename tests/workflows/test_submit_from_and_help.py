"""`submit --from` in argo's own form, and `submit --help`'s list of every template parameter."""

from __future__ import annotations

import argparse
import json
import re

import pytest
from support.argo_standin import DATA, foxhunt, refused

from foxhunt_workflows.commands import add_workflow_commands
from foxhunt_workflows.render import shipped_template

TRAIN_DATA = ("-p", f"fxcache-uri={DATA['fxcache-uri']}", "-p", "output-uri=s3://ci-runs/one")
TEMPLATES = ("train-pipeline", "train", "precompute-features")


def submit_help() -> str:
    parser = argparse.ArgumentParser(prog="foxhunt")
    add_workflow_commands(parser.add_subparsers(dest="command"))
    (submit,) = [a for a in parser._subparsers._group_actions if "submit" in a.choices]  # type: ignore[union-attr]
    return submit.choices["submit"].format_help()


def dry_run_template(capsys, source: str) -> str:
    assert foxhunt("submit", "--from", source, *TRAIN_DATA, "--dry-run", "-o", "json") == 0
    return json.loads(capsys.readouterr().out)["spec"]["workflowTemplateRef"]["name"]


@pytest.mark.parametrize(
    "source", ["workflowtemplate/train", "train", "WorkflowTemplate/train", "wftmpl/train"]
)
def test_from_takes_argos_workflowtemplate_form_and_the_bare_name(capsys, monkeypatch, source):
    monkeypatch.setenv("ARGO_NAMESPACE", "ci")

    assert dry_run_template(capsys, source) == "train"


@pytest.mark.parametrize("source", ["clusterworkflowtemplate/train", "cronwf/nightly", "cwftmpl/train"])
def test_from_refuses_another_kind_of_template_in_one_line(capsys, source):
    line = refused(capsys, "submit", "--from", source, *TRAIN_DATA, "--dry-run")

    assert line == (
        f"foxhunt submit: error: --from {source}: foxhunt submits WorkflowTemplates only "
        f"(workflowtemplate/NAME or NAME), not a {source.split('/')[0]}"
    )


@pytest.mark.parametrize("source", ["workflowtemplate/trian", "trian"])
def test_from_refuses_a_template_foxhunt_does_not_ship(capsys, source):
    line = refused(capsys, "submit", "--from", source, *TRAIN_DATA, "--dry-run")

    assert line.endswith(
        f"--from {source}: no template 'trian'; one of train-pipeline, train, precompute-features"
    )


def listed_parameters(text: str) -> dict[str, tuple[str | None, str]]:
    """From `submit --help`: each listed parameter's shown default (None: required) and description."""
    section = text.split("parameters of train-pipeline", 1)[1].split("\n--from ", 1)[0]
    listed: dict[str, tuple[str | None, str]] = {}
    name = ""
    for line in section.splitlines()[1:]:
        entry = re.fullmatch(r"  ([a-z][a-z-]*)(?:=(.*)| \(required\))", line)
        if entry:
            name = entry.group(1)
            listed[name] = (entry.group(2), "")
        else:
            default, description = listed[name]
            listed[name] = (default, f"{description} {line.strip()}".strip())
    return listed


def test_help_lists_every_pipeline_parameter_with_its_default_and_description():
    rendered = shipped_template("train-pipeline")["spec"]["arguments"]["parameters"]
    listed = listed_parameters(submit_help())

    assert list(listed) == [p["name"] for p in rendered]
    for p in rendered:
        default, description = listed[p["name"]]
        assert description == p["description"]
        if "value" not in p:
            assert default is None
        elif default is not None and default.endswith("..."):
            assert p["value"].startswith(default.removesuffix("...")) and len(p["value"]) > 60
        else:
            assert default == p["value"]


def test_help_names_the_allowed_values_of_every_enumerated_parameter():
    rendered = shipped_template("train-pipeline")["spec"]["arguments"]["parameters"]
    listed = listed_parameters(submit_help())
    enumerated = [p for p in rendered if "enum" in p]

    assert {p["name"] for p in enumerated} >= {"model", "window", "log-format"}
    for p in enumerated:
        assert f"one of {', '.join(p['enum'])}" in listed[p["name"]][1]


def single_step_listing(text: str, template: str) -> list[str]:
    """From `submit --help`: the names after "--from TEMPLATE takes:", up to the sentence's end."""
    listing = text.split(f"\n--from {template} takes: ", 1)[1].split(".", 1)[0]
    return [name.strip() for name in " ".join(listing.split()).split(",")]


@pytest.mark.parametrize("template", ["train", "precompute-features"])
def test_help_lists_the_parameters_each_single_step_template_takes(template):
    rendered = [p["name"] for p in shipped_template(template)["spec"]["arguments"]["parameters"]]

    assert single_step_listing(submit_help(), template) == rendered
