"""Checks on rendered Argo objects that a JSON schema cannot express.

Plain functions over the dicts that `render_documents` (or a Helm render) produces; each returns a
list of problems, empty when the objects are sound, so a caller can show all of them at once.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
GPU = "nvidia.com/gpu"

_PARAMETER_REF = re.compile(r"\{\{\s*(inputs|workflow)\.parameters\.([A-Za-z0-9_.-]+?)\s*\}\}")


def patch_argo_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Argo's published JSON schema made into a usable gate (see shared/README.md).

    IntOrString also takes integers and Quantity also takes numbers, as Kubernetes does; every
    object that lists its properties forbids others, so a misspelt key is an error.
    """
    patched = copy.deepcopy(schema)
    definitions = patched["definitions"]
    definitions[INT_OR_STRING] = {**definitions[INT_OR_STRING], "type": ["string", "integer"]}
    definitions[QUANTITY] = {**definitions[QUANTITY], "type": ["string", "number"]}

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(definitions)
    return patched


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def _workflow_templates(documents: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in documents if d.get("kind") == "WorkflowTemplate"]


def _names(parameters: dict[str, Any] | None) -> set[str]:
    return {p["name"] for p in (parameters or {}).get("parameters", [])}


def pod_templates(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The templates of a WorkflowTemplate that run a pod (container or script)."""
    return [t for t in document["spec"].get("templates", []) if "container" in t or "script" in t]


def template_ref_problems(documents: Iterable[dict[str, Any]]) -> list[str]:
    """Every `templateRef` must name a WorkflowTemplate in the set and a template inside it."""
    templates = _workflow_templates(documents)
    available = {
        d["metadata"]["name"]: {t["name"] for t in d["spec"].get("templates", [])} for d in templates
    }
    problems = []
    for document in templates:
        for template in document["spec"].get("templates", []):
            steps = [s for group in template.get("steps", []) for s in group]
            for task in template.get("dag", {}).get("tasks", []) + steps:
                ref = task.get("templateRef")
                if ref is None:
                    continue
                where = f"{document['metadata']['name']}/{template['name']}/{task['name']}"
                if ref["name"] not in available:
                    problems.append(f"{where}: templateRef to missing WorkflowTemplate {ref['name']!r}")
                elif ref["template"] not in available[ref["name"]]:
                    problems.append(f"{where}: {ref['name']!r} has no template {ref['template']!r}")
    return problems


def parameter_problems(documents: Iterable[dict[str, Any]]) -> list[str]:
    """Every `{{inputs.parameters.X}}` and `{{workflow.parameters.X}}` used must be declared.

    Inputs are declared by the template that uses them; workflow parameters by the
    WorkflowTemplate's `spec.arguments`. A template a task runs (by `templateRef` or by name) must
    receive every input that has no default, and nothing it does not take.
    """
    templates = _workflow_templates(documents)
    by_ref = {
        (d["metadata"]["name"], t["name"]): t for d in templates for t in d["spec"].get("templates", [])
    }
    problems = []
    for document in templates:
        name = document["metadata"]["name"]
        declared_workflow = _names(document["spec"].get("arguments"))
        for template in document["spec"].get("templates", []):
            declared_inputs = _names(template.get("inputs"))
            for text in _strings(template):
                for scope, parameter in _PARAMETER_REF.findall(text):
                    declared = declared_inputs if scope == "inputs" else declared_workflow
                    if parameter not in declared:
                        problems.append(
                            f"{name}/{template['name']}: {scope}.parameters.{parameter} is not declared"
                        )
            for task in template.get("dag", {}).get("tasks", []):
                ref = task.get("templateRef") or {"name": name, "template": task.get("template")}
                target = by_ref.get((ref["name"], ref["template"]))
                if target is None:
                    continue
                passed = _names(task.get("arguments"))
                wanted = {p["name"]: p for p in target.get("inputs", {}).get("parameters", [])}
                for extra in sorted(passed - set(wanted)):
                    problems.append(
                        f"{name}/{task['name']}: passes {extra!r}, which {ref['template']} does not take"
                    )
                for missing in sorted(n for n, p in wanted.items() if n not in passed and "default" not in p):
                    problems.append(f"{name}/{task['name']}: does not pass required input {missing!r}")
    return problems


def restricted_problems(documents: Iterable[dict[str, Any]]) -> list[str]:
    """Every pod must meet the Kubernetes "restricted" Pod Security Standard."""
    problems = []
    for document in _workflow_templates(documents):
        for template in pod_templates(document):
            where = f"{document['metadata']['name']}/{template['name']}"
            pod = template.get("securityContext") or {}
            containers = [template.get("container") or template.get("script") or {}]
            containers += template.get("initContainers", []) + template.get("sidecars", [])
            for container in containers:
                context = container.get("securityContext", {})
                non_root = context.get("runAsNonRoot", pod.get("runAsNonRoot"))
                user = context.get("runAsUser", pod.get("runAsUser"))
                seccomp = context.get("seccompProfile", pod.get("seccompProfile", {})).get("type")
                if non_root is not True:
                    problems.append(f"{where}: runAsNonRoot is not true")
                if type(user) is not int or user == 0:  # an expression or text is no UID the pod runs as
                    problems.append(f"{where}: runAsUser is not a non-zero UID")
                if seccomp not in ("RuntimeDefault", "Localhost"):
                    problems.append(f"{where}: seccompProfile is not RuntimeDefault")
                if context.get("allowPrivilegeEscalation") is not False:
                    problems.append(f"{where}: allowPrivilegeEscalation is not false")
                if context.get("privileged"):
                    problems.append(f"{where}: privileged")
                if "ALL" not in context.get("capabilities", {}).get("drop", []):
                    problems.append(f"{where}: capabilities do not drop ALL")
                if set(context.get("capabilities", {}).get("add", [])) - {"NET_BIND_SERVICE"}:
                    problems.append(f"{where}: adds capabilities")
                if context.get("readOnlyRootFilesystem") is not True:
                    problems.append(f"{where}: root filesystem is writable")
            for volume in template.get("volumes", []):
                if "hostPath" in volume:
                    problems.append(f"{where}: hostPath volume {volume['name']!r}")
    return problems


def gpu_count(template: dict[str, Any]) -> tuple[int, int]:
    """The (request, limit) of `nvidia.com/gpu` of a pod template; (0, 0) when it asks for none."""
    resources = template.get("container", {}).get("resources", {})
    return (
        int(resources.get("requests", {}).get(GPU, 0)),
        int(resources.get("limits", {}).get(GPU, 0)),
    )


# Environment variables that hold credentials by their name: they must come from a Secret.
_CREDENTIAL_NAME = re.compile(r"SECRET|TOKEN|PASSWORD|ACCESS_KEY|STUDY_STORAGE")


def credential_problems(documents: Iterable[dict[str, Any]]) -> list[str]:
    """Every pod env var named like a credential must be read from a Secret, never given a value."""
    problems = []
    for document in _workflow_templates(documents):
        for template in pod_templates(document):
            where = f"{document['metadata']['name']}/{template['name']}"
            for env in (template.get("container") or template.get("script") or {}).get("env", []):
                secret_ref = env.get("valueFrom", {}).get("secretKeyRef")
                if _CREDENTIAL_NAME.search(env["name"]) and ("value" in env or not secret_ref):
                    problems.append(f"{where}: {env['name']} is not read from a Secret")
    return problems


def _resolve_inputs(node: Any, inputs: dict[str, str]) -> Any:
    if isinstance(node, str):
        return re.sub(
            r"\{\{inputs\.parameters\.([A-Za-z0-9_.-]+)\}\}",
            lambda m: inputs.get(m.group(1), m.group(0)),
            node,
        )
    if isinstance(node, dict):
        return {k: _resolve_inputs(v, inputs) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve_inputs(v, inputs) for v in node]
    return node


def _patch_pod_spec(pod_spec: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A podSpecPatch applied as Argo applies it: container lists merge by name (a strategic merge).

    A patch entry naming a container the pod lacks (Argo's own `wait` or `init`) adds nothing here,
    since this pod leaves Argo's containers out.
    """
    patched = dict(pod_spec)
    for key, value in patch.items():
        if key in ("containers", "initContainers") and isinstance(value, list):
            by_name = {c.get("name"): c for c in value}
            patched[key] = [{**c, **by_name.get(c["name"], {})} for c in pod_spec.get(key, [])]
            if not patched[key]:
                del patched[key]
        else:
            patched[key] = value
    return patched


def pod_manifests(documents: Iterable[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    """Each pod template of the WorkflowTemplates as the Kubernetes Pod it becomes (inputs at their defaults).

    Scanners that know Kubernetes but not Argo (checkov) can check these. Argo adds its own init and
    wait containers, which are Argo's, not these templates'.
    """
    pods = []
    for document in _workflow_templates(documents):
        spec = document["spec"]
        for template in pod_templates(document):
            inputs = {
                p["name"]: str(p.get("default", "")) for p in template.get("inputs", {}).get("parameters", [])
            }
            template = _resolve_inputs(template, inputs)
            container = {"name": "main", **(template.get("container") or template.get("script"))}
            pod_spec: dict[str, Any] = {
                "serviceAccountName": spec.get("serviceAccountName", "default"),
                "securityContext": template.get("securityContext", {}),
                "containers": [container],
                "volumes": template.get("volumes", []),
                "restartPolicy": "Never",
            }
            for key in ("nodeSelector", "tolerations", "activeDeadlineSeconds"):
                if key in template:
                    pod_spec[key] = template[key]
            if "podSpecPatch" in template:
                pod_spec = _patch_pod_spec(pod_spec, json.loads(template["podSpecPatch"]))
            name = f"{document['metadata']['name']}-{template['name']}"
            metadata = {"name": name, "namespace": namespace, **template.get("metadata", {})}
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec})
    return pods
