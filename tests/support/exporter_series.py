"""Series the dashboard reads from other exporters, pushed under their real names for a run's pods.

In a cluster NVIDIA's DCGM exporter reports each GPU (with the pod using it) and Argo's workflow
controller reports the templates' custom metrics; neither runs here, so the tests push series with the
names and labels those exporters use to the session Pushgateway, next to a real run's own metrics.
"""

from __future__ import annotations

import urllib.request

import pytest

MIB = 1024 * 1024
STEP_RUNS = "argo_workflows_foxhunt_workflow_step_runs"  # Argo 3.6+: custom metrics prefixed argo_workflows_


def push_text(pushgateway: str, grouping: str, text: str) -> None:
    """Replace one Pushgateway group (`job/NAME/label/value...`) with exposition-format text."""
    request = urllib.request.Request(f"{pushgateway}/metrics/{grouping}", data=text.encode(), method="PUT")
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status in (200, 202)


def dcgm_text(pod: str, gpu: int, utilisation: float, used_mib: float, free_mib: float) -> str:
    """What the DCGM exporter reports for one GPU that a pod of a workflow uses (its Kubernetes pod labels)."""
    labels = (
        f'gpu="{gpu}",UUID="GPU-{gpu:08d}-test",device="nvidia{gpu}",modelName="NVIDIA H200",'
        f'Hostname="gpu-node-1",container="main",namespace="ml",pod="{pod}"'
    )
    return (
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {utilisation}\n"
        "# TYPE DCGM_FI_DEV_FB_USED gauge\n"
        f"DCGM_FI_DEV_FB_USED{{{labels}}} {used_mib}\n"
        "# TYPE DCGM_FI_DEV_FB_FREE gauge\n"
        f"DCGM_FI_DEV_FB_FREE{{{labels}}} {free_mib}\n"
    )


def push_dcgm(pushgateway: str, pod: str, utilisation: float, used_mib: float, free_mib: float) -> None:
    push_text(
        pushgateway, f"job/dcgm-exporter/instance/{pod}", dcgm_text(pod, 0, utilisation, used_mib, free_mib)
    )


def push_step_runs(pushgateway: str, step: str, status: str, count: int) -> None:
    """Argo's counter of a step's finished attempts, by status, as the controller exposes it."""
    text = f'# TYPE {STEP_RUNS} counter\n{STEP_RUNS}{{step="{step}",status="{status}"}} {count}\n'
    push_text(pushgateway, f"job/argo-workflows/instance/{step}-{status}", text)


@pytest.fixture(scope="session")
def exporter_series(pushgateway, prometheus, pipeline_run) -> str:
    """DCGM series for the pipeline run's train pod and Argo step counts with failures; the pod's name."""
    pod = f"{pipeline_run.run_id}-train-1234567890"
    push_dcgm(pushgateway, pod, utilisation=87.0, used_mib=61_440.0, free_mib=81_920.0)
    # A counter's increase needs two scraped values: 0, then 2 failed attempts of the train step.
    push_step_runs(pushgateway, "train", "Failed", 0)
    prometheus.wait_for(f'{STEP_RUNS}{{step="train", status="Failed"}} == 0', 1)
    push_step_runs(pushgateway, "train", "Failed", 2)
    prometheus.wait_for(f'{STEP_RUNS}{{step="train", status="Failed"}} == 2', 1)
    prometheus.wait_for(f'DCGM_FI_DEV_GPU_UTIL{{pod="{pod}"}}', 1)
    return pod
