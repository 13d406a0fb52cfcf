"""Hera definitions of the three foxhunt WorkflowTemplates.

`precompute-features` builds the fxcache on a CPU pod; `train` runs every fold in one GPU pod;
`train-pipeline` chains them by `templateRef`. With `trials > 0` the pipeline fans out
`trial-workers` GPU pods on one Optuna study (PostgreSQL, URL from a Secret), then trains the best
settings on all folds. Parameter references go through Hera's `get_parameter`, so a misspelt name
is a KeyError when the templates are defined. The values that differ between clusters are
`RenderOptions`; the Helm chart ships the render of the defaults and overrides those same fields.
"""

from __future__ import annotations

# The `type: ignore`s below: hera types a template's `inputs`, `env` and a task's `>>` as wide unions
# (one item, a list, a dict, None); these templates always build lists, which the code relies on.
import json
from collections.abc import Callable, Iterable, Mapping

from hera.workflows import (
    DAG,
    Artifact,
    Container,
    Env,
    NoneArchiveStrategy,
    Parameter,
    RawArtifact,
    Resources,
    SecretEnv,
    Task,
    WorkflowTemplate,
)
from hera.workflows import models as m

from foxhunt_workflows.cluster_secrets import STUDY_SECRET
from foxhunt_workflows.instruments import FXCACHES_FILE, ITEMS_FILE, LAUNCHER
from foxhunt_workflows.params import (
    DQN_PARAMS_FILE,
    PIPELINE_TEMPLATE,
    PRECOMPUTE_INPUTS,
    PRECOMPUTE_TEMPLATE,
    RUN_SETTINGS,
    SEARCH_SPACE_FILE,
    TRAIN_INPUTS,
    TRAIN_TEMPLATE,
    TRIAL_WORKER_INPUTS,
    WorkflowParameter,
    parameter,
    pipeline_defaults,
    pipeline_parameters,
)
from foxhunt_workflows.pods import OUTPUTS_DIR, RenderOptions, common_env, foxhunt_container
from foxhunt_workflows.schema import SCHEMA_ANNOTATION, template_schema

# Template names inside each WorkflowTemplate: what `templateRef.template` points at.
PRECOMPUTE_STEP = "precompute"
TRAIN_STEP = "train"
TRIAL_WORKER = "trial-worker"
PIPELINE_ENTRYPOINT = "pipeline"
INSTRUMENTS_STEP = "instruments"
# What the instruments step hands on: the precompute fan-out's items, and the caches the training pods take.
INSTRUMENT_ITEMS = f"{{{{tasks.{INSTRUMENTS_STEP}.outputs.parameters.instruments}}}}"
FXCACHE_LIST = f"{{{{tasks.{INSTRUMENTS_STEP}.outputs.parameters.fxcache-uris}}}}"
# The key in the study Secret that holds the PostgreSQL URL (SQLAlchemy form).
STUDY_STORAGE = STUDY_SECRET.key("FOXHUNT_STUDY_STORAGE")
INSTRUMENTS_DEADLINE_SECONDS = 600  # the plan reads two parameters and writes two small files

# Inputs the pipeline fills for each trial worker; they are not workflow parameters.
WORKER_INDEX = WorkflowParameter(
    "worker", "0", "Index of this trial worker, 0 to trial-workers - 1", {"type": "integer", "minimum": 0}
)
STUDY_NAME = WorkflowParameter("study-name", "", "Optuna study the workers share: the workflow's name")


def _declared(names: Iterable[str], options: RenderOptions, template: str) -> list[WorkflowParameter]:
    cluster = {"image": options.image, "gpu-pool": options.gpu_pool}
    declared = []
    for name in names:
        p = parameter(name, template)
        declared.append(WorkflowParameter(p.name, cluster.get(name, p.default), p.description, p.schema))
    return declared


# A parameter without a default is declared without one (Hera would write an explicit None as "null"):
# Argo then requires a value on every submission.
def _as_input(p: WorkflowParameter) -> Parameter:
    if p.default is None:
        return Parameter(name=p.name, description=p.help, enum=list(p.enum) or None)
    return Parameter(name=p.name, description=p.help, enum=list(p.enum) or None, default=p.default)


