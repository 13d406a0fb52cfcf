"""The workflow parameters of the foxhunt templates, declared without Hera.

A parameter that is a `foxhunt train` setting takes its default, its description and its schema
(type, bounds, choices) from `foxhunt.config` (the one source, which imports nothing heavy); the
parameters that only a cluster has (data URIs, image, GPU pool, trials fan-out) are declared here,
with schemas in `foxhunt_workflows.schema`'s form. Data URIs have no default: every submission names
its data. Hera turns these into the templates' parameters; `foxhunt submit` checks against the
schema the rendered templates carry.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from foxhunt import __version__
from foxhunt.config import flags
from foxhunt.config.search import MAX_POPULATION
from foxhunt_workflows.instruments import MAX_INSTRUMENTS
from foxhunt_workflows.schema import (
    ALLOWED,
    ARGUMENT,
    described,
    dqn_params_schema,
    search_space_schema,
    setting_schema,
)

PIPELINE_TEMPLATE = "train-pipeline"
PRECOMPUTE_TEMPLATE = "precompute-features"
TRAIN_TEMPLATE = "train"
TEMPLATES = (PIPELINE_TEMPLATE, TRAIN_TEMPLATE, PRECOMPUTE_TEMPLATE)

# Where the pods find the settings files that Argo writes from JSON parameters (raw input artifacts).
INPUTS_DIR = "/tmp/inputs"
DQN_PARAMS_FILE = f"{INPUTS_DIR}/dqn-params.json"
SEARCH_SPACE_FILE = f"{INPUTS_DIR}/search-space.json"

# `foxhunt train` settings a cluster user sets per run, in the order of the train command's flags.
TRAINER_SETTINGS: tuple[str, ...] = (
    "model", "epochs", "trials", "seed", "seeds", "result", "train-days", "val-days", "step-days", "window", "purge-bars",
    "min-train-rows", "min-val-rows", "max-folds", "holdout-days", "eval-cost", "eval-spread", "log-format",
    "metrics-keep-seconds",
)  # fmt: skip
# The fold, seed, evaluation and log settings, passed to `foxhunt train` flag for flag.
RUN_SETTINGS: tuple[str, ...] = TRAINER_SETTINGS[3:]
PRECOMPUTE_INPUTS: tuple[str, ...] = ("bars-uri", "fxcache-uri", "image")
TRAIN_INPUTS: tuple[str, ...] = (
    "fxcache-uri", "output-uri", "model", "epochs", "trials", "dqn-params", "hyperopt-params-uri",
    *RUN_SETTINGS, "gpu-pool", "pushgateway", "image",
)  # fmt: skip
TRIAL_WORKER_INPUTS: tuple[str, ...] = (
    "fxcache-uri", "output-uri", "model", "epochs", "trials", "trial-population", "search-space",
    "study-storage-secret", "dqn-params", "hyperopt-params-uri", *RUN_SETTINGS, "gpu-pool", "pushgateway", "image",
)  # fmt: skip
# Where a pod's default differs from a local run's, on purpose: a pod's log is read by a collector.
# A pod deletes its run's Pushgateway group after a success (the templates pass --delete-metrics-group):
# 60 s outlasts the common scrape intervals (15 s to 1 min), so Prometheus holds the final values.
POD_DEFAULTS = {"log-format": "json", "metrics-keep-seconds": "60"}
# Parameters whose value becomes a word of a pod's `foxhunt` command line (a test keeps this equal to
# the rendered containers' args).
COMMAND_LINE_PARAMETERS = frozenset(
    {*TRAINER_SETTINGS, "bars-uri", "fxcache-uri", "output-uri", "hyperopt-params-uri", "trial-population"}
)

# Object storage is the pods' only storage: data and outputs are s3:// URIs.
_S3_OBJECT = r"^s3://[^/\s]+/.+$"
_S3_FOLDER = r"^s3://[^/\s]+(/.*)?$"
# Several instruments: a JSON list (`foxhunt_workflows.instruments` checks its entries).
_S3_OBJECT_OR_LIST = r"^(s3://[^/\s]+/.+|\s*\[[\s\S]*\]\s*)$"
# A Kubernetes label value (the GPU pool is a node label's value), not empty.
_LABEL_VALUE = r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
# A Secret's name (a DNS subdomain), or empty.
_SECRET_NAME = r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)?$"


def _text(pattern: str, words: str, *, min_length: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "pattern": pattern, ALLOWED: words}
    if min_length:
        schema["minLength"] = min_length
    return schema


@dataclass(frozen=True)
class WorkflowParameter:
    """One workflow parameter: its Argo name, default (None: required), description and value schema."""

    name: str
    default: str | None
    description: str
    schema: dict[str, Any] = field(default_factory=lambda: {"type": "string"})

    @property
    def enum(self) -> tuple[str, ...]:
        """The allowed values of an enumerated parameter (Argo's `enum`), else empty."""
        return tuple(str(v) for v in self.schema.get("enum", ()))

    @property
    def help(self) -> str:
        """The description with the allowed values (and "Required" without a default)."""
        return described(self.description, self.schema, self.default is None)


def _trainer_setting(flag: str) -> WorkflowParameter:
    field_ = flags.field_at(flags.FLAGS[flag])
    default = POD_DEFAULTS.get(flag, flags.run_defaults()[flag])
    return WorkflowParameter(flag, default, field_.metadata["doc"], setting_schema(flag))


def _default_search_space() -> str:
    from foxhunt.config.search import DEFAULT_SEARCH_SPACE

    return json.dumps({name: d.to_dict() for name, d in DEFAULT_SEARCH_SPACE.items()}, separators=(",", ":"))


# What a parameter means to one step (a single-step template, or that step's inputs inside the
# pipeline), where that differs from the pipeline's meaning: the pipeline appends the workflow name to
# output-uri, a step uses its output-uri as given; the train step reads the cache precompute builds.
STEP_OUTPUT_DESCRIPTION = (
    "Output folder of this run, used as given (nothing is appended): submitting again with the same URI "
    "resumes that run"
)
STEP_DESCRIPTIONS: dict[tuple[str, str], str] = {
    (TRAIN_TEMPLATE, "output-uri"): STEP_OUTPUT_DESCRIPTION,
    (TRAIN_TEMPLATE, "fxcache-uri"): "Feature cache to train on (precompute-features builds it from bars), "
    "or a JSON list of caches, one per instrument, trained on together",
    (PRECOMPUTE_TEMPLATE, "bars-uri"): "Raw OHLCV bars (CSV or Parquet) of one instrument",
}


# And where its values differ: the train step takes a list of caches, a precompute pod one instrument's bars.
STEP_SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    (TRAIN_TEMPLATE, "fxcache-uri"): _text(
        _S3_OBJECT_OR_LIST, "an s3://BUCKET/KEY URI, or a JSON list of them"
    ),
    (PRECOMPUTE_TEMPLATE, "bars-uri"): _text(_S3_OBJECT, "an s3://BUCKET/KEY URI"),
}


