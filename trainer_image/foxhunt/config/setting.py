"""Config fields that explain and check themselves: a one-line doc, a unit, a range or choices.

`setting(default, doc, ...)` declares a field; `check_fields(config, label)` (called from each
config's `__post_init__`) rejects a value of the wrong type (never coerces: bool is not an int, an
int is a fine float) or out of range, naming the field and what it accepts. Imports nothing heavy.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, fields

from foxhunt.errors import ConfigError


@dataclass(frozen=True)
class Bounds:
    """The allowed values of a number: `low` and `high` (None: unbounded), each inclusive unless open."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def contains(self, value: float) -> bool:
        """True when `value` lies inside (NaN never does)."""
        if self.low is not None and not (value > self.low if self.low_open else value >= self.low):
            return False
        if self.high is not None and not (value < self.high if self.high_open else value <= self.high):
            return False
        return value == value  # noqa: PLR0124 - False only for NaN

    def describe(self) -> str:
        """The range as text: ">= 1", "> 0", "in [0, 1)"."""
        low, high = _number(self.low), _number(self.high)
        if self.low is not None and self.high is not None:
            return f"in {'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {low}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {high}"
        return ""


def _number(value: float | None) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}" if value is not None else ""


def setting(default, doc: str, *, low=None, high=None, low_open=False, high_open=False, choices=(), unit=""):
    """A config field: its default, a one-line doc, its unit and allowed range or choices."""
    bounds = Bounds(low, high, low_open, high_open)
    metadata = {"doc": doc, "bounds": bounds, "choices": tuple(choices), "unit": unit}
    return field(default=default, metadata=metadata)


def section(factory, doc: str):
    """A nested config field (folds, dqn, eval)."""
    return field(
        default_factory=factory, metadata={"doc": doc, "bounds": Bounds(), "choices": (), "unit": ""}
    )


_KINDS = {"int": "an integer", "float": "a finite number", "bool": "true or false", "str": "a string"}


def _base_type(f) -> tuple[str, bool]:
    """The field's declared type name and whether None is allowed (annotations are strings here)."""
    declared = str(f.type)
    optional = declared.endswith(" | None")
    return declared.removesuffix(" | None"), optional


def _has_type(value, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    return type(value).__name__ == kind  # a nested config


def expectation(f) -> str:
    """What a field accepts, in words: "an integer >= 1", "a positive finite number (days)"."""
    kind, _ = _base_type(f)
    md = f.metadata
    if md["choices"]:
        return "one of " + ", ".join(md["choices"])
    bounds: Bounds = md["bounds"]
    if kind == "float" and bounds.low == 0 and bounds.low_open and bounds.high is None:
        text = "a positive finite number"
    else:
        text = f"{_KINDS.get(kind, kind)} {bounds.describe()}".rstrip()
    return text + (f" ({md['unit']})" if md["unit"] else "")


def check_fields(config, label: str) -> None:
    """Raise ConfigError for the first field of `config` of the wrong type or out of range.

    An int given for a float field is stored as a float, so the config's JSON is the same either way.
    """
    for f in fields(config):
        value = getattr(config, f.name)
        kind, optional = _base_type(f)
        if value is None and optional:
            continue
        if not _has_type(value, kind):
            got = f"{type(value).__name__} {value!r}"
            raise ConfigError(label, f.name, f"must be {expectation(f)}, got {got}")
        if kind == "float":
            value = float(value)
            object.__setattr__(config, f.name, value)
        elif kind == "int":
            value = int(value)
            object.__setattr__(config, f.name, value)
        choices = f.metadata["choices"]
        if choices and value not in choices:
            raise ConfigError(label, f.name, f"must be {expectation(f)}, got {value!r}")
        in_range = f.metadata["bounds"].contains(value) if kind in ("int", "float") else True
        if not in_range or (kind == "float" and not math.isfinite(value)):
            raise ConfigError(label, f.name, f"must be {expectation(f)}, got {value!r}")
