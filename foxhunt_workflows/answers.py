"""The Argo Server's answers, checked for the shape `submit` reads before any field of them is used.

A proxy, an old server or a hostile one can answer 200 with any JSON; each check names the field
that is wrong in one line (a `BadAnswer`, exit 1) instead of failing later on a missing key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from foxhunt_workflows.argo_api import ArgoError

# A Kubernetes object name (DNS subdomain): the workflow's name goes into the next request's path.
_OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_NODE_TEXT_FIELDS = ("id", "type", "phase", "displayName", "message", "finishedAt", "templateName")


class BadAnswer(ArgoError):
    """The server answered 200 with JSON that is not the Workflow it should be."""


def _mapping(value: object, where: str, what: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise BadAnswer(
            f"{what}: the Argo Server's answer has {where} as {type(value).__name__}, not an object"
        )
    return value


def _text(value: object, where: str, what: str) -> None:
    if value is not None and not isinstance(value, str):
        raise BadAnswer(f"{what}: the Argo Server's answer has {where} as {type(value).__name__}, not text")


def created_name(workflow: Mapping[str, Any], what: str = "submit") -> str:
    """The name of the Workflow the server created; BadAnswer unless it is a Kubernetes name."""
    name = _mapping(workflow.get("metadata"), "metadata", what).get("name")
    if not isinstance(name, str) or not _OBJECT_NAME.fullmatch(name):
        raise BadAnswer(f"{what}: the Argo Server's answer names no workflow (metadata.name is {name!r:.60})")
    return name


def check_dry_run(workflow: Mapping[str, Any], template: str) -> None:
    """BadAnswer unless `workflow` is the Workflow a server-side dry run of `template` creates."""
    what = "submit (server dry run)"
    metadata = _mapping(workflow.get("metadata"), "metadata", what)
    if not any(isinstance(metadata.get(key), str) and metadata[key] for key in ("name", "generateName")):
        raise BadAnswer(
            f"{what}: the Argo Server's answer is no Workflow (no metadata.name): not a dry run's result"
        )
    spec = _mapping(workflow.get("spec"), "spec", what)
    reference = _mapping(spec.get("workflowTemplateRef"), "spec.workflowTemplateRef", what)
    if reference.get("name") != template:
        raise BadAnswer(
            f"{what}: the Argo Server's answer is no Workflow from template {template!r} "
            f"(spec.workflowTemplateRef.name is {reference.get('name')!r:.60}): not a dry run's result"
        )


def check_workflow(workflow: Mapping[str, Any], what: str) -> None:
    """BadAnswer unless every field `--wait` and the failure report read has the shape they expect."""
    metadata = _mapping(workflow.get("metadata"), "metadata", what)
    for key in ("name", "namespace"):
        _text(metadata.get(key), f"metadata.{key}", what)
    status = _mapping(workflow.get("status"), "status", what)
    for key in ("phase", "message"):
        _text(status.get(key), f"status.{key}", what)
    for node_id, node in _mapping(status.get("nodes"), "status.nodes", what).items():
        node = _mapping(node, f"status.nodes[{node_id!r:.40}]", what)
        for key in _NODE_TEXT_FIELDS:
            _text(node.get(key), f"status.nodes[{node_id!r:.40}].{key}", what)
        reference = _mapping(node.get("templateRef"), f"status.nodes[{node_id!r:.40}].templateRef", what)
        _text(reference.get("template"), f"status.nodes[{node_id!r:.40}].templateRef.template", what)
    outputs = _mapping(status.get("outputs"), "status.outputs", what)
    parameters = outputs.get("parameters") or []
    if not isinstance(parameters, list):
        raise BadAnswer(f"{what}: the Argo Server's answer has status.outputs.parameters as no list")
    for index, parameter in enumerate(parameters):
        parameter = _mapping(parameter, f"status.outputs.parameters[{index}]", what)
        if not isinstance(parameter.get("name"), str):
            raise BadAnswer(f"{what}: the Argo Server's answer has an output parameter without a name")
        _text(parameter.get("value"), f"status.outputs.parameters[{index}].value", what)
