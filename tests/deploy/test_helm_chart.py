"""The Helm chart, rendered by Helm's own Go code (helm-python-sdk), and what it installs."""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path

import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest
import yaml
from hera.workflows import Env
from kubernetes_validate.utils import latest_version
from support.chart_render import CHART, PROMETHEUS_RULE_API, of_kind, render, render_manifests, train_pod
from support.data_files import ARGO_SCHEMA
from support.secret_planting import leaked, planted_secrets  # noqa: F401 (a fixture)

from foxhunt_workflows import pods, templates
from foxhunt_workflows.checks import (
    gpu_count,
    parameter_problems,
    patch_argo_schema,
    pod_templates,
    restricted_problems,
    template_ref_problems,
)
from foxhunt_workflows.render import render_all

REPO = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ARGO_SCHEMA
WORKFLOW_TEMPLATE = "io.argoproj.workflow.v1alpha1.WorkflowTemplate"
CORE_KINDS = {"ServiceAccount", "Role", "RoleBinding", "ConfigMap"}
FAKE_SECRET = "fake-secret-5eb3a9"

OVERRIDES = """
image:
  repository: registry.example.com/ml/foxhunt
  tag: "2024.06.1"
gpu:
  poolLabel: cloud.google.com/gke-nodepool
  pool: ci-training-h100
serviceAccount:
  name: trainer-sa
s3:
  existingSecret: minio-credentials
resources:
  train:
    requests: {cpu: "12", memory: 96Gi}
    limits: {cpu: "24", memory: 180Gi}
run:
  epochs: 7
  pushgateway: http://pushgateway.monitoring:9091
monitoring:
  prometheusRule:
    labels: {release: kube-prometheus-stack}
"""


@pytest.fixture(scope="module")
def defaults() -> list[dict]:
    return render()


@pytest.fixture(scope="module")
def overridden() -> list[dict]:
    return render(helm.values_from_yaml(OVERRIDES), api_versions=(PROMETHEUS_RULE_API,))


@pytest.fixture(scope="module")
def argo_validator() -> jsonschema.Draft202012Validator:
    schema = patch_argo_schema(json.loads(SCHEMA_PATH.read_text()))
    return jsonschema.Draft202012Validator({"$ref": f"#/definitions/{WORKFLOW_TEMPLATE}", **schema})


def test_chart_files_match_a_fresh_render(tmp_path):
    fresh = {p.name: p.read_bytes() for p in render_all(tmp_path)}
    shipped = {p.name: p.read_bytes() for p in (CHART / "files" / "workflows").iterdir()}

    assert shipped == fresh, "run: foxhunt workflows render --out helm/foxhunt/files/workflows"


@pytest.mark.parametrize("values", [None, OVERRIDES], ids=["defaults", "overridden"])
def test_helm_lint_finds_no_warnings_or_errors(values):
    report = helm.lint(CHART, helm.values_from_yaml(values) if values else None, strict=True)

    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_chart_installs_the_three_workflow_templates(defaults):
    assert set(of_kind(defaults, "WorkflowTemplate")) == {"precompute-features", "train", "train-pipeline"}


@pytest.mark.parametrize("variant", ["defaults", "overridden"])
def test_workflow_templates_validate_against_the_argo_schema(argo_validator, variant, request):
    documents = request.getfixturevalue(variant)
    errors = {
        name: [e.message for e in argo_validator.iter_errors(d)]
        for name, d in of_kind(documents, "WorkflowTemplate").items()
    }

    assert errors == {"precompute-features": [], "train": [], "train-pipeline": []}


def test_argo_schema_rejects_a_misspelt_key_in_chart_output(argo_validator, defaults):
    template = copy.deepcopy(of_kind(defaults, "WorkflowTemplate")["train"])
    template["spec"]["templates"][0]["nodeSelectr"] = template["spec"]["templates"][0].pop("nodeSelector")

    assert not argo_validator.is_valid(template)


@pytest.mark.parametrize("variant", ["defaults", "overridden"])
def test_core_objects_pass_strict_kubernetes_validation(variant, request):
    core = [d for d in request.getfixturevalue(variant) if d["kind"] in CORE_KINDS]

    assert {d["kind"] for d in core} == CORE_KINDS
    for document in core:
        kubernetes_validate.validate(document, latest_version(), strict=True)


