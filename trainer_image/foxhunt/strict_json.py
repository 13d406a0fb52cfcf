"""JSON as strict parsers read it: every file foxhunt writes for people and programs to read.

Python's json writes NaN and Infinity as bare `NaN`/`Infinity`, which are no JSON: a strict parser
(jq, a browser, Go's encoding/json) refuses the whole file. A figure that is not finite (a Sharpe of
a flat record, an interval without the bootstrap, a tail never scored) is written as null, which says
"undefined", and `allow_nan=False` makes any value that slips past that an error at the write, never a
broken file. The readers (`foxhunt.evaluate.reports`) read such a null back as NaN.
"""

from __future__ import annotations

import json
import math
import numbers
from typing import Any


def finite(value: Any) -> Any:
    """`value` (dicts, lists, tuples, scalars) with every float that is not finite replaced by None.

    numpy's integers and floats become Python's, which json does not take otherwise."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(inner) for key, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(inner) for inner in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """`json.dumps` of `finite(value)`, refusing any non-finite float left (`allow_nan=False`)."""
    return json.dumps(finite(value), allow_nan=False, **options)


def json_bytes(value: Any, indent: int | None = 2) -> bytes:
    """`value` as strict JSON text (`dumps`), indented, with a final newline: how every file is written."""
    return (dumps(value, indent=indent) + "\n").encode()
