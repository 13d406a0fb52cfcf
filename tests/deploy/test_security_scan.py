"""A static scan (checkov) of what gets installed: the chart, the pods of its WorkflowTemplates, the Dockerfile.

checkov does not look inside Argo WorkflowTemplates, so each pod template is also written out as the
Kubernetes Pod it becomes. Every finding is fixed or suppressed with its reason beside it: in
`foxhunt_workflows.pods.SCAN_JUSTIFICATIONS` (annotations on the pods) and in the Dockerfile.

checkov pins old releases of boto3 and packaging, so it lives in its own virtualenv, which
scripts/test.sh installs (FOXHUNT_CHECKOV names another checkov executable).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from support.chart_render import render, render_manifests

from foxhunt_workflows.checks import pod_manifests
from foxhunt_workflows.pods import SCAN_JUSTIFICATIONS

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CHECKOV = Path(os.environ.get("FOXHUNT_CHECKOV", REPO / ".cache" / "checkov" / "bin" / "checkov"))
NAMESPACE = "ml"


def checkov(directory: Path) -> dict[str, list[dict]]:
    """checkov's findings for every Kubernetes manifest and Dockerfile under `directory`, by outcome."""
    assert CHECKOV.exists(), f"{CHECKOV} is missing: run scripts/test.sh, which installs checkov"
    result = subprocess.run(
        [str(CHECKOV), "-d", str(directory), "--framework", "kubernetes", "dockerfile", "-o", "json",
         "--skip-download"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    reports = json.loads(result.stdout) if result.stdout.strip() else []
    reports = reports if isinstance(reports, list) else [reports]
    outcomes: dict[str, list[dict]] = {"failed": [], "skipped": [], "passed": []}
    for report in reports:
        for outcome in outcomes:
            outcomes[outcome] += report.get("results", {}).get(f"{outcome}_checks", [])
    return outcomes


def write_scan_inputs(directory: Path) -> list[Path]:
    """The chart's objects, the WorkflowTemplates' pods and the Dockerfile, as files checkov reads."""
    files = {
        directory / "chart" / Path(path).name: text
        for path, text in render_manifests().items()
        if path.endswith(".yaml") and "workflowtemplate" not in path
    }
    for pod in pod_manifests(render(), NAMESPACE):
        files[directory / "pods" / f"{pod['metadata']['name']}.yaml"] = yaml.safe_dump(pod, sort_keys=False)
    files[directory / "image" / "Dockerfile"] = (REPO / "Dockerfile").read_text()
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return list(files)


@pytest.fixture(scope="module")
def scan(tmp_path_factory) -> tuple[list[Path], dict[str, list[dict]]]:
    directory = tmp_path_factory.mktemp("scan")
    return write_scan_inputs(directory), checkov(directory)


def where(finding: dict) -> str:
    return f"{finding['check_id']} {finding['resource']} ({finding['file_path']})"


def test_the_scan_covers_the_chart_every_workflow_pod_and_the_dockerfile(scan):
    files, _ = scan

    assert {p.name for p in files if p.parent.name == "pods"} == {
        "precompute-features-precompute.yaml", "train-train.yaml", "train-pipeline-trial-worker.yaml",
        "train-pipeline-instruments.yaml",
    }  # fmt: skip
    assert {"networkpolicy.yaml", "rbac.yaml", "serviceaccount.yaml"} <= {p.name for p in files}
    assert any(p.name == "Dockerfile" for p in files)


def test_the_scan_finds_nothing_left_unfixed_or_unjustified(scan):
    _, findings = scan

    assert [where(f) for f in findings["failed"]] == []
    assert findings["passed"]


def test_every_suppressed_finding_carries_its_reason(scan):
    _, findings = scan

    assert findings["skipped"]
    assert all(
        len(f["check_result"].get("suppress_comment", "").strip()) > 20 for f in findings["skipped"]
    ), [where(f) for f in findings["skipped"]]


def test_the_pods_suppress_only_the_justified_checks(scan):
    _, findings = scan
    on_pods = {f["check_id"] for f in findings["skipped"] if f["resource"].startswith("Pod.")}

    assert on_pods == set(SCAN_JUSTIFICATIONS)


def test_the_scan_catches_a_privileged_pod(tmp_path):
    (pod, *_) = pod_manifests(render(), NAMESPACE)
    broken = copy.deepcopy(pod)
    broken["spec"]["containers"][0]["securityContext"]["privileged"] = True
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(broken))

    failed = {f["check_id"] for f in checkov(tmp_path)["failed"]}

    assert "CKV_K8S_16" in failed
