"""Search spaces: one distribution per DQN setting, from a YAML or JSON file, checked before any work.

A file maps DQN setting names to distributions, optionally under a top-level "dqn" key (the
shape of a `--hyperopt-params` file):

    lr:         {type: float, low: 1.0e-5, high: 1.0e-3, log: true}
    gamma:      {type: float, low: 0.8, high: 0.99}
    hidden:     {type: int, low: 64, high: 512, step: 64}
    batch_size: {type: categorical, choices: [4096, 8192]}

Only DQN training settings can be searched. Evaluation settings (the cost and spread that score
the validation record) are fixed for a run, so a search cannot tune the yardstick it is measured
with; the training reward's `cost` is a DQN setting and may be searched. This module imports no
Optuna: `suggest` only calls the trial's `suggest_*` methods.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import fields
from pathlib import PurePosixPath
from typing import Any, get_type_hints

import yaml

from foxhunt.config import DQNConfig, EvalConfig, config_keys, override
from foxhunt.config.search import Distribution
from foxhunt.config.setting import expectation
from foxhunt.errors import BadInput
from foxhunt.storage import read_bytes

DEFAULT_SOURCE = "default search space"
KINDS = ("float", "int", "categorical")
# Settings that change tensor shapes: each distinct value builds and captures its own step.
SHAPE_SETTINGS = frozenset({"batch_size", "hidden"})
# DQN fields that are machinery or guards, not hyperparameters: searching them tunes nothing.
NOT_HYPERPARAMETERS = {
    "compile": "a compiler switch, not a hyperparameter",
    "bf16": "a numeric-precision switch, not a hyperparameter",
    "steps_per_graph": "a CUDA-graph batching setting, not a hyperparameter",
    "paired_next_state": "a kernel-fusion switch, not a hyperparameter",
    "fused_activation": "a kernel-fusion switch, not a hyperparameter",
    "q_limit": "a divergence guard, not a hyperparameter",
}
# Settings of the evaluation (the yardstick), in the spellings a file might use: "spread",
# "eval_cost", "eval.cost", "eval-cost". A bare "cost" is the DQN training cost.
EVALUATION_SETTINGS = frozenset(
    name
    for f in fields(EvalConfig)
    for name in (f.name, f"eval_{f.name}", f"eval.{f.name}", f"eval-{f.name}")
    if name not in config_keys(DQNConfig)
)
_FIELDS_OF = {
    "float": {"low", "high", "log", "step"},
    "int": {"low", "high", "log", "step"},
    "categorical": {"choices"},
}


class SearchSpaceError(BadInput):
    """A search space that cannot be searched; the message names the file and the key."""


class _StrictLoader(yaml.SafeLoader):
    """YAML that reads `1e-5` as a number (YAML 1.2, like JSON) and refuses duplicate keys."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


# PyYAML follows YAML 1.1, where a float needs a dot; "1e-5" would be read as a string.
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$"), list("-+0123456789")
)


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    keys = [k for k, _ in pairs]
    duplicated = sorted({k for k in keys if keys.count(k) > 1})
    if duplicated:
        raise ValueError(f"duplicate key(s) {', '.join(map(repr, duplicated))}")
    return dict(pairs)


def load_search_space(uri: str) -> dict[str, Distribution]:
    """Read and check the search space at `uri` (local path or s3://; `.json`, `.yaml` or `.yml`)."""
    try:
        text = read_bytes(uri).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SearchSpaceError(f"{uri}: cannot read the search space: {exc}") from exc
    suffix = PurePosixPath(str(uri)).suffix.lower()
    try:
        if suffix == ".json":
            data = json.loads(text, object_pairs_hook=_reject_duplicates)
        elif suffix in (".yaml", ".yml"):
            data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader subclass)
        else:
            raise SearchSpaceError(
                f"{uri}: unknown search-space format {suffix!r}; expected .json, .yaml or .yml"
            )
    except (ValueError, yaml.YAMLError) as exc:
        if isinstance(exc, SearchSpaceError):
            raise
        raise SearchSpaceError(f"{uri}: not valid {suffix[1:].upper()}: {exc}") from exc
    return parse_search_space(data, source=str(uri))


def parse_search_space(data: Any, source: str) -> dict[str, Distribution]:
    """Check a search space given as a mapping; every problem is an error naming `source` and the key."""
    if isinstance(data, Mapping) and set(data) == {"dqn"}:
        data = data["dqn"]
    if not isinstance(data, Mapping) or not data:
        raise SearchSpaceError(
            f"{source}: expected a mapping of DQN settings to distributions, found {data!r}"
        )
    field_types = get_type_hints(DQNConfig)
    space = {}
    for key, spec in data.items():
        if key in EVALUATION_SETTINGS:
            raise SearchSpaceError(
                f"{source}: {key}: an evaluation setting, fixed for a run and never searchable"
            )
        if key not in field_types:
            raise SearchSpaceError(
                f"{source}: {key}: not a DQN setting; searchable: {', '.join(searchable_settings())}"
            )
        if key in NOT_HYPERPARAMETERS:
            raise SearchSpaceError(f"{source}: {key}: not searchable, {NOT_HYPERPARAMETERS[key]}")
        where = f"{source}: {key}"
        dist = _parse_distribution(spec, field_types[key], where)
        _check_allowed_by_config(key, dist, where)
        space[key] = dist
    return space


