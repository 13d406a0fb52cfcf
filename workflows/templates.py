"""Hera definitions of the three foxhunt WorkflowTemplates.

`precompute-features` builds the fxcache on a CPU pod, `train` runs every fold in one GPU pod, and
`train-pipeline` chains the two by `templateRef`. The values that differ between clusters (image,
GPU pool and its label key, resources, service account, secret name) are `RenderOptions`; the Helm
chart ships the render of the defaults and overrides those same fields from its values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hera.workflows import (
    DAG,
    Container,
    Counter,
    EmptyDirVolume,
    Env,
    Gauge,
    Label,
    Parameter,
    SecretEnv,
    Task,
    WorkflowTemplate,
)
from hera.workflows import models as m

from foxhunt_workflows.params import (
    PIPELINE_PARAMETERS,
    PIPELINE_TEMPLATE,
    PRECOMPUTE_TEMPLATE,
    TRAIN_TEMPLATE,
    pipeline_defaults,
)

# Template names inside each WorkflowTemplate: what `templateRef.template` points at.
PRECOMPUTE_STEP = "precompute"
TRAIN_STEP = "train"
PIPELINE_ENTRYPOINT = "pipeline"

CACHE_DIR = "/cache"
TMP_DIR = "/tmp"
SHM_DIR = "/dev/shm"

# The parameters the train step receives from the pipeline, in the order its CLI flags appear.
TRAIN_INPUTS: tuple[str, ...] = (
    "fxcache-uri",
    "output-uri",
    "model",
    "epochs",
    "trials",
    "gpu-pool",
    "pushgateway",
    "image",
    "train-days",
    "val-days",
    "step-days",
    "window",
    "max-folds",
)
PRECOMPUTE_INPUTS: tuple[str, ...] = ("bars-uri", "fxcache-uri", "image")


@dataclass(frozen=True)
class PodResources:
    """Requests and limits of one container, as Kubernetes quantities."""

    requests: dict[str, str]
    limits: dict[str, str]


@dataclass(frozen=True)
class RenderOptions:
    """Everything about the rendered templates that a cluster may want to change."""

    image: str = pipeline_defaults()["image"]
    gpu_pool: str = pipeline_defaults()["gpu-pool"]
    # GKE users want cloud.google.com/gke-nodepool; a neutral key keeps the default portable.
    gpu_pool_label: str = "foxhunt.io/gpu-pool"
    service_account: str = "foxhunt-workflow"
    s3_secret: str = "foxhunt-s3"
    run_as_user: int = 10001
    precompute_resources: PodResources = field(
        default_factory=lambda: PodResources(
            requests={"cpu": "2", "memory": "8Gi", "ephemeral-storage": "10Gi"},
            limits={"cpu": "4", "memory": "16Gi", "ephemeral-storage": "20Gi"},
        )
    )
    train_resources: PodResources = field(
        default_factory=lambda: PodResources(
            requests={"cpu": "8", "memory": "64Gi", "ephemeral-storage": "20Gi"},
            limits={"cpu": "16", "memory": "128Gi", "ephemeral-storage": "40Gi"},
        )
    )
    shm_size: str = "16Gi"
    precompute_deadline_seconds: int = 2 * 3600
    train_deadline_seconds: int = 12 * 3600


def _defaults(options: RenderOptions) -> dict[str, str]:
    return pipeline_defaults() | {"image": options.image, "gpu-pool": options.gpu_pool}


def _inputs(names: tuple[str, ...], options: RenderOptions) -> list[Parameter]:
    by_name = {p.name: p for p in PIPELINE_PARAMETERS}
    defaults = _defaults(options)
    return [
        Parameter(
            name=name,
            default=defaults[name],
            description=by_name[name].description,
            enum=list(by_name[name].enum) or None,
        )
        for name in names
    ]


def _arguments(names: tuple[str, ...], options: RenderOptions) -> list[Parameter]:
    # Declared at the workflow level too, so `argo submit --from workflowtemplate/<step> -p ...`
    # works for a single step and the UI offers the same fields.
    defaults = _defaults(options)
    return [Parameter(name=name, value=defaults[name]) for name in names]


def _pod_security(options: RenderOptions) -> m.PodSecurityContext:
    # The "restricted" Pod Security Standard, so the pods run in namespaces that enforce it.
    return m.PodSecurityContext(
        run_as_non_root=True,
        run_as_user=options.run_as_user,
        run_as_group=options.run_as_user,
        fs_group=options.run_as_user,
        seccomp_profile=m.SeccompProfile(type="RuntimeDefault"),
    )


def _container_security(options: RenderOptions) -> m.SecurityContext:
    return m.SecurityContext(
        allow_privilege_escalation=False,
        capabilities=m.Capabilities(drop=["ALL"]),
        read_only_root_filesystem=True,
        run_as_non_root=True,
        run_as_user=options.run_as_user,
        seccomp_profile=m.SeccompProfile(type="RuntimeDefault"),
    )


def _resources(resources: PodResources, extra: dict[str, str] | None = None) -> m.ResourceRequirements:
    extra = extra or {}
    return m.ResourceRequirements(
        requests={k: m.Quantity(v) for k, v in {**resources.requests, **extra}.items()},
        limits={k: m.Quantity(v) for k, v in {**resources.limits, **extra}.items()},
    )


def _common_env(options: RenderOptions) -> list:
    # The root filesystem is read-only: every tool that writes (matplotlib, torch, pip caches)
    # is pointed at the emptyDirs.
    env: list = [
        Env(name="HOME", value=TMP_DIR),
        Env(name="FOXHUNT_CACHE_DIR", value=CACHE_DIR),
        Env(name="XDG_CACHE_HOME", value=CACHE_DIR),
        Env(name="MPLCONFIGDIR", value=f"{TMP_DIR}/matplotlib"),
        Env(name="FOXHUNT_RUN_ID", value="{{workflow.name}}"),
    ]
    # boto3 reads these itself; they come only from the Secret, never from parameters or the image.
    for key, optional in (
        ("AWS_ACCESS_KEY_ID", False),
        ("AWS_SECRET_ACCESS_KEY", False),
        ("AWS_ENDPOINT_URL", True),
        ("AWS_REGION", True),
    ):
        env.append(SecretEnv(name=key, secret_name=options.s3_secret, secret_key=key, optional=optional or None))
    return env


def _writable_dirs() -> list[EmptyDirVolume]:
    return [
        EmptyDirVolume(name="tmp", mount_path=TMP_DIR),
        EmptyDirVolume(name="cache", mount_path=CACHE_DIR),
    ]


def _retry_strategy(deadline_seconds: int) -> m.RetryStrategy:
    # Exit codes 1 and 2 are the trainer's own verdicts (a failed run, bad input) and would fail
    # again; a pod lost with its node ("Error") or SIGTERMed by preemption or a drain (143) would not.
    # exitCode is compared as a string: it is empty for a pod that never ran.
    # maxDuration counts from the first attempt, so it must outlast a full-length attempt.
    return m.RetryStrategy(
        limit=m.IntOrString(3),
        retry_policy="Always",
        expression='lastRetry.status == "Error" || lastRetry.exitCode == "143"',
        backoff=m.Backoff(
            duration="1m", factor=m.IntOrString(2), cap="15m", max_duration=f"{2 * deadline_seconds}s"
        ),
    )


def _step_metrics(step: str) -> list:
    # Argo's own view of each step, so a pod that never reached the trainer still shows up;
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


def _arg(name: str) -> str:
    return f"{{{{inputs.parameters.{name}}}}}"


def _foxhunt_step_template(
    options: RenderOptions,
    *,
    template: str,
    step: str,
    inputs: tuple[str, ...],
    args: list[str],
    resources: m.ResourceRequirements,
    deadline_seconds: int,
    env: list | None = None,
    volumes: list | None = None,
    **placement,
) -> WorkflowTemplate:
    """A WorkflowTemplate of one `foxhunt` container: every pod gets the same security, retries and metrics."""
    with WorkflowTemplate(
        name=template,
        entrypoint=step,
        service_account_name=options.service_account,
        arguments=_arguments(inputs, options),
    ) as wt:
        Container(
            name=step,
            inputs=_inputs(inputs, options),
            image=_arg("image"),
            command=["foxhunt"],
            args=args,
            env=env or _common_env(options),
            volumes=volumes or _writable_dirs(),
            resources=resources,
            security_context=_container_security(options),
            pod_security_context=_pod_security(options),
            retry_strategy=_retry_strategy(deadline_seconds),
            active_deadline_seconds=deadline_seconds,
            metrics=_step_metrics(step),
            **placement,
        )
    return wt


def precompute_template(options: RenderOptions) -> WorkflowTemplate:
    """`precompute-features`: bars to fxcache on a CPU pod; a fast no-op when the cache is current."""
    return _foxhunt_step_template(
        options,
        template=PRECOMPUTE_TEMPLATE,
        step=PRECOMPUTE_STEP,
        inputs=PRECOMPUTE_INPUTS,
        args=["precompute", "--bars", _arg("bars-uri"), "--out", _arg("fxcache-uri")],
        resources=_resources(options.precompute_resources),
        deadline_seconds=options.precompute_deadline_seconds,
    )


def train_template(options: RenderOptions) -> WorkflowTemplate:
    """`train`: every walk-forward fold in one pod with exactly one GPU from the chosen pool."""
    args = [
        "train",
        "--fxcache", _arg("fxcache-uri"),
        "--out", _arg("output-uri"),
        "--model", _arg("model"),
        "--epochs", _arg("epochs"),
        "--trials", _arg("trials"),
        "--device", "cuda",
        "--train-days", _arg("train-days"),
        "--val-days", _arg("val-days"),
        "--step-days", _arg("step-days"),
        "--window", _arg("window"),
        "--max-folds", _arg("max-folds"),
    ]  # fmt: skip
    return _foxhunt_step_template(
        options,
        template=TRAIN_TEMPLATE,
        step=TRAIN_STEP,
        inputs=TRAIN_INPUTS,
        args=args,
        env=_common_env(options) + [Env(name="FOXHUNT_PUSHGATEWAY", value=_arg("pushgateway"))],
        # PyTorch worker processes share tensors through /dev/shm, which defaults to 64 MiB.
        volumes=_writable_dirs()
        + [EmptyDirVolume(name="dshm", mount_path=SHM_DIR, medium="Memory", size_limit=m.Quantity(options.shm_size))],
        resources=_resources(options.train_resources, {"nvidia.com/gpu": "1"}),
        deadline_seconds=options.train_deadline_seconds,
        node_selector={options.gpu_pool_label: _arg("gpu-pool")},
        tolerations=[m.Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")],
    )


def pipeline_template(options: RenderOptions) -> WorkflowTemplate:
    """`train-pipeline`: precompute-features then train, both by `templateRef`."""
    defaults = _defaults(options)
    with WorkflowTemplate(
        name=PIPELINE_TEMPLATE,
        entrypoint=PIPELINE_ENTRYPOINT,
        service_account_name=options.service_account,
        arguments=[
            Parameter(name=p.name, value=defaults[p.name], description=p.description, enum=list(p.enum) or None)
            for p in PIPELINE_PARAMETERS
        ],
        labels={"app.kubernetes.io/name": "foxhunt"},
    ) as wt:
        with DAG(name=PIPELINE_ENTRYPOINT):
            precompute = Task(
                name=PRECOMPUTE_STEP,
                template_ref=m.TemplateRef(name=PRECOMPUTE_TEMPLATE, template=PRECOMPUTE_STEP),
                arguments=[Parameter(name=n, value=f"{{{{workflow.parameters.{n}}}}}") for n in PRECOMPUTE_INPUTS],
            )
            # Each run writes under its own prefix, so reruns never overwrite an earlier run's reports.
            train_args = {n: f"{{{{workflow.parameters.{n}}}}}" for n in TRAIN_INPUTS}
            train_args["output-uri"] = "{{workflow.parameters.output-uri}}/{{workflow.name}}"
            train = Task(
                name=TRAIN_STEP,
                template_ref=m.TemplateRef(name=TRAIN_TEMPLATE, template=TRAIN_STEP),
                arguments=[Parameter(name=n, value=v) for n, v in train_args.items()],
            )
            precompute >> train
    return wt


def build_templates(options: RenderOptions | None = None) -> list[WorkflowTemplate]:
    """The three WorkflowTemplates, in dependency order (the pipeline last)."""
    options = options or RenderOptions()
    return [precompute_template(options), train_template(options), pipeline_template(options)]
