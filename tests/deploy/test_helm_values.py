"""The chart installs anywhere: one source of defaults and versions, optional Operator API, documented values."""

from __future__ import annotations

import json
import re
from pathlib import Path

import kubernetes_validate
import pytest
import tomllib
import yaml
from kubernetes_validate.utils import latest_version
from support.chart_render import CHART, PROMETHEUS_RULE_API, of_kind, render, render_manifests

import foxhunt
from foxhunt.config import flags
from foxhunt_workflows.checks import pod_templates
from foxhunt_workflows.params import POD_DEFAULTS, TRAINER_SETTINGS, pipeline_defaults

REPO = Path(__file__).resolve().parents[2]
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
SCHEMA = json.loads((CHART / "values.schema.json").read_text())


def pipeline_parameters(documents: list[dict]) -> dict[str, str]:
    pipeline = of_kind(documents, "WorkflowTemplate")["train-pipeline"]
    return {p["name"]: p["value"] for p in pipeline["spec"]["arguments"]["parameters"] if "value" in p}


@pytest.fixture(scope="module")
def defaults() -> list[dict]:
    return render()


def test_values_run_defaults_equal_the_rendered_pipeline_defaults():
    rendered = {k: v for k, v in pipeline_defaults().items() if k not in ("image", "gpu-pool")}

    assert {k: str(v) for k, v in VALUES["run"].items()} == rendered


@pytest.mark.parametrize("flag", TRAINER_SETTINGS)
def test_values_trainer_settings_equal_the_python_defaults(flag):
    assert str(VALUES["run"][flag]) == POD_DEFAULTS.get(flag, flags.run_defaults()[flag])


def test_the_installed_pipeline_defaults_are_the_values(defaults):
    installed = pipeline_parameters(defaults)

    assert {k: installed[k] for k in VALUES["run"]} == {k: str(v) for k, v in VALUES["run"].items()}


def test_the_values_schema_declares_every_run_parameter():
    assert list(SCHEMA["properties"]["run"]["properties"]) == list(VALUES["run"])


def test_a_json_parameter_given_as_a_mapping_reaches_argo_as_json():
    documents = render({"run": {"dqn-params": {"lr": 0.001, "hidden": 128}}})

    assert json.loads(pipeline_parameters(documents)["dqn-params"]) == {"lr": 0.001, "hidden": 128}


def test_one_version_for_the_package_the_chart_and_the_image():
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]

    assert chart["version"] == chart["appVersion"] == project["version"] == foxhunt.__version__
    assert pipeline_defaults()["image"].endswith(f":{foxhunt.__version__}")


def test_the_default_image_tag_is_the_chart_version(defaults):
    assert pipeline_parameters(defaults)["image"] == f"ghcr.io/foxhunt/trainer:{foxhunt.__version__}"


def test_no_prometheus_rule_without_the_operators_api():
    assert of_kind(render(), "PrometheusRule") == {}


def test_a_prometheus_rule_where_the_operators_api_exists():
    assert set(of_kind(render(api_versions=(PROMETHEUS_RULE_API,)), "PrometheusRule")) == {"foxhunt"}


def test_the_dashboard_goes_where_grafanas_sidecar_looks():
    values = {
        "monitoring": {"dashboard": {"namespace": "monitoring", "labels": {"grafana_dashboard": "foxhunt"}}}
    }
    dashboard = of_kind(render(values), "ConfigMap")["foxhunt-dashboard"]

    assert dashboard["metadata"]["namespace"] == "monitoring"
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "foxhunt"


def test_the_dashboard_defaults_to_the_release_namespace(defaults):
    assert of_kind(defaults, "ConfigMap")["foxhunt-dashboard"]["metadata"]["namespace"] == "ml"


def test_the_network_policy_admits_no_ingress_to_the_workflow_pods(defaults):
    (policy,) = of_kind(defaults, "NetworkPolicy").values()
    selector = policy["spec"]["podSelector"]["matchLabels"]

    kubernetes_validate.validate(policy, latest_version(), strict=True)
    assert policy["spec"]["policyTypes"] == ["Ingress"] and policy["spec"]["ingress"] == []
    for template in of_kind(defaults, "WorkflowTemplate").values():
        for pod in pod_templates(template):
            assert selector.items() <= pod["metadata"]["labels"].items()


