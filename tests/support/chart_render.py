"""Rendering the Helm chart with Helm's own Go code (helm-python-sdk), as a given cluster would."""

from __future__ import annotations

import json
from pathlib import Path

import helm_python as helm
import yaml
from helm_python import _native

from foxhunt_workflows.checks import pod_templates

CHART = Path(__file__).resolve().parents[2] / "helm" / "foxhunt"
PROMETHEUS_RULE_API = "monitoring.coreos.com/v1/PrometheusRule"
# libyaml's safe loader (PyYAML's wheels carry it): the pure-Python one took about half of each render.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def render_manifests(
    values: dict | None = None, api_versions: tuple[str, ...] = (), chart_dir=CHART, release: str = "foxhunt"
) -> dict:
    """The chart's rendered files by path, as on a cluster that serves `api_versions`.

    helm-python-sdk's `Chart.render` does not pass API versions on; its native render (Helm's own
    `--api-versions`) takes them, so this calls that directly.
    """
    options = {"name": release, "namespace": "ml", "api_versions": list(api_versions)}
    with helm.Chart.load(chart_dir) as chart:
        rendered = _native.call_string(
            "helm_render", chart._raw(), json.dumps(values) if values else None, json.dumps(options)
        )
    return json.loads(rendered)


def render(
    values: dict | None = None, api_versions: tuple[str, ...] = (), chart_dir=CHART, release: str = "foxhunt"
) -> list[dict]:
    """Every rendered Kubernetes object, in file order."""
    manifests = render_manifests(values, api_versions, chart_dir, release)
    return [
        document
        for path, text in sorted(manifests.items())
        if path.endswith(".yaml")
        for document in yaml.load_all(text, Loader=SAFE_LOADER)
        if document
    ]


def of_kind(documents: list[dict], kind: str) -> dict[str, dict]:
    """The objects of one kind, by name."""
    return {d["metadata"]["name"]: d for d in documents if d["kind"] == kind}


def train_pod(documents: list[dict]) -> dict:
    """The one pod template of the `train` WorkflowTemplate."""
    (template,) = pod_templates(of_kind(documents, "WorkflowTemplate")["train"])
    return template
