"""One parameter schema from foxhunt.config: it allows what the trainer allows, and writes every doc of a parameter."""

from __future__ import annotations

import json
import math
import re
from dataclasses import fields
from pathlib import Path

import pytest

from foxhunt import config
from foxhunt.cli.parser import build_parser
from foxhunt.config import flags
from foxhunt.config.setting import expectation
from foxhunt.errors import BadInput, ConfigError
from foxhunt_workflows.params import (
    COMMAND_LINE_PARAMETERS,
    STEP_OUTPUT_DESCRIPTION,
    TRAINER_SETTINGS,
    parameter,
    pipeline_parameters,
)
from foxhunt_workflows.render import render_documents
from foxhunt_workflows.schema import (
    SCHEMA_ANNOTATION,
    allowed,
    dqn_params_schema,
    setting_schema,
    template_schema,
    value_problem,
)
from foxhunt_workflows.values_docs import run_values_block, update_values_file

VALUES_YAML = Path(__file__).resolve().parents[2] / "helm" / "foxhunt" / "values.yaml"
NUMBER_SETTINGS = [f for f in TRAINER_SETTINGS if setting_schema(f).get("type") in ("integer", "number")]


@pytest.fixture(scope="module")
def documents() -> dict[str, dict]:
    return render_documents()


def candidates(f) -> list:
    """Values on and around a field's bounds, and the usual suspects."""
    bounds = f.metadata["bounds"]
    values = [0, 1, -1, 2, 0.5, 1.5, 10**6, 2**63, -(2**63)]
    for edge in (bounds.low, bounds.high):
        if edge is not None:
            values += [edge, edge - 1, edge + 1, edge * (1 - 1e-9) - 1e-12, edge * (1 + 1e-9) + 1e-12]
    kind = str(f.type).removesuffix(" | None")
    return [int(v) for v in values if float(v).is_integer()] if kind == "int" else [float(v) for v in values]


def config_accepts(build, value) -> bool:
    try:
        build(value)
    except (ConfigError, BadInput):
        return False
    return True


@pytest.mark.parametrize("flag", NUMBER_SETTINGS)
def test_a_trainer_settings_schema_allows_exactly_what_foxhunt_config_allows(flag):
    f = flags.field_at(flags.FLAGS[flag])
    schema = setting_schema(flag)

    for value in candidates(f):
        text = flags.flag_value(value) if isinstance(value, float) else str(value)
        trainer = config_accepts(lambda v, flag=flag: flags.run_config_from_flags({flag: v}), value)
        assert (value_problem(text, schema) is None) == trainer, (flag, value, value_problem(text, schema))


@pytest.mark.parametrize("key", [f.name for f in fields(config.DQNConfig)])
def test_dqn_params_allow_exactly_what_the_dqn_config_allows(key):
    f = next(f for f in fields(config.DQNConfig) if f.name == key)
    schema = dqn_params_schema()
    values = [True, False, "x"] if str(f.type) == "bool" else candidates(f) + [True, "1", math.nan]

    for value in values:
        text = json.dumps({key: value})
        trainer = config_accepts(lambda v: config.override(config.DQNConfig(), {key: v}, what="p"), value)
        assert (value_problem(text, schema) is None) == trainer, (key, value, value_problem(text, schema))


def test_dqn_params_refuse_a_key_the_dqn_config_does_not_have():
    problem = value_problem('{"lrr": 1}', dqn_params_schema())

    assert problem.startswith("unknown key(s) 'lrr'; valid keys: ")
    assert problem.split("valid keys: ")[1].split(", ") == config.config_keys(config.DQNConfig)


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "integer", "minimum": 1}, "an integer >= 1"),
        ({"type": "number", "exclusiveMinimum": 0, "x-unit": "days"}, "a number > 0 (days)"),
        ({"type": "number", "minimum": 0, "exclusiveMaximum": 1}, "a number in [0, 1)"),
        ({"type": "number", "exclusiveMinimum": 0, "maximum": 1}, "a number in (0, 1]"),
        ({"type": "integer", "maximum": 9}, "an integer <= 9"),
        ({"enum": ["rolling", "expanding"]}, "one of rolling, expanding"),
    ],
)
def test_allowed_values_in_words(schema, words):
    assert allowed(schema) == words


@pytest.mark.parametrize("name", ["train-pipeline", "train", "precompute-features"])
def test_each_template_carries_the_schema_of_its_own_parameters(documents, name):
    document = documents[name]
    carried = json.loads(document["metadata"]["annotations"][SCHEMA_ANNOTATION])
    declared = [p["name"] for p in document["spec"]["arguments"]["parameters"]]

    assert list(carried["properties"]) == declared
    assert carried["required"] == [n for n in declared if n in ("bars-uri", "fxcache-uri", "output-uri")]
    assert carried == template_schema([parameter(n, name) for n in declared])