def _as_argument(p: WorkflowParameter) -> Parameter:
    if p.default is None:
        return Parameter(name=p.name, description=p.help, enum=list(p.enum) or None)
    return Parameter(name=p.name, description=p.help, enum=list(p.enum) or None, value=p.default)


def _schema(parameters: Iterable[WorkflowParameter]) -> dict[str, str]:
    # Argo parameters are untyped strings: their schema travels with the template for `foxhunt submit`.
    return {SCHEMA_ANNOTATION: json.dumps(template_schema(list(parameters)), separators=(",", ":"))}


def _ref(container: Container) -> Callable[[str], str]:
    return lambda name: str(container.get_parameter(name))


def _settings_flags(ref: Callable[[str], str]) -> list[str]:
    return [word for name in RUN_SETTINGS for word in (f"--{name}", ref(name))]


def _dqn_params_file(ref: Callable[[str], str]) -> RawArtifact:
    # Argo writes the JSON parameter to a file before the container starts: no shell in the pod.
    return RawArtifact(name="dqn-params", path=DQN_PARAMS_FILE, data=f'{{"dqn": {ref("dqn-params")}}}')


def _step_template(name: str, step: Container, options: RenderOptions, **extra) -> WorkflowTemplate:
    # Declared at the workflow level too, so `argo submit --from workflowtemplate/<name> -p ...` works
    # for a single step and the UI offers the same fields.
    declared = _declared([p.name for p in step.inputs if isinstance(p, Parameter)], options, name)  # type: ignore[misc, union-attr]
    return WorkflowTemplate(
        name=name,
        entrypoint=step.name,
        service_account_name=options.service_account,
        arguments=[_as_argument(p) for p in declared],
        annotations=_schema(declared),
        templates=[step],
        **extra,
    )


def precompute_step(options: RenderOptions) -> Container:
    """The CPU pod: bars to fxcache; a fast no-op when the cache is current."""
    step = foxhunt_container(
        options,
        name=PRECOMPUTE_STEP,
        inputs=[_as_input(p) for p in _declared(PRECOMPUTE_INPUTS, options, PRECOMPUTE_TEMPLATE)],
        resources=options.precompute_resources,
        deadline_seconds=options.precompute_deadline_seconds,
    )
    ref = _ref(step)
    step.args = ["precompute", "--bars", ref("bars-uri"), "--out", ref("fxcache-uri")]
    return step


def train_step(options: RenderOptions) -> Container:
    """The GPU pod: every walk-forward fold on one trainer, with its results as Argo outputs."""
    step = foxhunt_container(
        options,
        name=TRAIN_STEP,
        inputs=[_as_input(p) for p in _declared(TRAIN_INPUTS, options, TRAIN_TEMPLATE)],
        resources=options.train_resources,
        deadline_seconds=options.train_deadline_seconds,
        gpu=True,
    )
    step.command = list(LAUNCHER)  # expands a JSON list in --fxcache into one flag per cache
    ref = _ref(step)
    step.inputs.append(_dqn_params_file(ref))  # type: ignore[union-attr]
    step.args = [
        "train", "--fxcache", ref("fxcache-uri"), "--out", ref("output-uri"), "--model", ref("model"),
        "--epochs", ref("epochs"), "--trials", ref("trials"), "--hyperopt-params", ref("hyperopt-params-uri"),
        "--device", "cuda", "--delete-metrics-group", *_settings_flags(ref),
    ]  # fmt: skip
    step.env += [  # type: ignore[operator]
        Env(name="FOXHUNT_PUSHGATEWAY", value=ref("pushgateway")),
        Env(name="FOXHUNT_OUTPUTS_DIR", value=OUTPUTS_DIR),
    ]
    # Shown by `argo get` and the UI. The files are the trainer's; a run that failed before writing
    # them still ends with its own status (defaults, optional artifacts).
    step.outputs = [
        Parameter(name="summary-uri", global_name="summary-uri",
                  value_from=m.ValueFrom(path=f"{OUTPUTS_DIR}/summary_uri", default="")),
        Parameter(name="stitched-sharpe", global_name="stitched-sharpe",
                  value_from=m.ValueFrom(path=f"{OUTPUTS_DIR}/stitched_sharpe", default="")),
        # With holdout-days: the headline, on the held-out final period (stitched-sharpe is in-search).
        Parameter(name="holdout-sharpe", global_name="holdout-sharpe",
                  value_from=m.ValueFrom(path=f"{OUTPUTS_DIR}/holdout_sharpe", default="")),
        Artifact(name="summary", path=f"{OUTPUTS_DIR}/summary.json", optional=True, archive=NoneArchiveStrategy()),
        Artifact(name="run-png", path=f"{OUTPUTS_DIR}/run.png", optional=True, archive=NoneArchiveStrategy()),
    ]  # fmt: skip
    return step


