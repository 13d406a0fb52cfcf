"""The train step's results for Argo: files in `$FOXHUNT_OUTPUTS_DIR` that the workflow template reads.

The `train` template (foxhunt_workflows) sets FOXHUNT_OUTPUTS_DIR=/tmp/outputs and declares, from
that folder, the output parameters `summary-uri` (file `summary_uri`) and `stitched-sharpe` (file
`stitched_sharpe`) and the artifacts `summary.json` and `run.png`. A run writes them on every way
out (succeeded, failed, interrupted) with what exists by then: a run that stopped before its
stitched record has no `stitched_sharpe`, and the template's default (empty) stands in.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from foxhunt import out_names, storage, strict_json
from foxhunt.evaluate.evaluation import MODEL
from foxhunt.evaluate.reports import RunSummary

OUTPUTS_ENV = "FOXHUNT_OUTPUTS_DIR"
SUMMARY_URI_FILE = "summary_uri"
STITCHED_SHARPE_FILE = "stitched_sharpe"
HOLDOUT_SHARPE_FILE = "holdout_sharpe"  # the headline's net Sharpe on the held-out final period
PICTURE_FILE = out_names.RUN_PICTURE
SUMMARY_FILE = out_names.SUMMARY


def summary_uri(out_uri: str) -> str:
    """Where the run's `summary.json` is: an object-store URI, or an absolute local path."""
    uri = storage.join(out_uri, SUMMARY_FILE)
    return uri if "://" in uri else os.path.abspath(uri)


def write_argo_outputs(summary: RunSummary, out_uri: str, progress: Callable[[str], None]) -> list[str]:
    """Write the step's output files when $FOXHUNT_OUTPUTS_DIR is set; returns the names written.

    Never raises for a file it cannot write (the run's own outcome and exit code stand); the
    problem is said on the console.
    """
    folder = os.environ.get(OUTPUTS_ENV)
    if not folder:
        return []
    files: dict[str, bytes] = {
        SUMMARY_FILE: strict_json.json_bytes(summary.to_dict()),
        SUMMARY_URI_FILE: summary_uri(out_uri).encode(),
    }
    if summary.stitched is not None:
        files[STITCHED_SHARPE_FILE] = repr(summary.stitched.policies[MODEL].net.sharpe).encode()
    if summary.holdout is not None:
        files[HOLDOUT_SHARPE_FILE] = repr(summary.holdout["net_sharpe"]).encode()
    try:
        files[PICTURE_FILE] = storage.read_bytes(storage.join(out_uri, PICTURE_FILE))
    except FileNotFoundError:
        pass  # a run that stopped before its picture
    except OSError as exc:
        progress(f"{OUTPUTS_ENV}: run.png not copied: {exc}")
    written = []
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (Path(folder) / name).write_bytes(data)
            written.append(name)
    except OSError as exc:
        progress(f"{OUTPUTS_ENV}: cannot write the step's outputs to {folder}: {exc}")
    return written
