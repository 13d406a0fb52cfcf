"""Chart values for real clusters: scheduling, registries, clean-up, deadlines, names, QoS and a GPU cap.

Each value is rendered by Helm's own code, with and without it, and every object is checked by the
schema that will judge it in a cluster: the patched Argo schema for WorkflowTemplates, Kubernetes'
strict schema for the core objects and for the Pod Argo creates from each template.
"""

from __future__ import annotations

import json

import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest
from helm_python.errors import HelmValuesError
from kubernetes_validate.utils import latest_version
from support.argo_pods import argo_pod, qos_class
from support.chart_render import CHART, of_kind, render, render_manifests
from support.data_files import ARGO_SCHEMA

from foxhunt_workflows.checks import (
    parameter_problems,
    patch_argo_schema,
    pod_templates,
    restricted_problems,
    template_ref_problems,
)

WORKFLOW_TEMPLATE = "io.argoproj.workflow.v1alpha1.WorkflowTemplate"
SPOT = {"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
ZONE_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
                    ]
                }
            ]
        }
    }
}
H200_AFFINITY = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 50,
                "preference": {
                    "matchExpressions": [
                        {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["H200"]}
                    ]
                },
            }
        ]
    }
}
# One real-cluster setting each (the "none" case is the defaults).
CLUSTER_VALUES = {
    "none": {},
    "pod-tolerations": {"pods": {"tolerations": [SPOT]}},
    "gpu-tolerations": {"gpu": {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ml"}]}},
    "affinity": {"pods": {"affinity": ZONE_AFFINITY}, "gpu": {"affinity": H200_AFFINITY}},
    "node-selector": {"pods": {"nodeSelector": {"kubernetes.io/arch": "amd64"}}},
    "priority-class": {"pods": {"priorityClassName": "batch-low"}, "gpu": {"priorityClassName": "gpu-high"}},
    "image-pull-secrets": {"imagePullSecrets": [{"name": "regcred"}]},
    "pod-annotations": {"pods": {"annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}}},
    "service-account-annotations": {
        "serviceAccount": {"annotations": {"iam.gke.io/gcp-service-account": "ml@p.iam.gserviceaccount.com"}}
    },
    "no-pod-gc-or-ttl": {
        "workflowTemplates": {"podGC": None, "ttlStrategy": None}
    },  # null drops a default map
    "deadline": {"workflowTemplates": {"activeDeadlineSeconds": 3600}},
    "no-deadline": {"workflowTemplates": {"activeDeadlineSeconds": 0}},
    "name-overrides": {"nameOverride": "fx", "fullnameOverride": "team-a-training"},
    "release-scoped": {"workflowTemplates": {"releaseScoped": True}},
    "burstable-gpu": {"gpu": {"guaranteedQoS": False}},
    "gpu-semaphore": {"gpu": {"semaphore": {"enabled": True, "limit": 3}}},
}


@pytest.fixture(scope="module")
def argo_validator() -> jsonschema.Draft202012Validator:
    schema = patch_argo_schema(json.loads(ARGO_SCHEMA.read_text()))
    return jsonschema.Draft202012Validator({"$ref": f"#/definitions/{WORKFLOW_TEMPLATE}", **schema})


def workflow_templates(documents: list[dict]) -> list[dict]:
    return list(of_kind(documents, "WorkflowTemplate").values())


def pods(documents: list[dict]) -> dict[str, dict]:
    """Every Pod Argo would create from the chart's templates, by workflow template/template name."""
    return {
        f"{wt['metadata']['name']}/{t['name']}": argo_pod(wt, t)
        for wt in workflow_templates(documents)
        for t in pod_templates(wt)
    }


def is_gpu(pod: dict) -> bool:
    return "nvidia.com/gpu" in pod["spec"]["containers"][0]["resources"]["limits"]


@pytest.mark.parametrize("case", CLUSTER_VALUES)
def test_every_object_validates_with_and_without_each_cluster_value(case, argo_validator):
    documents = render(CLUSTER_VALUES[case])

    for template in workflow_templates(documents):
        assert [e.message for e in argo_validator.iter_errors(template)] == [], template["metadata"]["name"]
    assert (
        template_ref_problems(documents)
        == parameter_problems(documents)
        == restricted_problems(documents)
        == []
    )
    for document in documents:
        if document["kind"] != "WorkflowTemplate":
            kubernetes_validate.validate(document, latest_version(), strict=True)
    for pod in pods(documents).values():
        kubernetes_validate.validate(pod, latest_version(), strict=True)


def test_the_pod_schema_check_rejects_a_misspelt_toleration_key():
    pod = next(iter(pods(render()).values()))
    pod["spec"]["tolerations"] = [{"kee": "nvidia.com/gpu", "operator": "Exists"}]

    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(pod, latest_version(), strict=True)


def test_gpu_pods_tolerate_the_gpu_taint_and_cpu_pods_do_not_by_default():
    for name, pod in pods(render()).items():
        tolerations = pod["spec"].get("tolerations", [])
        assert (
            tolerations == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        ) == is_gpu(pod), name


def test_pod_tolerations_reach_every_pod_after_the_gpu_toleration():
    for name, pod in pods(render(CLUSTER_VALUES["pod-tolerations"])).items():
        assert pod["spec"]["tolerations"][-1] == SPOT, name
        assert len(pod["spec"]["tolerations"]) == (2 if is_gpu(pod) else 1), name


def test_gpu_tolerations_replace_the_default_gpu_toleration():
    gpu_pods = [p for p in pods(render(CLUSTER_VALUES["gpu-tolerations"])).values() if is_gpu(p)]

    assert gpu_pods and all(
        p["spec"]["tolerations"] == [{"key": "dedicated", "operator": "Equal", "value": "ml"}]
        for p in gpu_pods
    )


def test_affinity_reaches_cpu_pods_and_gpu_affinity_the_gpu_pods():
    for name, pod in pods(render(CLUSTER_VALUES["affinity"])).items():
        assert pod["spec"]["affinity"] == (H200_AFFINITY if is_gpu(pod) else ZONE_AFFINITY), name
    assert all("affinity" not in p["spec"] for p in pods(render()).values())


def test_node_selector_joins_the_gpu_pool_selector():
    for name, pod in pods(render(CLUSTER_VALUES["node-selector"])).items():
        expected = {"kubernetes.io/arch": "amd64"}
        if is_gpu(pod):
            expected["foxhunt.io/gpu-pool"] = "{{inputs.parameters.gpu-pool}}"
        assert pod["spec"]["nodeSelector"] == expected, name


def test_priority_classes_of_cpu_and_gpu_pods():
    for name, pod in pods(render(CLUSTER_VALUES["priority-class"])).items():
        assert pod["spec"]["priorityClassName"] == ("gpu-high" if is_gpu(pod) else "batch-low"), name
    gpu_falls_back = pods(render({"pods": {"priorityClassName": "batch-low"}}))
    assert {p["spec"]["priorityClassName"] for p in gpu_falls_back.values()} == {"batch-low"}


def test_image_pull_secrets_reach_every_workflow_and_pod():
    documents = render(CLUSTER_VALUES["image-pull-secrets"])

    assert all(
        wt["spec"]["imagePullSecrets"] == [{"name": "regcred"}] for wt in workflow_templates(documents)
    )
    assert all(p["spec"]["imagePullSecrets"] == [{"name": "regcred"}] for p in pods(documents).values())
    assert all("imagePullSecrets" not in wt["spec"] for wt in workflow_templates(render()))


def test_pod_annotations_join_each_pods_own_annotations():
    key = "cluster-autoscaler.kubernetes.io/safe-to-evict"
    for name, pod in pods(render(CLUSTER_VALUES["pod-annotations"])).items():
        assert pod["metadata"]["annotations"][key] == "false", name
        assert any(k.startswith("checkov.io/") for k in pod["metadata"]["annotations"]), name


def test_service_account_annotations_are_set_on_the_service_account():
    (account,) = of_kind(render(CLUSTER_VALUES["service-account-annotations"]), "ServiceAccount").values()

    assert account["metadata"]["annotations"] == {
        "iam.gke.io/gcp-service-account": "ml@p.iam.gserviceaccount.com"
    }


def test_succeeded_pods_and_finished_workflows_are_cleaned_up_by_default():
    for template in workflow_templates(render()):
        assert template["spec"]["podGC"] == {"strategy": "OnPodSuccess", "deleteDelayDuration": "10m"}
        assert template["spec"]["ttlStrategy"] == {
            "secondsAfterSuccess": 604800,
            "secondsAfterFailure": 1209600,
        }
    for template in workflow_templates(render(CLUSTER_VALUES["no-pod-gc-or-ttl"])):
        assert "podGC" not in template["spec"] and "ttlStrategy" not in template["spec"]


def test_a_workflow_level_deadline_of_three_days_bounds_every_workflow():
    assert {wt["spec"]["activeDeadlineSeconds"] for wt in workflow_templates(render())} == {3 * 24 * 3600}
    assert {
        wt["spec"]["activeDeadlineSeconds"] for wt in workflow_templates(render(CLUSTER_VALUES["deadline"]))
    } == {3600}
    assert all(
        "activeDeadlineSeconds" not in wt["spec"]
        for wt in workflow_templates(render(CLUSTER_VALUES["no-deadline"]))
    )


def test_gpu_pods_are_guaranteed_qos_with_requests_equal_to_limits():
    documents = render()
    gpu_pods = {name: pod for name, pod in pods(documents).items() if is_gpu(pod)}

    assert set(gpu_pods) == {"train/train", "train-pipeline/trial-worker"}
    for name, pod in gpu_pods.items():
        assert qos_class(pod) == "Guaranteed", name
        main = pod["spec"]["containers"][0]["resources"]
        assert (
            main["requests"]
            == main["limits"]
            == {
                "cpu": "16",
                "memory": "128Gi",
                "ephemeral-storage": "40Gi",
                "nvidia.com/gpu": "1",
            }
        )
        # Argo's own containers count too: each gets resources.executor as requests and limits.
        for container in pod["spec"]["containers"][1:] + pod["spec"].get("initContainers", []):
            assert (
                container["resources"]["requests"]
                == container["resources"]["limits"]
                == {
                    "cpu": "100m",
                    "memory": "128Mi",
                }
            )


def test_the_init_container_is_patched_only_where_argo_adds_one():
    # Argo adds `init` only to pods with input artifacts; a patch naming it elsewhere would add a bare one.
    for wt in workflow_templates(render()):
        for template in pod_templates(wt):
            patch = json.loads(template.get("podSpecPatch") or "{}")
            has_artifacts = bool(template.get("inputs", {}).get("artifacts"))
            gpu = "nvidia.com/gpu" in template["container"]["resources"]["limits"]
            assert ("initContainers" in patch) == (gpu and has_artifacts), template["name"]


def test_without_guaranteed_qos_gpu_pods_are_burstable_with_their_own_requests():
    gpu_pods = [p for p in pods(render(CLUSTER_VALUES["burstable-gpu"])).values() if is_gpu(p)]

    assert gpu_pods and {qos_class(p) for p in gpu_pods} == {"Burstable"}
    assert {p["spec"]["containers"][0]["resources"]["requests"]["cpu"] for p in gpu_pods} == {"8"}


def test_no_gpu_semaphore_by_default():
    documents = render()

    assert all(
        "synchronization" not in t for wt in workflow_templates(documents) for t in wt["spec"]["templates"]
    )
    assert not any(name.endswith("gpu-semaphore") for name in of_kind(documents, "ConfigMap"))


def test_the_gpu_semaphore_caps_every_gpu_pod_and_no_cpu_pod():
    documents = render(CLUSTER_VALUES["gpu-semaphore"])
    semaphore = of_kind(documents, "ConfigMap")["foxhunt-gpu-semaphore"]
    ref = {"semaphores": [{"configMapKeyRef": {"name": "foxhunt-gpu-semaphore", "key": "gpu-pods"}}]}

    assert semaphore["data"] == {"gpu-pods": "3"}
    for wt in workflow_templates(documents):
        for template in pod_templates(wt):
            gpu = "nvidia.com/gpu" in template["container"]["resources"]["limits"]
            assert template.get("synchronization") == (ref if gpu else None), template["name"]


def test_an_existing_semaphore_config_map_is_shared_not_created():
    values = {"gpu": {"semaphore": {"enabled": True, "existingConfigMap": "cluster-gpus"}}}
    documents = render(values)
    (train,) = pod_templates(of_kind(documents, "WorkflowTemplate")["train"])

    assert train["synchronization"]["semaphores"][0]["configMapKeyRef"]["name"] == "cluster-gpus"
    assert not any("semaphore" in name for name in of_kind(documents, "ConfigMap"))


def names(documents: list[dict]) -> set[tuple[str, str]]:
    return {(d["kind"], d["metadata"]["name"]) for d in documents}


def test_two_releases_with_release_scoped_names_share_no_object_name_in_one_namespace():
    scoped = CLUSTER_VALUES["release-scoped"] | {"gpu": {"semaphore": {"enabled": True}}}
    first, second = render(scoped, release="research"), render(scoped, release="prod")

    assert names(first).isdisjoint(names(second))
    for documents, release in ((first, "research"), (second, "prod")):
        assert set(of_kind(documents, "WorkflowTemplate")) == {
            f"{release}-foxhunt-{n}" for n in ("precompute-features", "train", "train-pipeline")
        }
        assert template_ref_problems(documents) == []  # the pipeline calls its own release's templates
        (account,) = of_kind(documents, "ServiceAccount")
        assert {wt["spec"]["serviceAccountName"] for wt in workflow_templates(documents)} == {account}


def test_the_default_template_names_are_the_ones_submit_uses():
    assert set(of_kind(render(release="anything"), "WorkflowTemplate")) == {
        "precompute-features",
        "train",
        "train-pipeline",
    }


def test_name_overrides_rename_every_object_the_chart_names():
    documents = render({"nameOverride": "fx"}, release="team-a")
    assert {n for k, n in names(documents) if k != "WorkflowTemplate"} == {
        "team-a-fx-workflow",
        "team-a-fx-executor",
        "team-a-fx-run-defaults",
        "team-a-fx-dashboard",
        "team-a-fx-pods",
    }
    documents = render(CLUSTER_VALUES["name-overrides"] | CLUSTER_VALUES["release-scoped"], release="team-a")
    assert {n for k, n in names(documents)} >= {"team-a-training-workflow", "team-a-training-train-pipeline"}


@pytest.mark.parametrize(
    "values",
    [
        {"workflowTemplates": {"podGC": {"strategy": "OnSuccess"}}},
        {"workflowTemplates": {"activeDeadlineSeconds": -1}},
        {"workflowTemplates": {"ttlStrategy": {"secondsAfterSucess": 60}}},
        {"pods": {"tolerations": [{"kee": "x"}]}},
        {"pods": {"affinity": {"nodeAfinity": {}}}},
        {"imagePullSecrets": ["regcred"]},
        {"gpu": {"semaphore": {"enabled": True, "limit": 0}}},
        {"fullnameOverride": "Team_A"},
    ],
    ids=[
        "pod-gc-strategy",
        "negative-deadline",
        "ttl-typo",
        "toleration-typo",
        "affinity-typo",
        "pull-secret-not-an-object",
        "zero-gpu-cap",
        "invalid-name",
    ],
)
def test_the_values_schema_refuses_a_bad_cluster_value(values):
    with pytest.raises(HelmValuesError):
        render(values)


def test_helm_lint_passes_with_every_cluster_value_at_once():
    combined: dict = {}
    for case, values in CLUSTER_VALUES.items():
        if case not in ("no-deadline", "burstable-gpu", "no-pod-gc-or-ttl"):  # the opposites of others
            for key, value in values.items():
                combined[key] = {**combined.get(key, {}), **value} if isinstance(value, dict) else value
    report = helm.lint(CHART, combined, strict=True)

    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == []
    documents = render(combined)
    assert template_ref_problems(documents) == restricted_problems(documents) == []


def test_the_install_notes_state_the_gpu_cap():
    notes = render_manifests(CLUSTER_VALUES["gpu-semaphore"])["foxhunt/templates/NOTES.txt"]

    assert "GPU pods: at most 3 (ConfigMap foxhunt-gpu-semaphore, key gpu-pods) run at once" in notes
    assert "GPU pods:" not in render_manifests()["foxhunt/templates/NOTES.txt"]