def trial_worker_step(options: RenderOptions) -> Container:
    """One GPU pod of a study: trials until the shared study has `trials` finished ones."""
    # A worker's output-uri is its own folder, used as given, like the train step's.
    inputs = [_as_input(p) for p in _declared(TRIAL_WORKER_INPUTS, options, TRAIN_TEMPLATE)]
    inputs += [Parameter(name=p.name, description=p.description) for p in (WORKER_INDEX, STUDY_NAME)]
    step = foxhunt_container(
        options,
        name=TRIAL_WORKER,
        inputs=inputs,
        resources=options.train_resources,
        deadline_seconds=options.train_deadline_seconds,
        gpu=True,
        env=common_env(options, run_id="{{workflow.name}}-worker-{{inputs.parameters.worker}}"),
    )
    step.command = list(LAUNCHER)
    ref = _ref(step)
    step.inputs += [  # type: ignore[operator]
        _dqn_params_file(ref),
        RawArtifact(name="search-space", path=SEARCH_SPACE_FILE, data=ref("search-space")),
    ]
    # Kubernetes expands $(FOXHUNT_STUDY_STORAGE) from the container's env: the URL (with its
    # password) never appears in the template, the workflow or the Argo UI.
    step.args = [
        "train", "--fxcache", ref("fxcache-uri"), "--out", ref("output-uri"), "--model", ref("model"),
        "--epochs", ref("epochs"), "--trials", ref("trials"), "--search-space", SEARCH_SPACE_FILE,
        "--study-storage", f"$({STUDY_STORAGE.env})", "--study-name", ref("study-name"),
        "--population", ref("trial-population"),
        "--hyperopt-params", ref("hyperopt-params-uri"), "--device", "cuda", "--delete-metrics-group",
        *_settings_flags(ref),
    ]  # fmt: skip
    step.env += [  # type: ignore[operator]
        Env(name="FOXHUNT_PUSHGATEWAY", value=ref("pushgateway")),
        Env(name="FOXHUNT_TRIAL_WORKER", value=ref("worker")),
        SecretEnv(name=STUDY_STORAGE.env, secret_name=ref("study-storage-secret"), secret_key=STUDY_STORAGE.key),
    ]  # fmt: skip
    return step


def instruments_step(options: RenderOptions) -> Container:
    """The small CPU pod that checks the bars list and plans each instrument's cache (`instruments.plan`)."""
    step = foxhunt_container(
        options,
        name=INSTRUMENTS_STEP,
        inputs=[_as_input(p) for p in _declared(PRECOMPUTE_INPUTS, options, PIPELINE_TEMPLATE)],
        resources=Resources(cpu_request="100m", cpu_limit="500m", memory_request="128Mi",
                            memory_limit="256Mi", ephemeral_request="64Mi", ephemeral_limit="128Mi"),
        deadline_seconds=INSTRUMENTS_DEADLINE_SECONDS,
    )  # fmt: skip
    step.command = list(LAUNCHER)
    ref = _ref(step)
    step.args = ["plan", "--bars", ref("bars-uri"), "--fxcache", ref("fxcache-uri"), "--out", OUTPUTS_DIR]
    step.outputs = [
        Parameter(name="instruments", value_from=m.ValueFrom(path=f"{OUTPUTS_DIR}/{ITEMS_FILE}")),
        Parameter(name="fxcache-uris", value_from=m.ValueFrom(path=f"{OUTPUTS_DIR}/{FXCACHES_FILE}")),
    ]
    return step


def arguments_for(target: Container, pipeline: WorkflowTemplate, overrides: Mapping[str, str] = {}) -> list:
    """A task's arguments: each input of `target` from the workflow parameter of its name, or `overrides`.

    Both lookups go through Hera: an override that `target` does not take, or an input the pipeline
    does not declare, is a KeyError here.
    """
    for name in overrides:
        target.get_parameter(name)
    names = [p.name for p in target.inputs if isinstance(p, Parameter) and p.name]  # type: ignore[union-attr]
    return [
        Parameter(name=n, value=overrides[n]) if n in overrides else pipeline.get_parameter(n) for n in names
    ]


