"""`summary.json`'s text, cheap enough to write after every fold.

The summary grows with the run (every fold's epoch lists and evaluations: about 1 MB at 21 folds of 50
epochs), and Python's json module uses its C encoder only without `indent`: an indented dump of the whole
summary after every fold cost more than the fold's training on a GPU. So the text is indented only where a
person reads it (the top level, each fold's keys, one epoch per line) and every deeper value is written by
the C encoder; a finished fold's text is kept and reused by the next write, so a write encodes only the new
fold and the run's top-level fields. The file parses to exactly `RunSummary.to_dict()`.
"""

from __future__ import annotations

import json
from dataclasses import replace

from foxhunt import strict_json
from foxhunt.evaluate.reports import FoldReport, RunSummary, flat_run_reading
from foxhunt.redaction import scrub_record

INDENT = "  "
SPREAD_DICTS = 3  # dicts this shallow (the summary, the stitched record, a fold) get one key per line
SPREAD_LISTS = 4  # lists of containers this shallow (the folds, a fold's epochs) get one item per line


def readable_json(value, depth: int = 0) -> str:
    """`value` as JSON: shallow dicts and lists of containers one item per line, the rest compact.

    Parses back to `value` with non-finite floats as null (the encoder is strict_json.dumps for every
    leaf: no bare NaN in the file); `depth` is where `value` sits."""
    pad, inner = INDENT * depth, INDENT * (depth + 1)
    if isinstance(value, dict) and value and depth < SPREAD_DICTS:
        items = (f"{inner}{json.dumps(str(k))}: {readable_json(v, depth + 1)}" for k, v in value.items())
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if (
        isinstance(value, (list, tuple))
        and depth < SPREAD_LISTS
        and any(isinstance(v, (dict, list, tuple)) for v in value)
    ):
        return "[\n" + ",\n".join(f"{inner}{readable_json(v, depth + 1)}" for v in value) + f"\n{pad}]"
    return strict_json.dumps(value)  # strict JSON: an undefined figure is null


class SummaryText:
    """Renders a run's `summary.json`, keeping each finished fold's text for the next render.

    A fold's report does not change once the run has recorded it; `render(fresh=True)` (the run's last
    write) encodes every fold again all the same."""

    FOLD_DEPTH = 2  # a fold sits in the summary's `folds` list

    def __init__(self) -> None:
        self._folds: list[tuple[FoldReport, str]] = []

    def fold_text(self, report: FoldReport, index: int) -> str:
        """The fold's JSON at its place in the summary (scrubbed like `RunSummary.to_dict`), cached."""
        if index < len(self._folds) and self._folds[index][0] is report:
            return self._folds[index][1]
        text = readable_json(scrub_record(report.to_dict()), self.FOLD_DEPTH)
        del self._folds[index:]
        self._folds.append((report, text))
        return text

    def render(self, summary: RunSummary, *, fresh: bool = False) -> str:
        """The whole file's text (with its final newline)."""
        if fresh:
            self._folds.clear()
        head = replace(summary, folds=[]).to_dict()  # every field but the folds, in to_dict's order
        head["warnings"] = scrub_record(summary.warnings)
        reading = flat_run_reading(
            summary.folds, summary.stitched
        )  # derived from the folds, as `to_dict` derives it
        if reading is not None:
            head["flat_reading"] = reading
        folds = [self.fold_text(report, i) for i, report in enumerate(summary.folds)]
        inner = INDENT * self.FOLD_DEPTH
        listed = "[\n" + ",\n".join(inner + text for text in folds) + f"\n{INDENT}]" if folds else "[]"
        items = (
            f"{INDENT}{json.dumps(key)}: {listed if key == 'folds' else readable_json(value, 1)}"
            for key, value in head.items()
        )
        return "{\n" + ",\n".join(items) + "\n}\n"
