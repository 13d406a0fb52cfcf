"""The parameters of a submission, checked against the template it goes to before any request.

What a template takes (names, defaults, enums, kinds) is read from its rendered YAML: the
`spec.arguments` Argo shows, and the kinds annotation that `templates.py` writes beside them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from foxhunt.config.search import MAX_POPULATION
from foxhunt_workflows.params import KINDS_ANNOTATION

SUBMITTED_BY = ("foxhunt.io/submitted-by", "foxhunt-cli")


class SubmitUsageError(ValueError):
    """Bad configuration or arguments: the CLI reports it in one line and exits 2."""


@dataclass(frozen=True)
class TemplateParameters:
    """What one WorkflowTemplate takes: parameter names in order, defaults, enums and kinds."""

    template: str
    defaults: dict[str, str]
    enums: dict[str, tuple[str, ...]]
    kinds: dict[str, str]

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> TemplateParameters:
        """Read them from a rendered (or installed) WorkflowTemplate."""
        parameters = document["spec"].get("arguments", {}).get("parameters", [])
        annotation = document["metadata"].get("annotations", {}).get(KINDS_ANNOTATION, "{}")
        return cls(
            template=document["metadata"]["name"],
            defaults={p["name"]: str(p.get("value", "")) for p in parameters},
            enums={p["name"]: tuple(p["enum"]) for p in parameters if p.get("enum")},
            kinds=json.loads(annotation),
        )


def parse_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """`NAME=VALUE` strings as a dict; a pair without `=` or a name is a usage error."""
    params: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SubmitUsageError(f"--param expects NAME=VALUE, got {pair!r}")
        params[name] = value
    return params


def _as_parameter(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return "" if value is None else str(value)


def parameter_file(path: Path) -> dict[str, str]:
    """Parameters from a YAML or JSON mapping, like `argo submit --parameter-file`.

    Nested values (a `dqn-params` or `search-space` mapping) become the JSON text Argo passes on.
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise SubmitUsageError(f"{path}: cannot read the parameter file: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" (line {where.line + 1})" if where else ""
        raise SubmitUsageError(f"{path}: not valid YAML or JSON{line}") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise SubmitUsageError(f"{path}: expected a mapping of parameter names to values")
    return {name: _as_parameter(value) for name, value in data.items()}


def _kind_problem(kind: str, value: str) -> str | None:
    if kind == "int":
        try:
            int(value, 10)
        except ValueError:
            return "is not an integer"
    elif kind == "float":
        try:
            if not math.isfinite(float(value)):
                return "is not a finite number"
        except ValueError:
            return "is not a number"
    elif kind == "json":
        try:
            if not isinstance(json.loads(value), dict):
                return "is not a JSON object"
        except ValueError:
            return "is not valid JSON"
    return None


def check_parameters(params: Mapping[str, str], spec: TemplateParameters) -> None:
    """Refuse unknown names, values outside an enum, malformed numbers or JSON, and trials without storage."""
    for name, value in params.items():
        if name not in spec.defaults:
            raise SubmitUsageError(
                f"unknown parameter {name!r}; {spec.template} takes: {', '.join(spec.defaults)}"
            )
        allowed = spec.enums.get(name)
        if allowed and value not in allowed:
            raise SubmitUsageError(f"parameter {name}={value!r} is not one of {', '.join(allowed)}")
        problem = _kind_problem(spec.kinds.get(name, "str"), value)
        if problem:
            raise SubmitUsageError(f"parameter {name}={value!r} {problem}")
    _check_trials(spec.defaults | dict(params), spec)


def _check_trials(effective: Mapping[str, str], spec: TemplateParameters) -> None:
    # Only where the template fans trials out over pods on one shared study.
    if "study-storage-secret" not in spec.defaults or int(effective.get("trials", "0")) <= 0:
        return
    if not effective["study-storage-secret"].strip():
        raise SubmitUsageError(
            f"trials={effective['trials']} needs a study storage: pass -p study-storage-secret=NAME, "
            "a Secret whose key `url` holds the PostgreSQL URL of the study"
        )
    if int(effective.get("trial-workers", "1")) < 1:
        raise SubmitUsageError(f"trials={effective['trials']} needs trial-workers of 1 or more")
    population = int(effective.get("trial-population", "1"))
    if not 1 <= population <= MAX_POPULATION:
        raise SubmitUsageError(
            f"trial-population={population}: expected 1 to {MAX_POPULATION} trials side by side"
        )


def workflow_manifest(
    template: str, namespace: str, params: Mapping[str, str], labels: Sequence[str]
) -> dict:
    """The Workflow that submitting `template` with `params` creates (what `--dry-run` prints)."""
    all_labels = dict([SUBMITTED_BY])
    for label in labels:  # checked KEY=VALUE before
        key, _, value = label.partition("=")
        all_labels[key] = value
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"generateName": f"{template}-", "namespace": namespace, "labels": all_labels},
        "spec": {
            "workflowTemplateRef": {"name": template},
            "arguments": {"parameters": [{"name": k, "value": v} for k, v in params.items()]},
        },
    }
