"""JSON as strict parsers read it: every file foxhunt writes for people and programs to read.

Python's json writes NaN and Infinity as bare `NaN`/`Infinity`, which are no JSON: a strict parser
(jq, a browser, Go's encoding/json) refuses the whole file. A figure that is not finite (a Sharpe of
a flat record, an interval without the bootstrap) is written as null instead, and `allow_nan=False`
makes any value that slips past that an error at the write, never a broken file.
"""

from __future__ import annotations

import math
from typing import Any


def finite(value: Any) -> Any:
    """`value` (dicts, lists, scalars) with every float that is not finite replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(inner) for key, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(inner) for inner in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """`json.dumps` of `finite(value)`, refusing any non-finite float left (`allow_nan=False`)."""
    import json

    return json.dumps(finite(value), allow_nan=False, **options)