def _with_argument_flags(parameters: tuple[WorkflowParameter, ...]) -> tuple[WorkflowParameter, ...]:
    return tuple(
        WorkflowParameter(p.name, p.default, p.description, {**p.schema, ARGUMENT: True})
        if p.name in COMMAND_LINE_PARAMETERS
        else p
        for p in parameters
    )


@cache
def pipeline_parameters() -> tuple[WorkflowParameter, ...]:
    """Every `train-pipeline` parameter, in declaration order (the order the Argo UI shows)."""
    p = WorkflowParameter
    settings = {flag: _trainer_setting(flag) for flag in TRAINER_SETTINGS}
    hyperopt = _text(
        rf"^(s3://[^/\s]+/.+|{re.escape(DQN_PARAMS_FILE)})$",
        f"an s3:// URI of a JSON settings file, or {DQN_PARAMS_FILE} (made from dqn-params)",
    )
    return _with_argument_flags((
        *(settings[f] for f in ("model", "epochs", "trials")),
        p("trial-workers", "4", "GPU pods that work on one study when trials > 0",
          {"type": "integer", "minimum": 1}),
        p("trial-population", "1", "Trials each worker pod trains side by side as one batched model "
          "(--population)", {"type": "integer", "minimum": 1, "maximum": MAX_POPULATION}),
        p("study-storage-secret", "", "Secret (key `url`: the study's PostgreSQL URL, "
          "postgresql+psycopg://user:password@host:5432/db) holding the study; required when trials > 0",
          _text(_SECRET_NAME, "a Secret name (lower-case letters, digits, '-' and '.'), or empty")),
        p("search-space", _default_search_space(), "Search space when trials > 0", search_space_schema()),
        p("dqn-params", "{}", 'DQN settings as JSON, e.g. {"lr": 0.0003}', dqn_params_schema()),
        p("hyperopt-params-uri", DQN_PARAMS_FILE,
          "DQN settings file used instead of dqn-params; the default is the file made from dqn-params", hyperopt),
        *(settings[f] for f in TRAINER_SETTINGS[3:]),
        p("gpu-pool", "training-h100", "Node pool the GPU pods are pinned to (a node label's value)",
          _text(_LABEL_VALUE, "a node label value (letters, digits, '-', '_' and '.', at most 63)", min_length=1)),
        p("bars-uri", None, "Raw OHLCV bars (CSV or Parquet): one instrument's, or a JSON list of URIs, one "
          f"per instrument (at most {MAX_INSTRUMENTS}; each precomputed in its own pod, all trained by one)",
          _text(_S3_OBJECT_OR_LIST, "an s3://BUCKET/KEY URI, or a JSON list of them")),
        p("fxcache-uri", None, "Feature cache to build from the bars, or reuse when it matches them; with a "
          "list of bars, the folder of the caches (<fxcache-uri>/<name>.fxcache, the name being the bars "
          "file's up to its first dot)", _text(_S3_OBJECT, "an s3://BUCKET/KEY URI")),
        p("output-uri", None, "Runs write under OUTPUT-URI/<workflow name>, so no run overwrites another",
          _text(_S3_FOLDER, "an s3://BUCKET[/PREFIX] URI")),
        p("pushgateway", flags.run_defaults()["pushgateway"], "Prometheus Pushgateway URL; empty disables pushes",
          _text(r"^(https?://[^\s/]+(/\S*)?)?$", "an http:// or https:// URL, or empty")),
        p("image", f"ghcr.io/foxhunt/trainer:{__version__}", "Trainer image",
          _text(r"^[^\s-]\S*$", "an image reference (REPOSITORY:TAG or REPOSITORY@sha256:...)")),
    ))  # fmt: skip