def test_network_policy_egress_rules_come_from_values():
    rule = {"to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}], "ports": [{"port": 9000, "protocol": "TCP"}]}
    (policy,) = of_kind(
        render({"networkPolicy": {"enabled": True, "egress": [rule]}}), "NetworkPolicy"
    ).values()

    kubernetes_validate.validate(policy, latest_version(), strict=True)
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["egress"] == [rule]


def test_the_study_secret_stays_a_parameter_when_the_s3_secret_is_renamed():
    documents = render({"s3": {"existingSecret": "minio-credentials"}})
    pipeline = of_kind(documents, "WorkflowTemplate")["train-pipeline"]
    worker = next(t for t in pod_templates(pipeline) if t["name"] == "trial-worker")
    refs = {
        e["name"]: e["valueFrom"]["secretKeyRef"]["name"]
        for e in worker["container"]["env"]
        if "valueFrom" in e
    }

    assert refs["FOXHUNT_STUDY_STORAGE"] == "{{inputs.parameters.study-storage-secret}}"
    assert refs["AWS_SECRET_ACCESS_KEY"] == "minio-credentials"


def test_trial_workers_take_the_train_resources():
    values = {
        "resources": {
            "train": {"requests": {"cpu": "12", "memory": "96Gi"}, "limits": {"cpu": "24", "memory": "180Gi"}}
        }
    }
    pipeline = of_kind(render(values), "WorkflowTemplate")["train-pipeline"]
    worker = next(t for t in pod_templates(pipeline) if t["name"] == "trial-worker")

    requests = worker["container"]["resources"]["requests"]

    # Guaranteed QoS (gpu.guaranteedQoS, on by default): a GPU pod requests its limits.
    assert (requests["cpu"], requests["memory"], requests["nvidia.com/gpu"]) == ("24", "180Gi", "1")


def test_output_artifacts_can_be_turned_off_where_argo_has_no_artifact_repository():
    train = of_kind(render({"outputArtifacts": False}), "WorkflowTemplate")["train"]
    (pod,) = pod_templates(train)

    assert "artifacts" not in pod["outputs"]
    assert {p["name"] for p in pod["outputs"]["parameters"]} == {
        "summary-uri",
        "stitched-sharpe",
        "holdout-sharpe",
    }


def notes(values: dict | None = None, api_versions: tuple[str, ...] = ()) -> str:
    return render_manifests(values, api_versions)["foxhunt/templates/NOTES.txt"]


def test_notes_show_foxhunt_submit_the_dashboard_and_the_pushgateway():
    text = notes({"run": {"pushgateway": "http://pushgateway.monitoring:9091"}})

    assert "foxhunt submit --epochs 50 --gpu-pool training-h100" in text
    assert "pushes to http://pushgateway.monitoring:9091" in text
    assert "ConfigMap foxhunt-dashboard in namespace ml" in text


def test_notes_say_when_runs_push_no_metrics_and_why_alerts_are_missing():
    text = notes()

    assert "no Pushgateway is set" in text
    assert "no PrometheusRule API" in text
    assert "PrometheusRule foxhunt." in notes(api_versions=(PROMETHEUS_RULE_API,))


def test_the_chart_readme_documents_every_value():
    readme = (CHART / "README.md").read_text()
    documented = set(re.findall(r"^\| `([^`]+)` \|", readme, flags=re.MULTILINE))

    def leaves(node: dict, prefix: str = "") -> set[str]:
        keys = set()
        for key, value in node.items():
            path = f"{prefix}{key}"
            is_branch = (
                isinstance(value, dict)
                and value
                and key not in ("labels", "annotations", "requests", "limits")
            )
            keys |= leaves(value, f"{path}.") if is_branch else {path}
        return keys

    assert leaves(VALUES) <= documented