def _precompute_tasks(pipeline: WorkflowTemplate, plan: Container, precompute: Container) -> Task:
    """The plan of the instruments, then one precompute pod per instrument side by side (Argo's fan-out
    over the plan's items); returns the fan-out, which the training tasks wait for."""
    instruments = Task(name=INSTRUMENTS_STEP, template=plan, arguments=arguments_for(plan, pipeline))
    fan_out = Task(
        name=PRECOMPUTE_STEP,
        template_ref=m.TemplateRef(name=PRECOMPUTE_TEMPLATE, template=precompute.name),
        arguments=arguments_for(
            precompute, pipeline, {"bars-uri": "{{item.bars}}", "fxcache-uri": "{{item.fxcache}}"}
        ),
        with_param=INSTRUMENT_ITEMS,
    )
    instruments >> fan_out
    return fan_out


def pipeline_template(options: RenderOptions, precompute: Container, train: Container) -> WorkflowTemplate:
    """`train-pipeline`: the instruments' plan, one precompute pod per instrument, then train; with
    trials > 0, trial workers then train of the best."""
    declared = _declared([p.name for p in pipeline_parameters()], options, PIPELINE_TEMPLATE)
    worker = trial_worker_step(options)
    plan = instruments_step(options)
    with WorkflowTemplate(
        name=PIPELINE_TEMPLATE,
        entrypoint=PIPELINE_ENTRYPOINT,
        service_account_name=options.service_account,
        arguments=[_as_argument(p) for p in declared],
        labels={"app.kubernetes.io/name": "foxhunt"},
        annotations=_schema(declared),
    ) as wt:
        trials = wt.get_parameter("trials")
        # Each run writes under its own prefix, so reruns never overwrite an earlier run's reports.
        run_dir = f"{wt.get_parameter('output-uri')}/{{{{workflow.name}}}}"
        # A worker ends only when the study has all its trials, so each one's best_params.json is
        # the study's best; worker 0's is read.
        best_params = f"{run_dir}/trials/worker-0/best_params.json"
        with DAG(name=PIPELINE_ENTRYPOINT):
            first = _precompute_tasks(wt, plan, precompute)
            caches = {"fxcache-uri": FXCACHE_LIST}  # every training pod takes every instrument's cache
            single = Task(
                name=TRAIN_STEP,
                template_ref=m.TemplateRef(name=TRAIN_TEMPLATE, template=train.name),
                arguments=arguments_for(train, wt, {"output-uri": run_dir, **caches}),
                when=f"{trials} == 0",
            )
            # One pod per sequence item: trial-workers is the study's concurrency (a template's
            # `parallelism` is a fixed number, not a parameter).
            workers = Task(
                name="trials",
                template=worker,
                with_sequence=m.Sequence(count=m.IntOrString(str(wt.get_parameter("trial-workers")))),
                arguments=arguments_for(
                    worker,
                    wt,
                    {
                        **caches,
                        "output-uri": f"{run_dir}/trials/worker-{{{{item}}}}",
                        "worker": "{{item}}",
                        "study-name": "{{workflow.name}}",
                    },
                ),  # fmt: skip
                when=f"{trials} > 0",
            )
            best = Task(
                name="train-best",
                template_ref=m.TemplateRef(name=TRAIN_TEMPLATE, template=train.name),
                arguments=arguments_for(
                    train,
                    wt,
                    {"output-uri": run_dir, "trials": "0", "hyperopt-params-uri": best_params, **caches},
                ),
                when=f"{trials} > 0",
            )
            first >> single
            first >> workers >> best  # type: ignore[operator]
    return wt


def build_templates(options: RenderOptions | None = None) -> list[WorkflowTemplate]:
    """The three WorkflowTemplates, in dependency order (the pipeline last)."""
    options = options or RenderOptions()
    precompute, train = precompute_step(options), train_step(options)
    return [
        _step_template(PRECOMPUTE_TEMPLATE, precompute, options),
        _step_template(TRAIN_TEMPLATE, train, options),
        pipeline_template(options, precompute, train),
    ]


__all__ = ["RenderOptions", "build_templates", "pipeline_defaults"]
