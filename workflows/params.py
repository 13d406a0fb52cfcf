"""The parameters of `train-pipeline`, declared without Hera so the CLI can check them cheaply."""

from __future__ import annotations

from dataclasses import dataclass

PIPELINE_TEMPLATE = "train-pipeline"
PRECOMPUTE_TEMPLATE = "precompute-features"
TRAIN_TEMPLATE = "train"


@dataclass(frozen=True)
class PipelineParameter:
    """One workflow parameter of `train-pipeline`: its Argo name, default and allowed values."""

    name: str
    default: str
    description: str
    enum: tuple[str, ...] = ()


# Argo parameter values are strings; defaults mirror foxhunt.config so an unparameterised run
# behaves like `foxhunt train` with no flags.
PIPELINE_PARAMETERS: tuple[PipelineParameter, ...] = (
    PipelineParameter("model", "dqn", "Trainer model", enum=("dqn",)),
    PipelineParameter("epochs", "50", "Epochs per fold"),
    PipelineParameter("trials", "0", "Hyperparameter trials; 0 trains once"),
    PipelineParameter("gpu-pool", "training-h100", "Node pool the training pod is pinned to"),
    PipelineParameter("bars-uri", "s3://foxhunt-data/bars/EURUSD_M1.parquet", "Raw OHLCV bars"),
    PipelineParameter("fxcache-uri", "s3://foxhunt-data/fxcache/EURUSD_M1.arrow", "Feature cache to build or reuse"),
    PipelineParameter("output-uri", "s3://foxhunt-runs", "Run outputs go under OUTPUT-URI/<workflow name>"),
    PipelineParameter("pushgateway", "", "Prometheus Pushgateway URL; empty disables pushes"),
    PipelineParameter("image", "ghcr.io/foxhunt/trainer:0.1.0", "Trainer image"),
    PipelineParameter("train-days", "120", "Walk-forward training window, days"),
    PipelineParameter("val-days", "30", "Validation window, days"),
    PipelineParameter("step-days", "30", "Step between folds, days"),
    PipelineParameter("window", "rolling", "Training window mode", enum=("rolling", "expanding")),
    PipelineParameter("max-folds", "0", "Most folds to run; 0 runs all that fit"),
)


def pipeline_parameter_names() -> tuple[str, ...]:
    """Names of every `train-pipeline` parameter, in declaration order."""
    return tuple(p.name for p in PIPELINE_PARAMETERS)


def pipeline_defaults() -> dict[str, str]:
    """Default value of every `train-pipeline` parameter, by name."""
    return {p.name: p.default for p in PIPELINE_PARAMETERS}
