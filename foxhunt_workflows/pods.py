"""What every foxhunt pod shares: security, writable directories, credentials, retries and metrics.

`RenderOptions` holds what a cluster may change; `foxhunt_container` builds one `foxhunt` container
template from it, so no pod can miss the restricted profile or the retry rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hera.workflows import (
    Container,
    Counter,
    EmptyDirVolume,
    Env,
    Gauge,
    Label,
    Parameter,
    Resources,
    SecretEnv,
)
from hera.workflows import models as m

from foxhunt_workflows.cluster_secrets import COMPILE_CACHE_SECRET, S3_SECRET
from foxhunt_workflows.params import pipeline_defaults

CACHE_DIR = "/cache"
TMP_DIR = "/tmp"
SHM_DIR = "/dev/shm"
# The trainer writes its Argo outputs here (FOXHUNT_OUTPUTS_DIR): the files behind the train step's
# output parameters and artifacts.
OUTPUTS_DIR = f"{TMP_DIR}/outputs"

# SIGTERM (preemption, a drain, `argo stop`) makes the trainer stop at the next step boundary, write
# its manifest and an `interrupted` summary to object storage and make its final metrics push, then
# exit 143. 120 s covers a slow upload of those files; Kubernetes' default of 30 s would not.
TERMINATION_GRACE_SECONDS = 120

# Exits that running the same command again fixes, because `foxhunt train` resumes from its manifest:
#   143 SIGTERM (preemption, drain, eviction: the trainer stopped cleanly and said so);
#   137 SIGKILL (the grace period ran out, or the OOM killer: a retry resumes after the last completed
#       fold, and `limit` bounds the cost when it was a real out-of-memory);
#   status Error: the pod vanished with its node, or never started.
# Not retried: 1 (the run failed: a diverged fold or an error it reported, which would fail again),
# 2 (bad input or settings) and 130 (a person pressed Ctrl-C).
RETRIED_EXIT_CODES = ("143", "137")

# Findings of the static scan (checkov) that these pods keep on purpose, each with its reason. They go
# on the pods as checkov's skip annotations ("ID=reason", so a reason has no "="), where the scan
# reads the reason beside the suppression.
SCAN_JUSTIFICATIONS: dict[str, str] = {
    "CKV_K8S_8": "a batch step serves nothing to probe; Argo follows the process and activeDeadlineSeconds bounds it",
    "CKV_K8S_9": "a batch step takes no traffic, so there is no readiness to report",
    "CKV_K8S_15": "IfNotPresent suits release tags, which are never reused; image.digest pins exactly, and "
    "image.pullPolicy: Always is the chart switch for a moving tag",
    "CKV_K8S_35": "boto3 reads AWS_* from the environment; the values come from a Secret by secretKeyRef, "
    "never appear in the pod spec, and the trainer never logs its environment",
    "CKV_K8S_38": "Argo's executor (the wait container) uses the ServiceAccount token to report the step's "
    "outputs; the chart's Role grants it only workflowtaskresults",
    "CKV_K8S_43": "the chart pins the image by digest when image.digest is set; the default is a release tag",
}


@dataclass(frozen=True)
class RenderOptions:
    """Everything about the rendered templates that a cluster may want to change."""

    image: str = pipeline_defaults()["image"]
    gpu_pool: str = pipeline_defaults()["gpu-pool"]
    # GKE users want cloud.google.com/gke-nodepool; a neutral key keeps the default portable.
    gpu_pool_label: str = "foxhunt.io/gpu-pool"
    service_account: str = "foxhunt-workflow"
    s3_secret: str = S3_SECRET.name
    # Key of the compile-cache signatures (FOXHUNT_COMPILE_CACHE_KEY): a Secret the data bucket's writers
    # cannot read. Optional: without it a pod keeps no compile cache and compiles afresh.
    compile_cache_secret: str = COMPILE_CACHE_SECRET.name
    run_as_user: int = 10001
    precompute_resources: Resources = field(
        default_factory=lambda: Resources(
            cpu_request="2",
            cpu_limit="4",
            memory_request="8Gi",
            memory_limit="16Gi",
            ephemeral_request="10Gi",
            ephemeral_limit="20Gi",
        )  # fmt: skip
    )
    train_resources: Resources = field(
        default_factory=lambda: Resources(
            cpu_request="8",
            cpu_limit="16",
            memory_request="64Gi",
            memory_limit="128Gi",
            ephemeral_request="20Gi",
            ephemeral_limit="40Gi",
            gpus=1,
        )  # fmt: skip
    )
    shm_size: str = "16Gi"
    precompute_deadline_seconds: int = 2 * 3600
    train_deadline_seconds: int = 12 * 3600


def pod_security(options: RenderOptions) -> m.PodSecurityContext:
    """The pod half of the "restricted" Pod Security Standard, so pods run where it is enforced."""
    return m.PodSecurityContext(
        run_as_non_root=True,
        run_as_user=options.run_as_user,
        run_as_group=options.run_as_user,
        fs_group=options.run_as_user,
        seccomp_profile=m.SeccompProfile(type="RuntimeDefault"),
    )


def container_security(options: RenderOptions) -> m.SecurityContext:
    """The container half of the "restricted" profile, with a read-only root filesystem."""
    return m.SecurityContext(
        allow_privilege_escalation=False,
        capabilities=m.Capabilities(drop=["ALL"]),
        read_only_root_filesystem=True,
        run_as_non_root=True,
        run_as_user=options.run_as_user,
        seccomp_profile=m.SeccompProfile(type="RuntimeDefault"),
    )


def common_env(options: RenderOptions, run_id: str = "{{workflow.name}}") -> list:
    """Writable locations, the run id, and the S3 settings from the Secret."""
    # The root filesystem is read-only: every tool that writes (matplotlib, torch, pip caches)
    # is pointed at the emptyDirs.
    env: list = [
        Env(name="HOME", value=TMP_DIR),
        Env(name="FOXHUNT_CACHE_DIR", value=CACHE_DIR),
        Env(name="XDG_CACHE_HOME", value=CACHE_DIR),
        Env(name="MPLCONFIGDIR", value=f"{TMP_DIR}/matplotlib"),
        Env(name="FOXHUNT_RUN_ID", value=run_id),
    ]
    # boto3 reads the S3 variables itself; they come only from the Secrets, never from parameters or
    # the image (cluster_secrets.py names each Secret's keys).
    for secret_name, secret in (
        (options.s3_secret, S3_SECRET),
        (options.compile_cache_secret, COMPILE_CACHE_SECRET),
    ):
        env += [
            SecretEnv(name=k.env, secret_name=secret_name, secret_key=k.key, optional=k.optional or None)
            for k in secret.keys
        ]
    return env


def writable_dirs(options: RenderOptions, *, shm: bool = False) -> list[EmptyDirVolume]:
    """emptyDirs for /tmp and the download cache, and a memory-backed /dev/shm for PyTorch."""
    volumes = [
        EmptyDirVolume(name="tmp", mount_path=TMP_DIR),
        EmptyDirVolume(name="cache", mount_path=CACHE_DIR),
    ]
    if shm:
        # PyTorch worker processes share tensors through /dev/shm, which defaults to 64 MiB.
        size = m.Quantity(options.shm_size)
        volumes.append(EmptyDirVolume(name="dshm", mount_path=SHM_DIR, medium="Memory", size_limit=size))
    return volumes


def retry_strategy(deadline_seconds: int) -> m.RetryStrategy:
    """Retry exactly the exits a resume fixes (see RETRIED_EXIT_CODES), with backoff."""
    # exitCode is compared as a string: it is empty for a pod that never ran.
    # maxDuration counts from the first attempt, so it must outlast a full-length attempt.
    codes = " || ".join(f'lastRetry.exitCode == "{code}"' for code in RETRIED_EXIT_CODES)
    return m.RetryStrategy(
        limit=m.IntOrString(3),
        retry_policy="Always",
        expression=f'lastRetry.status == "Error" || {codes}',
        backoff=m.Backoff(
            duration="1m", factor=m.IntOrString(2), cap="15m", max_duration=f"{2 * deadline_seconds}s"
        ),
    )


def step_metrics(step: str) -> list:
    """Argo's own view of each step, so a pod that never reached the trainer still shows up."""
    # Argo appends _total to counters when it exports them.
    return [
        Counter(
            name="foxhunt_workflow_step_runs",
            help="foxhunt workflow steps finished, by step and final status",
            labels=[Label(key="step", value=step), Label(key="status", value="{{status}}")],
            value="1",
        ),
        Gauge(
            name="foxhunt_workflow_step_duration_seconds",
            help="Wall time of the last foxhunt workflow step, by step",
            labels=[Label(key="step", value=step)],
            realtime=False,
            value="{{duration}}",
        ),
    ]


