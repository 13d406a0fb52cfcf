"""The shipped WorkflowTemplates call the `foxhunt` CLI with flags and values it accepts."""

import json
import re
from pathlib import Path

import pytest
import yaml

from foxhunt.cli.parser import build_parser
from foxhunt_workflows.instruments import LAUNCHER, expand_fxcache
from foxhunt_workflows.params import TRAINER_SETTINGS
from foxhunt_workflows.schema import SCHEMA_ANNOTATION

CHART_WORKFLOWS = Path(__file__).resolve().parents[2] / "helm" / "foxhunt" / "files" / "workflows"
EXPRESSION = re.compile(r"\{\{\s*(inputs|workflow)\.parameters\.([\w-]+)\s*\}\}")


def foxhunt_containers():
    for path in sorted(CHART_WORKFLOWS.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        # A required parameter (a data URI) has no default: a sample value stands in for it.
        defaults = {
            p["name"]: str(p.get("value", f"s3://bucket/{p['name']}"))
            for p in doc["spec"].get("arguments", {}).get("parameters", [])
        }
        for template in doc["spec"]["templates"]:
            container = template.get("container")
            # The launcher's pods run `foxhunt` on their args (a list of caches expanded), but for its plan.
            runs_foxhunt = container and container.get("command") in (["foxhunt"], list(LAUNCHER))
            if runs_foxhunt and container["args"][0] != "plan":
                inputs = {
                    p["name"]: str(p.get("default", p.get("value", defaults.get(p["name"], ""))))
                    for p in template.get("inputs", {}).get("parameters", [])
                }
                yield pytest.param(
                    container["args"], {**defaults, **inputs}, id=f"{path.stem}/{template['name']}"
                )


@pytest.mark.parametrize(("args", "parameters"), list(foxhunt_containers()))
def test_template_args_parse_with_the_cli(args, parameters):
    filled = [EXPRESSION.sub(lambda m: parameters.get(m.group(2), ""), a) for a in args]
    assert not any("{{" in a for a in filled), filled
    parsed = build_parser().parse_args(expand_fxcache(filled))
    assert parsed.command in {"precompute", "train"}


def test_every_step_of_the_pipeline_is_covered():
    ids = {p.id for p in foxhunt_containers()}
    assert any(i.startswith("train/") for i in ids) and any(i.startswith("precompute-features/") for i in ids)


def kinds_of_trainer_flags() -> list:
    doc = yaml.safe_load((CHART_WORKFLOWS / "train.yaml").read_text())
    schema = json.loads(doc["metadata"]["annotations"][SCHEMA_ANNOTATION])["properties"]
    kinds = {"integer": "int", "number": "float"}
    return [
        pytest.param(flag, kinds[schema[flag]["type"]], id=flag)
        for flag in TRAINER_SETTINGS
        if schema[flag].get("type") in kinds
    ]


def train_args(flag: str, value: str) -> list[str]:
    return ["train", "--fxcache", "cache.fxcache", "--out", "out", f"--{flag}", value]


@pytest.mark.parametrize(("flag", "kind"), kinds_of_trainer_flags())
def test_a_parameter_typed_as_a_number_is_a_number_flag_of_the_cli(flag, kind, capsys):
    assert build_parser().parse_args(train_args(flag, "2")).command == "train"
    with pytest.raises(SystemExit):
        build_parser().parse_args(train_args(flag, "2.5" if kind == "int" else "two"))
    if kind == "float":
        assert build_parser().parse_args(train_args(flag, "2.5")).command == "train"