@pytest.mark.parametrize("flag", TRAINER_SETTINGS)
def test_a_settings_allowed_values_are_the_configs_own_words(flag):
    assert allowed(setting_schema(flag)) == expectation(flags.field_at(flags.FLAGS[flag]))


@pytest.mark.parametrize("name", TRAINER_SETTINGS)
def test_argo_shows_each_settings_doc_and_allowed_values(documents, name):
    (declared,) = [
        p for p in documents["train-pipeline"]["spec"]["arguments"]["parameters"] if p["name"] == name
    ]
    f = flags.field_at(flags.FLAGS[name])

    assert (
        declared["description"]
        == f"{f.metadata['doc'].rstrip('.')}. Allowed: {allowed(setting_schema(name))}."
    )


def test_the_train_templates_output_uri_says_it_is_used_as_given(documents):
    train = documents["train"]
    (declared,) = [p for p in train["spec"]["arguments"]["parameters"] if p["name"] == "output-uri"]
    args = train["spec"]["templates"][0]["container"]["args"]

    assert declared["description"].startswith(STEP_OUTPUT_DESCRIPTION)
    assert args[args.index("--out") + 1] == "{{inputs.parameters.output-uri}}"


def test_the_pipeline_writes_under_output_uri_and_the_workflow_name(documents):
    (declared,) = [
        p for p in documents["train-pipeline"]["spec"]["arguments"]["parameters"] if p["name"] == "output-uri"
    ]
    tasks = documents["train-pipeline"]["spec"]["templates"][0]["dag"]["tasks"]
    train = next(t for t in tasks if t["name"] == "train")
    passed = {p["name"]: p["value"] for p in train["arguments"]["parameters"]}

    assert "OUTPUT-URI/<workflow name>" in declared["description"]
    assert passed["output-uri"] == "{{workflow.parameters.output-uri}}/{{workflow.name}}"


def test_the_parameters_marked_as_command_line_words_are_those_in_the_pods_args(documents):
    used = set()
    for document in documents.values():
        for template in document["spec"]["templates"]:
            for arg in template.get("container", {}).get("args", []):
                used |= set(re.findall(r"\{\{inputs\.parameters\.([\w-]+)\}\}", arg))
    workflow_parameters = {p.name for p in pipeline_parameters()}

    assert used & workflow_parameters == COMMAND_LINE_PARAMETERS


@pytest.mark.parametrize("flag", ["epochs", "trials", "model", "gpu-pool"])
def test_submit_help_shows_each_shortcuts_allowed_values(flag):
    submit = build_parser()._subparsers._group_actions[0].choices["submit"]
    (action,) = [a for a in submit._actions if f"--{flag}" in a.option_strings]

    assert f"Allowed: {allowed(parameter(flag).schema)}." in action.help


def test_values_yaml_documents_each_parameter_with_the_schemas_words():
    assert run_values_block() in VALUES_YAML.read_text(), (
        "run: python -m foxhunt_workflows.values_docs helm/foxhunt/values.yaml"
    )


def test_updating_a_values_file_rewrites_only_its_run_block(tmp_path):
    stale = VALUES_YAML.read_text().replace("  epochs: '50'\n", "  epochs: '7'\n  bars-uri: s3://x/y\n")
    path = tmp_path / "values.yaml"
    path.write_text(stale)

    assert update_values_file(path) is True
    assert path.read_text() == VALUES_YAML.read_text()
    assert update_values_file(path) is False


@pytest.mark.parametrize(
    ("space", "problem"),
    [
        ({"lr": {"type": "float", "low": 1e-5, "high": 1e-3}}, None),
        ({"dqn": {"lr": {"type": "float", "low": 1e-5, "high": 1e-3}}}, None),
        ({"dqn": {"lrr": {"type": "float"}}}, "unknown key(s) 'lrr'"),
        ({"dqn": 3}, "dqn: must be a JSON object {DQN setting: distribution}"),
        ({}, "at least 1 key"),
        ({"cost": {"type": "uniform"}}, 'cost: type="uniform" must be one of float, int, categorical'),
    ],
)
def test_a_search_space_is_checked_in_both_shapes_the_trainer_reads(space, problem):
    found = value_problem(json.dumps(space), parameter("search-space").schema)

    assert found == problem if problem is None else problem in found


VALUES_SCHEMA = json.loads((VALUES_YAML.parent / "values.schema.json").read_text())["properties"]["run"]
BOUNDS = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")


@pytest.mark.parametrize(
    "name",
    [n for n, s in VALUES_SCHEMA["properties"].items() if {"integer", "number"} & set(s.get("type", []))],
)
def test_the_charts_values_schema_has_each_parameters_bounds(name):
    chart, ours = VALUES_SCHEMA["properties"][name], parameter(name).schema

    assert {k: chart[k] for k in BOUNDS if k in chart} == {k: ours[k] for k in BOUNDS if k in ours}
