"""One schema of the workflow parameters, generated from `foxhunt.config`, and the checks that read it.

Argo passes every parameter as a string; each parameter's value is described here by a small JSON
Schema: its type, the bounds or choices of the config field it sets (so `epochs=0` is refused with
the trainer's own rule), the DQN keys and ranges of `dqn-params`, a pattern where the value is a
URI or a Kubernetes name. The same schema writes the Argo parameter descriptions, the `submit`
command's help and its checks, and the comments on the chart's parameter values. It travels with
each rendered WorkflowTemplate in an annotation, so `foxhunt submit` checks against the template
it submits to. Standard library and `foxhunt.config` only: the light client imports this.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from foxhunt import config
from foxhunt.config import flags
from foxhunt.config.setting import expectation

SCHEMA_ANNOTATION = "foxhunt.io/parameter-schema"
# The value becomes a word of the pod's `foxhunt` command line: one that starts with "-" would be
# read as a flag (`hyperopt-params-uri=--overwrite`).
ARGUMENT = "x-foxhunt-argument"
# The allowed values in words, where a pattern states them.
ALLOWED = "x-allowed"
# The unit of a number, from the config field.
UNIT = "x-unit"
# An object that may also come wrapped under this one key (a search space as {"dqn": {...}}, the
# shape of a --hyperopt-params file, which the trainer reads too).
WRAPPER = "x-wrapper"

_JSON_TYPES = {"int": "integer", "float": "number", "bool": "boolean", "str": "string"}
_INTEGER = re.compile(r"[+-]?[0-9]+")


def field_schema(f) -> dict[str, Any]:
    """The schema of one config field's value: type, bounds (open or closed) or choices, unit, and the
    config's own words for them (`expectation`, what its errors and `foxhunt train --help` say)."""
    kind = str(f.type).removesuffix(" | None")
    metadata = f.metadata
    if metadata["choices"]:
        return {"enum": list(metadata["choices"]), ALLOWED: expectation(f)}
    schema: dict[str, Any] = {"type": _JSON_TYPES[kind], ALLOWED: expectation(f)}
    bounds = metadata["bounds"]
    if kind in ("int", "float"):
        if bounds.low is not None:
            schema["exclusiveMinimum" if bounds.low_open else "minimum"] = bounds.low
        if bounds.high is not None:
            schema["exclusiveMaximum" if bounds.high_open else "maximum"] = bounds.high
    if metadata["unit"]:
        schema[UNIT] = metadata["unit"]
    return schema


def setting_schema(flag: str) -> dict[str, Any]:
    """The schema of the `foxhunt train` setting `flag` (a name of `flags.FLAGS`)."""
    return field_schema(flags.field_at(flags.FLAGS[flag]))


def dqn_params_schema() -> dict[str, Any]:
    """`dqn-params`: a JSON object of DQN settings, each within its field's range; no other key."""
    return {
        "type": "object",
        "properties": {f.name: field_schema(f) for f in fields(config.DQNConfig)},
        "additionalProperties": False,
        ALLOWED: "a JSON object of DQN settings (foxhunt.config.DQNConfig)",
    }


def search_space_schema() -> dict[str, Any]:
    """`search-space`: a JSON object mapping DQN settings to distributions (checked fully by the trainer)."""
    return {
        "type": "object",
        "minProperties": 1,
        "propertyNames": {"enum": config.config_keys(config.DQNConfig)},
        "additionalProperties": {
            "type": "object",
            "required": ["type"],
            "properties": {"type": {"enum": ["float", "int", "categorical"]}},
            ALLOWED: "a distribution like {type: float, low: ..., high: ...}",
        },
        WRAPPER: "dqn",
        ALLOWED: "a JSON object {DQN setting: distribution}",
    }


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _range(schema: Mapping[str, Any]) -> str:
    low_key = "exclusiveMinimum" if "exclusiveMinimum" in schema else "minimum"
    high_key = "exclusiveMaximum" if "exclusiveMaximum" in schema else "maximum"
    low, high = schema.get(low_key), schema.get(high_key)
    if low is not None and high is not None:
        left = "(" if low_key == "exclusiveMinimum" else "["
        right = ")" if high_key == "exclusiveMaximum" else "]"
        return f" in {left}{_number(low)}, {_number(high)}{right}"
    if low is not None:
        return f" {'>' if low_key == 'exclusiveMinimum' else '>='} {_number(low)}"
    if high is not None:
        return f" {'<' if high_key == 'exclusiveMaximum' else '<='} {_number(high)}"
    return ""


def allowed(schema: Mapping[str, Any]) -> str:
    """What a schema accepts, in words: "an integer >= 1", "one of rolling, expanding".

    A config field's schema carries the config's words; other schemas are put in words here.
    """
    if ALLOWED in schema:
        return schema[ALLOWED]
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    kind = schema.get("type")
    if kind == "integer":
        text = "an integer" + _range(schema)
    elif kind == "number":
        text = "a number" + _range(schema)
    elif kind == "boolean":
        text = "true or false"
    else:
        text = "a JSON object" if kind == "object" else "text"
    return text + (f" ({schema[UNIT]})" if UNIT in schema else "")


