"""The Pod Argo would create for one template of a rendered WorkflowTemplate, and its Kubernetes QoS class.

Argo runs a template's container as `main` beside its own `wait` container (and an `init` container when
the template has input artifacts), takes the scheduling fields from the template and the image pull
secrets from the workflow's spec, then applies the template's podSpecPatch as a strategic merge (lists of
containers merge by name). This builds that Pod so Kubernetes' own schema can check it.
"""

from __future__ import annotations

import copy
import json
from typing import Any

ARGOEXEC = "quay.io/argoproj/argoexec:v4.0.0"
SCHEDULING = ("nodeSelector", "tolerations", "affinity", "priorityClassName", "securityContext", "volumes")


def merge_by_name(base: list[dict], patch: list[dict]) -> list[dict]:
    """A strategic merge of two container lists: entries with the same name are merged key by key."""
    merged = {c["name"]: copy.deepcopy(c) for c in base}
    for entry in patch:
        target = merged.setdefault(entry["name"], {})
        for key, value in entry.items():
            target[key] = merge_dicts(target.get(key), value) if isinstance(value, dict) else value
    return list(merged.values())


def merge_dicts(base: Any, patch: dict) -> dict:
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in patch.items():
        out[key] = merge_dicts(out.get(key), value) if isinstance(value, dict) else value
    return out


def argo_pod(workflow_template: dict, template: dict) -> dict:
    """The Pod for `template`, one of `workflow_template`'s pod templates, as Argo would create it."""
    executor = {"image": ARGOEXEC, "command": ["argoexec"]}
    containers = [{**template["container"], "name": "main"}, {"name": "wait", **executor}]
    spec: dict[str, Any] = {"containers": containers, "restartPolicy": "Never"}
    if template.get("inputs", {}).get("artifacts"):
        spec["initContainers"] = [{"name": "init", **executor}]
    spec.update({key: copy.deepcopy(template[key]) for key in SCHEDULING if key in template})
    workflow = workflow_template["spec"]
    for key in ("serviceAccountName", "imagePullSecrets"):
        if key in workflow:
            spec[key] = copy.deepcopy(workflow[key])
    for key, value in json.loads(template.get("podSpecPatch") or "{}").items():
        spec[key] = merge_by_name(spec.get(key, []), value) if key.endswith("ontainers") else value
    metadata = {
        "name": f"{workflow_template['metadata']['name']}-{template['name']}",
        **template.get("metadata", {}),
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def qos_class(pod: dict) -> str:
    """Kubernetes' QoS class of a Pod: Guaranteed, Burstable or BestEffort (from its CPU and memory)."""
    containers = pod["spec"]["containers"] + pod["spec"].get("initContainers", [])
    guaranteed, any_set = True, False
    for container in containers:
        resources = container.get("resources", {})
        limits, requests = resources.get("limits", {}), resources.get("requests", {})
        for name in ("cpu", "memory"):
            any_set = any_set or name in limits or name in requests
            # A request left out defaults to the limit.
            if name not in limits or str(requests.get(name, limits[name])) != str(limits[name]):
                guaranteed = False
    return "Guaranteed" if guaranteed else "Burstable" if any_set else "BestEffort"
