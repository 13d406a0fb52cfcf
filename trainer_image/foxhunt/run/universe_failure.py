"""A universe run that fails or is stopped ends as an ordinary run does (`lifecycle.Run`), through
`universe_ending`, which holds the run from its load to its end.

A failure: exit 1 with one line naming the fold that failed, why, and where the outputs are;
``summary.json`` with status "failed", the error and each instrument's folds completed so far (their files
kept and recorded in ``manifest.json``). A stop signal (SIGTERM, a pod's preemption; SIGINT, Ctrl-C) only
sets a flag (`lifecycle.StopSignals`, installed for the run's life and restored after); the run stops at
its next boundary, where an ordinary run's walk checks (`stop_check`: each fold's start, each epoch's and
the end of a fold's epochs), and ends with exit 128 + the signal, the ordinary run's line (where it
stopped, what it kept, that the same command resumes) and ``summary.json`` with status "interrupted"; a
second Ctrl-C ends it at once, alike. The same boundaries fail the run once its `--out` lock's heartbeat
(`lifecycle.holding_out`'s) found the lock taken over by another run while this one stalled, with the
ordinary run's line naming the lock. Neither summary finishes the run: the same command takes over the
completed folds and trains the rest (`universe_resume`), as an ordinary run resumes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict

from foxhunt import out_names, storage, strict_json
from foxhunt.config import RunConfig
from foxhunt.errors import FoxhuntError, RunFailure, RunInterrupted
from foxhunt.run.lifecycle import (
    Heartbeat,
    StopSignals,
    boundary_check,
    outputs_kept,
    resumes,
    stop_where,
    stops_caught,
)
from foxhunt.run.sinks.telemetry import RunMetrics
from foxhunt.run.universe_resume import UniverseLedger

FAILED = "failed"
INTERRUPTED = "interrupted"


def finished(summary_uri: str) -> bool:
    """Whether the summary at `summary_uri` (which exists) is a finished run's: any but a failed or
    interrupted attempt's."""
    try:
        status = json.loads(storage.read_bytes(summary_uri)).get("status")
    except (ValueError, AttributeError):  # unreadable: refused as a finished run's, never overwritten
        return True
    return status not in (FAILED, INTERRUPTED)


def attempt_summary(
    status: str,
    error: str,
    ledger: UniverseLedger,
    uris: Sequence[str],
    rows: Sequence[int],
    run: dict,
    planned: int,
) -> dict:
    """summary.json of an attempt that ended early with `status` and `error`: each instrument's completed
    folds (the first seed's, from the manifest `ledger` keeps), `run`'s device, load seconds (None before
    the load ended) and the seconds since `run["started"]`."""
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
        "status": status,
        "error": error,
        "device": run["device"],
        "data_load_seconds": run["data_load_seconds"],
        "folds": planned,
        "instruments": instruments,
        "run_config": json.loads(strict_json.json_bytes(asdict(settings))),
        "run_seconds": time.perf_counter() - run["started"],
    }


def _write(summary: dict, ledger: UniverseLedger) -> None:
    storage.write_bytes(storage.join(ledger.out_uri, out_names.SUMMARY), strict_json.json_bytes(summary))


def fail_universe(
    exc: Exception, ledger: UniverseLedger, uris: Sequence[str], rows: Sequence[int], run: dict, planned: int
) -> RunFailure:
    """Write the failed run's summary.json (`attempt_summary`, the error as an ordinary run writes it); the
    failure to raise: one line naming the fold under way, what failed and where the completed folds are,
    as `lifecycle.Run` words it."""
    _write(attempt_summary(FAILED, f"{type(exc).__name__}: {exc}", ledger, uris, rows, run, planned), ledger)
    what = str(exc) if isinstance(exc, FoxhuntError) else f"{type(exc).__name__}: {exc}"
    kept = outputs_kept(len(ledger.folds), ledger.out_uri)
    return RunFailure(f"{ledger.fold_name()} failed: {what}; {kept}")


def interrupt_universe(
    stopped: RunInterrupted,
    ledger: UniverseLedger,
    uris: Sequence[str],
    rows: Sequence[int],
    run: dict,
    planned: int,
) -> RunInterrupted:
    """Write the stopped run's summary.json (`attempt_summary`, the error what stopped it, as an ordinary
    run writes it); the interruption to raise, worded as `lifecycle.Run` words it."""
    _write(attempt_summary(INTERRUPTED, str(stopped), ledger, uris, rows, run, planned), ledger)
    return resumes(stopped, outputs_kept(len(ledger.folds), ledger.out_uri))


def stop_check(signals: StopSignals, ledger: UniverseLedger, heartbeat: Heartbeat) -> Callable[[], None]:
    """The walk's boundary check (`WalkHooks.check`, the fold's epochs'), as `lifecycle.Run.check`:
    RunInterrupted once a stop signal came, naming where (the fold under way, else the last completed
    one); RunFailure once the `--out` lock's `heartbeat` found it taken over by another run."""

    def where() -> str:
        fold = None if ledger.current_fold is None else ledger.fold_name()
        return stop_where(fold, max(ledger.folds, default=None))

    def check() -> None:
        boundary_check(signals, heartbeat, where)

    return check


@contextmanager
def universe_ending(
    ledger: UniverseLedger,
    uris: Sequence[str],
    rows: Sequence[int],
    run: dict,
    planned: int,
    metrics: RunMetrics,
    heartbeat: Heartbeat,
) -> Iterator[Callable[[], None]]:
    """The run's life once it has started (`lifecycle.stops_caught`): the body's boundary check handed out
    (it also fails the run once `heartbeat` lost the `--out` lock), every way out told to `metrics`; a stop
    ends as `interrupt_universe`, a failure (an exception, a divergence of the first seed, a lost lock
    included) as `fail_universe`."""

    def ending(status: str, why: BaseException | None) -> BaseException | None:
        metrics.run_finished(status)
        if isinstance(why, RunInterrupted):
            return interrupt_universe(why, ledger, uris, rows, run, planned)
        if isinstance(why, Exception):
            return fail_universe(why, ledger, uris, rows, run, planned)
        return None

    with stops_caught(ending) as signals:
        yield stop_check(signals, ledger, heartbeat)