def _within(value: float, schema: Mapping[str, Any]) -> bool:
    if "minimum" in schema and not value >= schema["minimum"]:
        return False
    if "exclusiveMinimum" in schema and not value > schema["exclusiveMinimum"]:
        return False
    if "maximum" in schema and not value <= schema["maximum"]:
        return False
    if "exclusiveMaximum" in schema and not value < schema["exclusiveMaximum"]:
        return False
    return True


def _finite(value: float) -> bool:
    """True for a number that is finite as a float too (an int past 1e308 is not: the trainer's floats)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _json_value_problem(value: Any, schema: Mapping[str, Any]) -> str | None:
    """Why a JSON value (inside an object parameter) does not fit `schema`, or None."""
    if "enum" in schema:
        return None if value in schema["enum"] else f"must be {allowed(schema)}"
    kind = schema.get("type")
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "integer" and not (isinstance(value, int) and not isinstance(value, bool)):
        return f"must be {allowed(schema)}"
    if kind == "number" and not (is_number and _finite(value)):
        return f"must be {allowed(schema)}"
    if kind in ("integer", "number") and not _within(value, schema):
        return f"must be {allowed(schema)}"
    if kind == "boolean" and not isinstance(value, bool):
        return "must be true or false"
    if kind == "string" and not isinstance(value, str):
        return "must be text"
    if kind == "object":
        return _object_problem(value, schema)
    return None


def _object_problem(value: Any, schema: Mapping[str, Any]) -> str | None:
    if not isinstance(value, dict):
        return f"must be {allowed(schema)}"
    if WRAPPER in schema and list(value) == [schema[WRAPPER]]:
        value = value[schema[WRAPPER]]
        if not isinstance(value, dict):
            return f"{schema[WRAPPER]}: must be {allowed(schema)}"
    if len(value) < schema.get("minProperties", 0):
        return f"must be {allowed(schema)} with at least {schema['minProperties']} key"
    properties = schema.get("properties", {})
    known = schema.get("propertyNames", {}).get("enum")
    if known is None and schema.get("additionalProperties") is False:
        known = list(properties)
    if known is not None:
        unknown = [k for k in value if k not in known]
        if unknown:
            return f"unknown key(s) {', '.join(map(repr, unknown))}; valid keys: {', '.join(known)}"
    for key in schema.get("required", ()):
        if key not in value:
            return f"needs the key {key!r}"
    for key, item in value.items():
        item_schema = properties.get(key, schema.get("additionalProperties"))
        if not isinstance(item_schema, Mapping):
            continue
        problem = _json_value_problem(item, item_schema)
        if problem:
            return f"{key}: {problem}" if isinstance(item, dict) else f"{key}={json.dumps(item)} {problem}"
    return None


def value_problem(value: str, schema: Mapping[str, Any]) -> str | None:
    """Why a parameter value (the string Argo passes) does not fit `schema`, or None when it does."""
    kind = schema.get("type")
    if schema.get(ARGUMENT) and kind == "string" and value.startswith("-"):
        return "starts with '-', so the pod's foxhunt command would read it as a flag"
    if "enum" in schema:
        return None if value in schema["enum"] else f"must be {allowed(schema)}"
    if kind == "integer":
        # A 64-bit setting has at most 19 digits; a longer one is refused before int() reads it.
        if len(value) > 40 or not _INTEGER.fullmatch(value) or not _within(int(value), schema):
            return f"must be {allowed(schema)}"
    elif kind == "number":
        try:
            number = float(value)
        except ValueError:
            return f"must be {allowed(schema)}"
        if value != value.strip() or not math.isfinite(number) or not _within(number, schema):
            return f"must be {allowed(schema)}"
    elif kind == "object":
        try:
            data = json.loads(value)
        except ValueError:
            return "is not valid JSON"
        return _object_problem(data, schema)
    elif kind == "string":
        too_short = len(value) < schema.get("minLength", 0)
        if too_short or ("pattern" in schema and not re.search(schema["pattern"], value)):
            return "must not be empty" if not value else f"must be {allowed(schema)}"
    return None


def template_schema(parameters) -> dict[str, Any]:
    """The schema of a whole submission to a template with these WorkflowParameters (name → schema)."""
    return {
        "type": "object",
        "properties": {p.name: p.schema for p in parameters},
        "required": [p.name for p in parameters if p.default is None],
        "additionalProperties": False,
    }


def described(description: str, schema: Mapping[str, Any], required: bool) -> str:
    """A parameter's description with its allowed values: what Argo's UI and `--help` show."""
    text = f"{description.rstrip('.')}. Allowed: {allowed(schema)}."
    return f"{text} Required: no default." if required else text
