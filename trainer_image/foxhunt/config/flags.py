"""Settings by name: every `foxhunt train` flag with the config field it sets, the fields at dotted paths,
their defaults as flag strings, and a RunConfig built from flag values.

The CLI builds its flags from this table and the workflow templates take their parameters' defaults and
choices from it. Light: imports nothing heavy (the workflows package reads it).
"""

from __future__ import annotations

from dataclasses import MISSING, Field, fields, replace
from typing import Any

from foxhunt.config import RunConfig
from foxhunt.config.setting import expectation
from foxhunt.errors import ConfigError

# Every `foxhunt train` flag that sets a RunConfig field: flag name → dotted field path. The CLI builds
# its flags from this table and the workflow templates take their parameters' defaults from it.
FLAGS: dict[str, str] = {
    "model": "model",
    "epochs": "epochs",
    "diagnostics-every": "diagnostics_every",
    "pictures": "pictures",
    "trials": "trials",
    "seed": "seed",
    "seeds": "seeds",
    "result": "result",
    "device": "device",
    "train-days": "folds.train_days",
    "val-days": "folds.val_days",
    "step-days": "folds.step_days",
    "window": "folds.mode",
    "purge-bars": "folds.purge_bars",
    "min-train-rows": "folds.min_train_rows",
    "min-val-rows": "folds.min_val_rows",
    "max-folds": "folds.max_folds",
    "holdout-days": "folds.holdout_days",
    "eval-cost": "eval.cost",
    "eval-spread": "eval.spread",
    "eval-spread-points": "eval.spread_points",
    "eval-first-close": "eval.first_close",
    "eval-session": "eval.session",
    "eval-session-zone": "eval.session_zone",
    "eval-off-session-factor": "eval.off_session_factor",
    "eval-slippage": "eval.slippage",
    "eval-fill": "eval.fill",
    "eval-financing": "eval.financing",
    "pushgateway": "pushgateway",
    "run-id": "run_id",
    "metrics-port": "metrics_port",
    "delete-metrics-group": "delete_metrics_group",
    "metrics-keep-seconds": "metrics_keep_seconds",
    "overwrite": "overwrite",
    "log-format": "log_format",
    "compile-cache": "compile_cache",
}
# The section of a dotted path → the label its errors carry.
SECTION_LABELS = {"": "run config", "folds": "fold config", "dqn": "dqn config", "eval": "eval config"}


def field_default(f: Field) -> Any:
    """A config field's default value (its factory's product for a nested config)."""
    if f.default is not MISSING:
        return f.default
    factory = f.default_factory
    assert callable(factory), f"{f.name}: a config field has a default"
    return factory()


def field_at(path: str, cls: type = RunConfig):
    """The dataclass Field at a dotted path like "folds.train_days"."""
    head, _, rest = path.partition(".")
    f = next(f for f in fields(cls) if f.name == head)
    return field_at(rest, field_default(f).__class__) if rest else f


def value_at(config, path: str):
    """The value at a dotted path of a config."""
    for part in path.split("."):
        config = getattr(config, part)
    return config


def flag_value(value) -> str:
    """A setting as a command-line or workflow-parameter string: 120.0 → "120", True → "true", None → ""."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def run_defaults(config: RunConfig | None = None) -> dict[str, str]:
    """{flag name: default as a string} for every flag in FLAGS: the one source of workflow defaults."""
    config = RunConfig() if config is None else config
    return {flag: flag_value(value_at(config, path)) for flag, path in FLAGS.items()}


ENUMS: dict[str, tuple[str, ...]] = {
    flag: field_at(path).metadata["choices"]
    for flag, path in FLAGS.items()
    if field_at(path).metadata["choices"]
}


def flag_of(error: ConfigError) -> str | None:
    """The flag that sets the field an error is about, if one does."""
    prefix = next((s for s, label in SECTION_LABELS.items() if label == error.section), None)
    if prefix is None:
        return None
    path = f"{prefix}.{error.path}" if prefix else error.path
    return next((flag for flag, p in FLAGS.items() if p == path), None)


def run_config_from_flags(values: dict[str, object], base: RunConfig | None = None, **sections) -> RunConfig:
    """A RunConfig from `base` with flag values (by flag name) applied; `sections` replace whole sections."""
    base = RunConfig() if base is None else base
    top: dict[str, object] = dict(sections)
    nested: dict[str, dict[str, object]] = {}
    for flag, value in values.items():
        head, _, rest = FLAGS[flag].partition(".")
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            top[head] = value
    for head, changes in nested.items():
        top[head] = replace(top.get(head, getattr(base, head)), **changes)  # type: ignore[type-var]
    return replace(base, **top)  # type: ignore[arg-type]  # the values were checked field by field


def field_facts(f: Field, value: Any = MISSING) -> tuple[str, str, str]:
    """A config field's doc, allowed values in words (with its unit) and a value as a flag string: the
    field's default unless `value` is given ("none" when unset; a nested config's class name)."""
    if value is MISSING:
        value = field_default(f)
        if f.default is MISSING:
            return f.metadata["doc"], expectation(f), type(value).__name__
    return f.metadata["doc"], expectation(f), flag_value(value) or "none"


def describe(cls: type) -> list[str]:
    """One line per field of a config class: name, doc, allowed values and default."""
    lines = []
    for f in fields(cls):
        doc, allowed, shown = field_facts(f)
        lines.append(f"{f.name}: {doc} Allowed: {allowed}. Default: {shown}.")
    return lines
