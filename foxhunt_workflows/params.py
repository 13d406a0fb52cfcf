"""The workflow parameters of the foxhunt templates, declared without Hera.

A parameter that is a `foxhunt train` setting takes its default, its description and its allowed
values from `foxhunt.config` (the one source of defaults, which imports nothing heavy); the
parameters that only a cluster has (data URIs, image, GPU pool, trials fan-out) are declared here.
Hera turns these into the templates' parameters; `foxhunt submit` checks against the rendered
templates, not against this table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from foxhunt import __version__, config

PIPELINE_TEMPLATE = "train-pipeline"
PRECOMPUTE_TEMPLATE = "precompute-features"
TRAIN_TEMPLATE = "train"

# What `foxhunt submit` checks a value against; declared on each WorkflowTemplate in this annotation
# (Argo parameters are untyped strings).
KINDS = ("str", "int", "float", "json")
KINDS_ANNOTATION = "foxhunt.io/parameter-kinds"

# Where the pods find the settings files that Argo writes from JSON parameters (raw input artifacts).
INPUTS_DIR = "/tmp/inputs"
DQN_PARAMS_FILE = f"{INPUTS_DIR}/dqn-params.json"
SEARCH_SPACE_FILE = f"{INPUTS_DIR}/search-space.json"

# `foxhunt train` settings a cluster user sets per run, in the order of the train command's flags.
TRAINER_SETTINGS: tuple[str, ...] = (
    "model", "epochs", "trials", "seed", "train-days", "val-days", "step-days", "window", "purge-bars",
    "min-train-rows", "min-val-rows", "max-folds", "holdout-days", "eval-cost", "eval-spread", "log-format",
)  # fmt: skip
# Where a pod's default differs from a local run's, on purpose: a pod's log is read by a collector.
POD_DEFAULTS = {"log-format": "json"}


@dataclass(frozen=True)
class WorkflowParameter:
    """One workflow parameter: its Argo name, default, description, kind and allowed values."""

    name: str
    default: str
    description: str
    kind: str = "str"
    enum: tuple[str, ...] = ()


def _trainer_setting(flag: str) -> WorkflowParameter:
    field = config.field_at(config.FLAGS[flag])
    kind = str(field.type).removesuffix(" | None")
    default = POD_DEFAULTS.get(flag, config.run_defaults()[flag])
    return WorkflowParameter(
        flag,
        default,
        field.metadata["doc"],
        kind if kind in KINDS else "str",
        tuple(config.ENUMS.get(flag, ())),
    )


def _default_search_space() -> str:
    from foxhunt.trials.space import DEFAULT_SEARCH_SPACE

    return json.dumps({name: d.to_dict() for name, d in DEFAULT_SEARCH_SPACE.items()}, separators=(",", ":"))


@cache
def pipeline_parameters() -> tuple[WorkflowParameter, ...]:
    """Every `train-pipeline` parameter, in declaration order (the order the Argo UI shows)."""
    p = WorkflowParameter
    settings = {flag: _trainer_setting(flag) for flag in TRAINER_SETTINGS}
    return (
        *(settings[f] for f in ("model", "epochs", "trials")),
        p("trial-workers", "4", "GPU pods that work on one study when trials > 0", "int"),
        p("trial-population", "1", "Trials each worker pod trains side by side as one batched model "
          "(--population, 1 to 16)", "int"),
        p("study-storage-secret", "", "Secret (key `url`: a PostgreSQL SQLAlchemy URL) holding the study; "
          "required when trials > 0"),
        p("search-space", _default_search_space(), "Search space when trials > 0: JSON {setting: distribution}",
          "json"),
        p("dqn-params", "{}", 'DQN settings as JSON, e.g. {"lr": 0.0003}; see foxhunt.config.DQNConfig', "json"),
        p("hyperopt-params-uri", DQN_PARAMS_FILE,
          "DQN settings file (s3:// URI) used instead of dqn-params; the default is the file made from dqn-params"),
        *(settings[f] for f in TRAINER_SETTINGS[3:]),
        p("gpu-pool", "training-h100", "Node pool the GPU pods are pinned to"),
        p("bars-uri", "s3://foxhunt-data/bars/EURUSD_M1.parquet", "Raw OHLCV bars"),
        p("fxcache-uri", "s3://foxhunt-data/fxcache/EURUSD_M1.arrow", "Feature cache to build or reuse"),
        p("output-uri", "s3://foxhunt-runs", "Run outputs go under OUTPUT-URI/<workflow name>"),
        p("pushgateway", config.run_defaults()["pushgateway"], "Prometheus Pushgateway URL; empty disables pushes"),
        p("image", f"ghcr.io/foxhunt/trainer:{__version__}", "Trainer image"),
    )  # fmt: skip


def parameter(name: str) -> WorkflowParameter:
    """The `train-pipeline` parameter called `name`; KeyError when there is none."""
    for candidate in pipeline_parameters():
        if candidate.name == name:
            return candidate
    raise KeyError(f"no workflow parameter {name!r}")


def pipeline_parameter_names() -> tuple[str, ...]:
    """Names of every `train-pipeline` parameter, in declaration order."""
    return tuple(p.name for p in pipeline_parameters())


def pipeline_defaults() -> dict[str, str]:
    """Default value of every `train-pipeline` parameter, by name."""
    return {p.name: p.default for p in pipeline_parameters()}
