"""The Argo WorkflowTemplates: what they declare, what they run, and that Argo's schema accepts them."""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from hera.workflows import Env
from support.data_files import ARGO_SCHEMA
from support.secret_planting import leaked, planted_secrets  # noqa: F401 (a fixture)

from foxhunt_workflows import pods, templates
from foxhunt_workflows.checks import (
    credential_problems,
    gpu_count,
    parameter_problems,
    patch_argo_schema,
    pod_manifests,
    pod_templates,
    restricted_problems,
    template_ref_problems,
)
from foxhunt_workflows.commands import add_workflow_commands
from foxhunt_workflows.instruments import LAUNCHER
from foxhunt_workflows.render import render_all, render_documents
from foxhunt_workflows.templates import RenderOptions

SCHEMA_PATH = ARGO_SCHEMA
WORKFLOW_TEMPLATE = "io.argoproj.workflow.v1alpha1.WorkflowTemplate"

# Flags of the train command that take no value.
SWITCHES = ("--delete-metrics-group",)
PIPELINE_PARAMETERS = {
    "model", "epochs", "trials", "gpu-pool", "bars-uri", "fxcache-uri", "output-uri", "pushgateway", "image",
    "train-days", "val-days", "step-days", "window", "max-folds", "holdout-days",
    "trial-workers", "trial-population", "study-storage-secret", "search-space", "dqn-params",
    "hyperopt-params-uri", "seed", "seeds", "result",
    "purge-bars", "min-train-rows", "min-val-rows", "eval-cost", "eval-spread", "log-format",
    "metrics-keep-seconds",
}  # fmt: skip


@pytest.fixture(scope="module")
def argo_validator() -> jsonschema.Draft202012Validator:
    schema = patch_argo_schema(json.loads(SCHEMA_PATH.read_text()))
    root = {"$ref": f"#/definitions/{WORKFLOW_TEMPLATE}", "definitions": schema["definitions"]}
    return jsonschema.Draft202012Validator(root)


@pytest.fixture(scope="module")
def documents() -> dict[str, dict]:
    return render_documents()


def only_pod(document: dict) -> dict:
    (template,) = pod_templates(document)
    return template


def test_render_all_writes_one_file_per_template(tmp_path):
    paths = render_all(tmp_path)

    assert sorted(p.name for p in paths) == ["precompute-features.yaml", "train-pipeline.yaml", "train.yaml"]
    assert sorted(tmp_path.iterdir()) == sorted(paths)
    assert [yaml.safe_load(p.read_text())["metadata"]["name"] for p in paths] == [p.stem for p in paths]


def test_render_is_byte_stable(tmp_path):
    first = [p.read_bytes() for p in render_all(tmp_path / "a")]
    second = [p.read_bytes() for p in render_all(tmp_path / "b")]

    assert first == second


def test_workflows_render_command_writes_the_templates(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="foxhunt")
    add_workflow_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["workflows", "render", "--out", str(tmp_path)])

    assert args.func(args) == 0
    assert {p.name for p in tmp_path.iterdir()} == {
        "precompute-features.yaml",
        "train.yaml",
        "train-pipeline.yaml",
    }
    assert str(tmp_path / "train.yaml") in capsys.readouterr().out