def test_strict_kubernetes_validation_rejects_a_misspelt_key(defaults):
    config_map = copy.deepcopy(of_kind(defaults, "ConfigMap")["foxhunt-run-defaults"])
    config_map["metdata"] = config_map.pop("metadata")

    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(config_map, latest_version(), strict=True)


@pytest.mark.parametrize("variant", ["defaults", "overridden"])
def test_rendered_templates_pass_the_semantic_checks(variant, request):
    documents = request.getfixturevalue(variant)

    assert template_ref_problems(documents) == []
    assert parameter_problems(documents) == []
    assert restricted_problems(documents) == []


def test_argo_expressions_survive_helm(defaults):
    pipeline = of_kind(defaults, "WorkflowTemplate")["train-pipeline"]
    train_task = next(t for t in pipeline["spec"]["templates"][0]["dag"]["tasks"] if t["name"] == "train")
    passed = {p["name"]: p["value"] for p in train_task["arguments"]["parameters"] if "value" in p}

    assert passed["epochs"] == "{{workflow.parameters.epochs}}"
    assert passed["fxcache-uri"] == "{{tasks.instruments.outputs.parameters.fxcache-uris}}"
    assert passed["output-uri"] == "{{workflow.parameters.output-uri}}/{{workflow.name}}"


def test_values_set_image_pool_and_run_defaults_of_the_pipeline(overridden):
    pipeline = of_kind(overridden, "WorkflowTemplate")["train-pipeline"]
    parameters = {p["name"]: p["value"] for p in pipeline["spec"]["arguments"]["parameters"] if "value" in p}

    assert parameters["image"] == "registry.example.com/ml/foxhunt:2024.06.1"
    assert parameters["gpu-pool"] == "ci-training-h100"
    assert parameters["epochs"] == "7"
    assert parameters["pushgateway"] == "http://pushgateway.monitoring:9091"


def test_values_set_the_input_defaults_of_the_referenced_templates(overridden):
    inputs = {
        p["name"]: p["default"] for p in train_pod(overridden)["inputs"]["parameters"] if "default" in p
    }

    assert inputs["image"] == "registry.example.com/ml/foxhunt:2024.06.1"
    assert inputs["gpu-pool"] == "ci-training-h100"


def test_image_digest_pins_the_image():
    digest = "sha256:" + "ab" * 32
    documents = render({"image": {"digest": digest}})
    pipeline = of_kind(documents, "WorkflowTemplate")["train-pipeline"]
    parameters = {p["name"]: p["value"] for p in pipeline["spec"]["arguments"]["parameters"] if "value" in p}

    assert parameters["image"] == f"ghcr.io/foxhunt/trainer@{digest}"


def test_values_set_the_pool_label_key_but_the_pool_stays_a_parameter(overridden):
    assert train_pod(overridden)["nodeSelector"] == {
        "cloud.google.com/gke-nodepool": "{{inputs.parameters.gpu-pool}}"
    }


def test_values_set_resources_and_the_train_pod_keeps_exactly_one_gpu(overridden):
    resources = train_pod(overridden)["container"]["resources"]

    # Guaranteed QoS (gpu.guaranteedQoS, on by default): the GPU pod requests its limits.
    assert resources["requests"]["cpu"] == resources["limits"]["cpu"] == "24"
    assert resources["requests"]["memory"] == resources["limits"]["memory"] == "180Gi"
    assert gpu_count(train_pod(overridden)) == (1, 1)


def test_values_schema_refuses_a_gpu_count_in_resources():
    values = {"resources": {"train": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"},
                                      "limits": {"cpu": "1", "memory": "1Gi"}}}}  # fmt: skip

    with pytest.raises(helm.HelmError, match="nvidia.com/gpu"):
        render(values)


def test_values_set_service_account_everywhere(overridden):
    templates = of_kind(overridden, "WorkflowTemplate").values()
    binding = next(iter(of_kind(overridden, "RoleBinding").values()))

    assert {t["spec"]["serviceAccountName"] for t in templates} == {"trainer-sa"}
    assert set(of_kind(overridden, "ServiceAccount")) == {"trainer-sa"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "trainer-sa", "namespace": "ml"}]