def gpu_placement(options: RenderOptions, pool: Parameter) -> dict:
    """Node selector on the GPU pool (the key is the cluster's, the value a parameter) and the GPU taint."""
    return {
        "node_selector": {options.gpu_pool_label: str(pool)},
        "tolerations": [m.Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")],
        # Room for the trainer's clean stop on SIGTERM; Argo templates set it through the pod spec.
        "pod_spec_patch": f'{{"terminationGracePeriodSeconds": {TERMINATION_GRACE_SECONDS}}}',
    }


def foxhunt_container(
    options: RenderOptions,
    *,
    name: str,
    inputs: Sequence,
    resources: Resources,
    deadline_seconds: int,
    env: list | None = None,
    gpu: bool = False,
    **template_fields,
) -> Container:
    """One `foxhunt` container template on the image input; the caller sets its `args` from its inputs.

    Its references go through Hera's `get_parameter`: naming an input the template does not
    declare is a KeyError when the template is defined, not a failure in the cluster.
    """
    container = Container(
        name=name,
        inputs=list(inputs),
        command=["foxhunt"],
        env=env if env is not None else common_env(options),
        volumes=writable_dirs(options, shm=gpu),
        resources=resources,
        security_context=container_security(options),
        pod_security_context=pod_security(options),
        retry_strategy=retry_strategy(deadline_seconds),
        active_deadline_seconds=deadline_seconds,
        metrics=step_metrics(name),
        # The chart's NetworkPolicy selects the pods by these labels.
        labels={"app.kubernetes.io/name": "foxhunt", "app.kubernetes.io/component": name},
        annotations={
            f"checkov.io/skip{i}": f"{check}={reason}"
            for i, (check, reason) in enumerate(SCAN_JUSTIFICATIONS.items(), 1)
        },
        **template_fields,
    )
    container.image = str(container.get_parameter("image"))
    if gpu:
        for key, value in gpu_placement(options, container.get_parameter("gpu-pool")).items():
            setattr(container, key, value)
    return container