def test_rendering_does_not_import_torch(tmp_path):
    code = (
        "import sys; from foxhunt_workflows.render import render_all; "
        f"render_all({str(tmp_path)!r}); print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert result.stdout.strip() == "False"


def test_rendering_imports_no_training_library(tmp_path):
    heavy = ("torch", "numpy", "scipy", "pyarrow", "matplotlib", "boto3", "optuna")
    code = (
        "import sys; from foxhunt_workflows.render import render_all; "
        f"render_all({str(tmp_path)!r}); print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert result.stdout.strip() == "[]"


def test_commands_module_does_not_import_hera():
    code = (
        "import sys, foxhunt_workflows.commands; print(any(m.split('.')[0] == 'hera' for m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert result.stdout.strip() == "False"


def test_no_namespace_is_baked_into_the_templates(documents):
    assert all("namespace" not in d["metadata"] for d in documents.values())


@pytest.mark.parametrize("name", ["precompute-features", "train", "train-pipeline"])
def test_template_validates_against_the_argo_schema(argo_validator, documents, name):
    errors = [e.message for e in argo_validator.iter_errors(documents[name])]

    assert errors == []


def test_argo_schema_rejects_a_misspelt_key(argo_validator, documents):
    document = copy.deepcopy(documents["train"])
    document["spec"]["templates"][0]["retryStrategy"]["limt"] = 3

    assert not argo_validator.is_valid(document)


def test_every_template_ref_resolves(documents):
    assert template_ref_problems(documents.values()) == []


def test_a_template_ref_to_a_missing_template_is_reported(documents):
    broken = copy.deepcopy(documents)
    by_name = {t["name"]: t for t in broken["train-pipeline"]["spec"]["templates"][0]["dag"]["tasks"]}
    by_name["train"]["templateRef"]["template"] = "trian"

    assert template_ref_problems(broken.values()) == [
        "train-pipeline/pipeline/train: 'train' has no template 'trian'"
    ]


def test_every_parameter_used_is_declared(documents):
    assert parameter_problems(documents.values()) == []


def test_an_undeclared_parameter_is_reported(documents):
    broken = copy.deepcopy(documents)
    only_pod(broken["train"])["container"]["args"].append("{{inputs.parameters.sede}}")

    assert parameter_problems(broken.values()) == ["train/train: inputs.parameters.sede is not declared"]


def test_a_task_may_leave_out_an_input_that_has_a_default(documents):
    trimmed = copy.deepcopy(documents)
    tasks = trimmed["train-pipeline"]["spec"]["templates"][0]["dag"]["tasks"]
    (train,) = [t for t in tasks if t["name"] == "train"]
    arguments = train["arguments"]["parameters"]
    train["arguments"]["parameters"] = [a for a in arguments if a["name"] != "seeds"]

    assert len(train["arguments"]["parameters"]) == len(arguments) - 1
    assert parameter_problems(trimmed.values()) == []


def test_a_pod_spec_patch_wins_over_the_container_it_names(documents):
    patched = copy.deepcopy(documents)
    patch = {"containers": [{"name": "main", "image": "registry.example/patched:1"}]}
    only_pod(patched["train"])["podSpecPatch"] = json.dumps(patch)

    pods = {p["metadata"]["name"]: p for p in pod_manifests(patched.values(), "ml")}

    assert pods["train-train"]["spec"]["containers"][0]["image"] == "registry.example/patched:1"


def test_pipeline_declares_its_parameters_each_with_a_default_but_the_data_uris(documents):
    parameters = documents["train-pipeline"]["spec"]["arguments"]["parameters"]

    assert {p["name"] for p in parameters} == PIPELINE_PARAMETERS
    assert [p["name"] for p in parameters if "value" not in p] == ["bars-uri", "fxcache-uri", "output-uri"]
    assert all(isinstance(p["value"], str) for p in parameters if "value" in p)
    assert next(p for p in parameters if p["name"] == "model")["enum"] == ["dqn"]


def test_pipeline_runs_precompute_then_train_by_template_ref(documents):
    tasks = {t["name"]: t for t in documents["train-pipeline"]["spec"]["templates"][0]["dag"]["tasks"]}

    assert tasks["precompute"]["templateRef"] == {"name": "precompute-features", "template": "precompute"}
    assert tasks["train"]["templateRef"] == {"name": "train", "template": "train"}
    assert tasks["train"]["depends"] == "precompute"


def test_train_pod_asks_for_exactly_one_gpu(documents):
    assert gpu_count(only_pod(documents["train"])) == (1, 1)


def test_precompute_pod_asks_for_no_gpu_but_has_requests_and_limits(documents):
    precompute = only_pod(documents["precompute-features"])

    assert gpu_count(precompute) == (0, 0)
    assert set(precompute["container"]["resources"]["requests"]) >= {"cpu", "memory"}
    assert set(precompute["container"]["resources"]["limits"]) >= {"cpu", "memory"}


def test_gpu_pool_selector_follows_the_parameter(documents):
    train = only_pod(documents["train"])
    tasks = {t["name"]: t for t in documents["train-pipeline"]["spec"]["templates"][0]["dag"]["tasks"]}
    passed = {p["name"]: p["value"] for p in tasks["train"]["arguments"]["parameters"]}

    assert train["nodeSelector"] == {"foxhunt.io/gpu-pool": "{{inputs.parameters.gpu-pool}}"}
    assert passed["gpu-pool"] == "{{workflow.parameters.gpu-pool}}"


def test_gpu_pool_label_key_is_a_render_option():
    documents = render_documents(RenderOptions(gpu_pool_label="cloud.google.com/gke-nodepool"))

    assert only_pod(documents["train"])["nodeSelector"] == {
        "cloud.google.com/gke-nodepool": "{{inputs.parameters.gpu-pool}}"
    }


def test_train_pod_tolerates_gpu_taints(documents):
    tolerations = only_pod(documents["train"])["tolerations"]

    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations


def test_train_pod_mounts_a_memory_backed_dev_shm(documents):
    train = only_pod(documents["train"])
    mounts = {m["mountPath"]: m["name"] for m in train["container"]["volumeMounts"]}
    volumes = {v["name"]: v for v in train["volumes"]}

    assert volumes[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory"


@pytest.mark.parametrize("name", ["precompute-features", "train"])
def test_pods_retry_transient_failures_with_backoff_and_have_a_deadline(documents, name):
    template = only_pod(documents[name])
    retry = template["retryStrategy"]

    assert int(retry["limit"]) > 0
    assert {"duration", "factor", "maxDuration"} <= set(retry["backoff"])
    assert template["activeDeadlineSeconds"] > 0
    # Backoff's maxDuration counts from the first attempt: shorter than one attempt, it forbids retries.
    assert int(retry["backoff"]["maxDuration"].removesuffix("s")) > template["activeDeadlineSeconds"]


@pytest.mark.parametrize("name", ["precompute-features", "train"])
def test_pods_run_the_foxhunt_cli_without_a_shell(documents, name):
    container = only_pod(documents[name])["container"]

    # The train pod's command expands a list of caches into --fxcache flags, then runs foxhunt itself.
    assert container["command"] == (list(LAUNCHER) if name == "train" else ["foxhunt"])
    assert container["args"][0] == ("train" if name == "train" else "precompute")
    assert not {"sh", "bash", "-c"} & set(container["args"])


def test_train_args_carry_the_run_settings(documents):
    args = [a for a in only_pod(documents["train"])["container"]["args"] if a not in SWITCHES]
    flags = dict(zip(args[1::2], args[2::2], strict=True))

    assert flags["--model"] == "{{inputs.parameters.model}}"
    assert flags["--epochs"] == "{{inputs.parameters.epochs}}"
    assert flags["--trials"] == "{{inputs.parameters.trials}}"
    assert flags["--window"] == "{{inputs.parameters.window}}"
    assert flags["--max-folds"] == "{{inputs.parameters.max-folds}}"


def test_the_gpu_pods_delete_their_pushgateway_group_after_a_success(documents):
    pods = [only_pod(documents["train"]), *pod_templates(documents["train-pipeline"])]
    trainers = [t for t in pods if t["container"]["args"][0] == "train"]

    assert [t["name"] for t in trainers] == ["train", "trial-worker"]
    for pod in trainers:
        args = pod["container"]["args"]
        assert "--delete-metrics-group" in args
        assert args[args.index("--metrics-keep-seconds") + 1] == "{{inputs.parameters.metrics-keep-seconds}}"


def test_train_pod_gets_run_id_and_pushgateway_from_env(documents):
    env = {e["name"]: e.get("value") for e in only_pod(documents["train"])["container"]["env"]}

    assert env["FOXHUNT_RUN_ID"] == "{{workflow.name}}"
    assert env["FOXHUNT_PUSHGATEWAY"] == "{{inputs.parameters.pushgateway}}"


def test_every_pod_meets_the_restricted_profile(documents):
    assert restricted_problems(documents.values()) == []


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("allowPrivilegeEscalation", True, "allowPrivilegeEscalation is not false"),
        ("runAsUser", 0, "runAsUser is not a non-zero UID"),
        ("runAsUser", "{{inputs.parameters.uid}}", "runAsUser is not a non-zero UID"),
    ],
)
def test_a_pod_breaking_the_restricted_profile_is_reported(documents, key, value, problem):
    broken = copy.deepcopy(documents)
    only_pod(broken["train"])["container"]["securityContext"][key] = value

    assert restricted_problems(broken.values()) == [f"train/train: {problem}"]


@pytest.mark.parametrize("name", ["precompute-features", "train"])
def test_writable_dirs_are_empty_dirs_named_in_env(documents, name):
    template = only_pod(documents[name])
    mounts = {m["mountPath"] for m in template["container"]["volumeMounts"]}
    env = {e["name"]: e.get("value") for e in template["container"]["env"]}

    assert all("emptyDir" in v for v in template["volumes"])
    assert {"/tmp", "/cache"} <= mounts
    assert env["FOXHUNT_CACHE_DIR"] == "/cache"
    assert env["HOME"] == "/tmp"


@pytest.mark.parametrize("name", ["precompute-features", "train"])
def test_s3_credentials_come_only_from_a_secret(documents, name):
    env = only_pod(documents[name])["container"]["env"]
    aws = [e for e in env if e["name"].startswith("AWS_")]

    assert {e["name"] for e in aws} == {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ENDPOINT_URL",
        "AWS_REGION",
    }
    assert all("value" not in e and e["valueFrom"]["secretKeyRef"]["name"] == "foxhunt-s3" for e in aws)


def rendered_text(out_dir: Path) -> str:
    return "".join(p.read_text() for p in render_all(out_dir))


@pytest.mark.usefixtures("planted_secrets")
def test_no_secret_value_reaches_the_rendered_yaml(tmp_path):
    assert leaked(rendered_text(tmp_path)) == []


def inline_credentials(options, run_id="{{workflow.name}}"):
    """A careless pods.common_env: the credentials copied from the environment into the manifest."""
    return [Env(name=key, value=os.environ[key]) for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")]


@pytest.mark.usefixtures("planted_secrets")
def test_a_renderer_that_copies_planted_credentials_is_caught(tmp_path, monkeypatch):
    monkeypatch.setattr(pods, "common_env", inline_credentials)
    monkeypatch.setattr(templates, "common_env", inline_credentials)

    assert leaked(rendered_text(tmp_path)) == ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]


def test_credentials_in_pod_env_come_only_from_secrets(documents):
    assert credential_problems(documents.values()) == []


@pytest.mark.parametrize(
    "source",
    [{"value": "x"}, {"valueFrom": {"configMapKeyRef": {"name": "settings", "key": "token"}}}],
    ids=["a plain value", "a ConfigMap"],
)
def test_a_credential_not_read_from_a_secret_is_reported(documents, source):
    broken = copy.deepcopy(documents)
    only_pod(broken["train"])["container"]["env"].append({"name": "ARGO_TOKEN", **source})

    assert credential_problems(broken.values()) == ["train/train: ARGO_TOKEN is not read from a Secret"]


@pytest.mark.parametrize("name", ["precompute-features", "train"])
def test_pods_report_argo_metrics_for_runs_by_status_and_duration(documents, name):
    metrics = only_pod(documents[name])["metrics"]["prometheus"]
    counter = next(m for m in metrics if "counter" in m)
    gauge = next(m for m in metrics if "gauge" in m)

    assert {"key": "status", "value": "{{status}}"} in counter["labels"]
    assert gauge["gauge"]["value"] == "{{duration}}"


def test_the_train_pod_reads_the_compile_cache_key_only_from_an_optional_secret(documents):
    env = {e["name"]: e for e in only_pod(documents["train"])["container"]["env"]}

    ref = env["FOXHUNT_COMPILE_CACHE_KEY"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "foxhunt-compile-cache", "key": "key", "optional": True}
    assert "value" not in env["FOXHUNT_COMPILE_CACHE_KEY"]
