"""JSON read as a strict parser reads it: a bare NaN, Infinity or -Infinity is an error, not a float.

Python's json.loads accepts them; jq, browsers and Go do not. Tests that read what foxhunt writes
(`summary.json`, `study.json`, every report) read it through here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class NotStrictJSON(ValueError):
    """The text holds a constant strict JSON has not."""


def _refuse(constant: str) -> Any:
    raise NotStrictJSON(f"{constant} is not JSON")


def loads(text: str | bytes) -> Any:
    """`json.loads`, refusing NaN, Infinity and -Infinity."""
    return json.loads(text, parse_constant=_refuse)


def read(path: Path) -> Any:
    """The file at `path` parsed strictly."""
    return loads(Path(path).read_text())