def test_pods_read_credentials_from_the_named_existing_secret(overridden):
    for template in of_kind(overridden, "WorkflowTemplate").values():
        for pod in pod_templates(template):
            # The S3 settings; a trial worker also reads the study's URL from the Secret its parameter names.
            s3 = [e for e in pod["container"]["env"] if e["name"].startswith("AWS_")]
            refs = [e["valueFrom"]["secretKeyRef"] for e in s3 if "valueFrom" in e]
            assert refs and {r["name"] for r in refs} == {"minio-credentials"}


def test_chart_never_creates_a_secret(defaults, overridden):
    assert [d for d in defaults + overridden if d["kind"] == "Secret"] == []


def chart_with_fresh_templates(tmp_path: Path) -> Path:
    """A copy of the chart whose WorkflowTemplates are rendered now, by whatever renderer is in place."""
    chart = tmp_path / "foxhunt"
    shutil.copytree(CHART, chart)
    shutil.rmtree(chart / "files" / "workflows")
    render_all(chart / "files" / "workflows")
    return chart


@pytest.mark.usefixtures("planted_secrets")
def test_no_secret_value_appears_in_the_rendered_chart(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET)
    chart = chart_with_fresh_templates(tmp_path)

    manifests = render_manifests(helm.values_from_yaml(OVERRIDES), chart_dir=chart)

    text = "".join(manifests.values())
    assert FAKE_SECRET not in text.lower()
    assert leaked(text) == []


def copy_credentials_into_env(options, run_id="{{workflow.name}}"):
    """A careless renderer: credentials copied from the environment into the manifests."""
    return [Env(name=key, value=os.environ[key]) for key in ("AWS_SECRET_ACCESS_KEY", "ARGO_TOKEN")]


@pytest.mark.usefixtures("planted_secrets")
def test_a_chart_shipping_a_leaky_render_is_caught(tmp_path, monkeypatch):
    monkeypatch.setattr(pods, "common_env", copy_credentials_into_env)
    monkeypatch.setattr(templates, "common_env", copy_credentials_into_env)
    chart = chart_with_fresh_templates(tmp_path)

    manifests = render_manifests(helm.values_from_yaml(OVERRIDES), chart_dir=chart)

    assert leaked("".join(manifests.values())) == ["AWS_SECRET_ACCESS_KEY", "ARGO_TOKEN"]


def test_chart_values_cannot_hold_s3_credentials():
    values = {"s3": {"existingSecret": "foxhunt-s3", "secretAccessKey": FAKE_SECRET}}

    with pytest.raises(helm.HelmError, match="secretAccessKey"):
        render(values)


def test_executor_role_grants_only_workflow_task_results():
    documents = render({"rbac": {"legacyPodPatch": False}})
    (role,) = of_kind(documents, "Role").values()

    assert role["rules"] == [
        {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]}
    ]


def test_run_defaults_config_map_lists_every_pipeline_parameter(defaults):
    data = of_kind(defaults, "ConfigMap")["foxhunt-run-defaults"]["data"]
    pipeline = of_kind(defaults, "WorkflowTemplate")["train-pipeline"]
    parameters = {p["name"]: p["value"] for p in pipeline["spec"]["arguments"]["parameters"] if "value" in p}

    assert {k: v for k, v in data.items() if k in parameters} == parameters


def test_dashboard_ships_as_a_grafana_sidecar_config_map(defaults):
    dashboard = of_kind(defaults, "ConfigMap")["foxhunt-dashboard"]
    shipped = json.loads((CHART / "dashboards" / "foxhunt-training.json").read_text())

    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["foxhunt-training.json"]) == shipped


def test_alert_rules_ship_as_a_prometheus_rule(overridden):
    (rule,) = of_kind(overridden, "PrometheusRule").values()
    shipped = yaml.safe_load((CHART / "rules" / "foxhunt-rules.yaml").read_text())

    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert rule["spec"] == shipped


def test_prometheus_rule_can_be_turned_off():
    documents = render(
        {"monitoring": {"prometheusRule": {"enabled": False}}}, api_versions=(PROMETHEUS_RULE_API,)
    )

    assert of_kind(documents, "PrometheusRule") == {}
