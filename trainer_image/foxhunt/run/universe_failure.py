"""A universe run that fails ends as an ordinary run does (`lifecycle.Run`): exit 1 with one line naming
the fold that failed, why, and where the outputs are; ``summary.json`` with status "failed", the error
and each instrument's folds completed so far (their files kept and recorded in ``manifest.json``). A
failed attempt's summary does not finish the run: the same command takes over the completed folds and
trains the rest (`universe_resume`), as an ordinary run resumes after a failure."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict

from foxhunt import out_names, storage, strict_json
from foxhunt.config import RunConfig
from foxhunt.errors import FoxhuntError, RunFailure
from foxhunt.run.universe_resume import UniverseLedger

FAILED = "failed"


def finished(summary_uri: str) -> bool:
    """Whether the summary at `summary_uri` (which exists) is a finished run's: any but a failed attempt's."""
    try:
        status = json.loads(storage.read_bytes(summary_uri)).get("status")
    except (ValueError, AttributeError):  # unreadable: refused as a finished run's, never overwritten
        return True
    return status != FAILED


def failed_summary(
    exc: Exception, ledger: UniverseLedger, uris: Sequence[str], rows: Sequence[int], run: dict, planned: int
) -> dict:
    """summary.json of a run that failed with `exc`: the error as an ordinary run writes it, each
    instrument's completed folds (the first seed's, from the manifest `ledger` keeps), `run`'s device,
    load seconds (None before the load ended) and the seconds since `run["started"]`."""
    settings: RunConfig = ledger.settings
    completed: dict[int, list[int]] = {i: [] for i in range(len(ledger.names))}
    for fold, record in sorted(ledger.folds.items()):
        for i in record["members"].get("0", {}).get("instruments", []):
            completed[i].append(fold)
    instruments = [
        {"name": name, "fxcache": uri, "rows": n, "folds": completed[i]}
        for i, (name, uri, n) in enumerate(zip(ledger.names, uris, rows, strict=True))
    ]
    return {
        "status": FAILED,
        "error": f"{type(exc).__name__}: {exc}",
        "device": run["device"],
        "data_load_seconds": run["data_load_seconds"],
        "folds": planned,
        "instruments": instruments,
        "run_config": json.loads(strict_json.json_bytes(asdict(settings))),
        "run_seconds": time.perf_counter() - run["started"],
    }


def fail_universe(
    exc: Exception, ledger: UniverseLedger, uris: Sequence[str], rows: Sequence[int], run: dict, planned: int
) -> RunFailure:
    """Write the failed run's summary.json (`failed_summary`); the failure to raise: one line naming the
    fold under way, what failed and where the completed folds are, as `lifecycle.Run` words it."""
    summary = failed_summary(exc, ledger, uris, rows, run, planned)
    storage.write_bytes(storage.join(ledger.out_uri, out_names.SUMMARY), strict_json.json_bytes(summary))
    what = str(exc) if isinstance(exc, FoxhuntError) else f"{type(exc).__name__}: {exc}"
    return RunFailure(
        f"{ledger.fold_name()} failed: {what}; {len(ledger.folds)} completed fold(s) and summary.json "
        f"are in {ledger.out_uri}"
    )