def searchable_settings() -> list[str]:
    """The DQN settings a search space may name."""
    return [k for k in config_keys(DQNConfig) if k not in NOT_HYPERPARAMETERS]


def _parse_distribution(spec: Any, field_type: type, where: str) -> Distribution:
    if not isinstance(spec, Mapping):
        raise SearchSpaceError(
            f"{where}: expected a distribution like {{type: float, low: ..., high: ...}}, found {spec!r}"
        )
    kind = spec.get("type")
    if kind not in KINDS:
        raise SearchSpaceError(f"{where}: type is {kind!r}; expected one of {', '.join(KINDS)}")
    unknown = sorted(set(spec) - _FIELDS_OF[kind] - {"type"})
    if unknown:
        raise SearchSpaceError(f"{where}: unknown field(s) {', '.join(unknown)} for a {kind} distribution")
    if kind == "categorical":
        return _parse_choices(spec.get("choices"), field_type, where)
    if field_type.__name__ != kind:
        raise SearchSpaceError(f"{where}: a {kind} distribution for a {field_type.__name__} setting")
    return _parse_range(spec, kind, where)


def _parse_choices(choices: Any, field_type: type, where: str) -> Distribution:
    if not isinstance(choices, list) or not choices:
        raise SearchSpaceError(f"{where}: choices must be a non-empty list, found {choices!r}")
    typed = []
    for choice in choices:
        # bool is an int in Python; a float setting takes an int choice as the same number.
        ok = isinstance(choice, field_type) and not (field_type is int and isinstance(choice, bool))
        ok = ok or (field_type is float and isinstance(choice, int) and not isinstance(choice, bool))
        if not ok:
            raise SearchSpaceError(f"{where}: choice {choice!r} is not a {field_type.__name__}")
        typed.append(field_type(choice))
    if len(set(typed)) != len(typed):
        raise SearchSpaceError(f"{where}: choices repeat a value: {choices!r}")
    return Distribution("categorical", choices=tuple(typed))


def _number(spec: Mapping, name: str, kind: str, where: str) -> float | int:
    value = spec.get(name)
    if kind == "int" and (not isinstance(value, int) or isinstance(value, bool)):
        raise SearchSpaceError(f"{where}: {name} must be an integer, found {value!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SearchSpaceError(f"{where}: {name} must be a finite number, found {value!r}")
    return value if kind == "int" else float(value)


def _parse_range(spec: Mapping, kind: str, where: str) -> Distribution:
    low, high = _number(spec, "low", kind, where), _number(spec, "high", kind, where)
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise SearchSpaceError(f"{where}: log must be true or false, found {log!r}")
    if low >= high:
        raise SearchSpaceError(f"{where}: low ({low}) must be below high ({high})")
    if log and low <= 0:
        raise SearchSpaceError(f"{where}: a log distribution needs low > 0, found {low}")
    step = None
    if "step" in spec:
        step = _number(spec, "step", kind, where)
        if log:
            raise SearchSpaceError(f"{where}: step and log cannot be combined")
        if step <= 0:
            raise SearchSpaceError(f"{where}: step must be positive, found {step}")
        spans = (high - low) / step
        if abs(spans - round(spans)) > 1e-9 * max(1.0, spans):
            raise SearchSpaceError(f"{where}: high - low ({high - low}) is not a multiple of step ({step})")
    return Distribution(kind, low, high, log=log, step=step)


def _check_allowed_by_config(key: str, dist: Distribution, where: str) -> None:
    # The config owns the allowed ranges; both ends of a range (or every choice) must build one.
    named = (
        [("choice", c) for c in dist.choices]
        if dist.kind == "categorical"
        else [("low", dist.low), ("high", dist.high)]
    )
    for name, value in named:
        try:
            override(DQNConfig(), {key: value}, what=where)
        except ValueError as exc:
            allowed = expectation(DQNConfig.__dataclass_fields__[key])
            raise SearchSpaceError(
                f"{where}: {name} {value!r} is outside what {key} allows: {allowed}"
            ) from exc
    # n_step 0 means "the run chooses" (choose_n_step, once, before the trials): no value a trial can hold.
    if key == "n_step" and (0 in dist.choices if dist.kind == "categorical" else dist.low == 0):
        raise SearchSpaceError(
            f"{where}: n_step 0 is the run's own choice, not a trial's value; search from 1"
        )


def suggest(trial: Any, space: Mapping[str, Distribution]) -> dict[str, Any]:
    """Sample one value per setting through the trial's `suggest_*` methods (an Optuna trial)."""
    params: dict[str, Any] = {}
    for key, d in space.items():
        if d.kind == "float":
            params[key] = trial.suggest_float(key, d.low, d.high, log=d.log, step=d.step)
        elif d.kind == "int":
            params[key] = trial.suggest_int(key, d.low, d.high, log=d.log, step=d.step or 1)
        else:
            params[key] = trial.suggest_categorical(key, list(d.choices))
    return params