def parameter(name: str, template: str = PIPELINE_TEMPLATE) -> WorkflowParameter:
    """The workflow parameter called `name` as `template` declares it; KeyError when there is none.

    A step template (`train`, `precompute-features`) may describe it differently (STEP_DESCRIPTIONS) and
    allow other values (STEP_SCHEMAS); its default is the pipeline's.
    """
    for candidate in pipeline_parameters():
        if candidate.name == name:
            description = STEP_DESCRIPTIONS.get((template, name), candidate.description)
            schema = STEP_SCHEMAS.get((template, name))
            schema = candidate.schema if schema is None else {**candidate.schema, **schema}
            return WorkflowParameter(name, candidate.default, description, schema)
    raise KeyError(f"no workflow parameter {name!r}")


def pipeline_parameter_names() -> tuple[str, ...]:
    """Names of every `train-pipeline` parameter, in declaration order."""
    return tuple(p.name for p in pipeline_parameters())


def pipeline_defaults() -> dict[str, str]:
    """Default value of every `train-pipeline` parameter that has one, by name."""
    return {p.name: p.default for p in pipeline_parameters() if p.default is not None}


def required_parameters() -> tuple[str, ...]:
    """The `train-pipeline` parameters without a default: every submission names them."""
    return tuple(p.name for p in pipeline_parameters() if p.default is None)


def template_parameter_names(template: str) -> tuple[str, ...]:
    """The workflow parameters `template` takes, in its declaration order (the single steps take their inputs)."""
    names = {PIPELINE_TEMPLATE: pipeline_parameter_names(), TRAIN_TEMPLATE: TRAIN_INPUTS}
    return {**names, PRECOMPUTE_TEMPLATE: PRECOMPUTE_INPUTS}[template]


# `submit --help` shows a long default (the search space) by its start.
_HELP_DEFAULT_CHARS = 60
HELP_ELLIPSIS = "..."


def shown_default(p: WorkflowParameter) -> str:
    """How `submit --help` shows a parameter's default: `NAME=VALUE`, or `NAME (required)`."""
    if p.default is None:
        return f"{p.name} (required)"
    value = p.default
    if len(value) > _HELP_DEFAULT_CHARS:
        value = value[: _HELP_DEFAULT_CHARS - len(HELP_ELLIPSIS)] + HELP_ELLIPSIS
    return f"{p.name}={value}"


def parameters_help(width: int = 100) -> str:
    """`submit --help`'s list of every template parameter: default, allowed values, description."""
    import textwrap

    lines = [f"parameters of {PIPELINE_TEMPLATE} (-p NAME=VALUE; shown with their defaults):"]
    for p in pipeline_parameters():
        lines.append(f"  {shown_default(p)}")
        lines += textwrap.wrap(
            p.help, width, initial_indent=" " * 6, subsequent_indent=" " * 6, break_on_hyphens=False
        )
    for template in (TRAIN_TEMPLATE, PRECOMPUTE_TEMPLATE):
        names = ", ".join(template_parameter_names(template))
        lines += textwrap.wrap(
            f"--from {template} takes: {names}.", width, subsequent_indent="  ", break_on_hyphens=False
        )
        for (step, name), description in STEP_DESCRIPTIONS.items():
            if step == template:
                lines += textwrap.wrap(
                    f"{name} there: {description}.", width, initial_indent="  ", subsequent_indent="  "
                )
    return "\n".join(lines)
