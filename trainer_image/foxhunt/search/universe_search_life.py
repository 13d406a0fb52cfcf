"""A universe search's life in its `--out` (`universe_search.search_universe`): its stop, its end and its
resume, as the single-instrument search's (`lifecycle.Run` around `driver.run_search`).

A stop signal (SIGTERM, a pod's preemption; SIGINT, Ctrl-C) only sets a flag (`lifecycle.StopSignals`,
installed while the trials run and restored after); the trial under way stops at its next boundary
(`SearchStop.check`, where a universe run checks: each fold's start, each epoch's end), is queued for a
retry with its settings (`trial_loop.end_interrupted`), the study's files are written, and the search ends
with exit 128 + the signal and one line: where it stopped, what it kept, that the same command resumes. A
second Ctrl-C ends it at once, alike. The same check fails the search (exit 1) once the `--out` lock was
taken over by another run while this one stalled (`lifecycle.Heartbeat.check`).

``manifest.json`` (kind "universe_search", written as the trials begin) holds what identifies the search:
the universe's identity (`universe_resume.universe_identity`: the instruments and their fxcaches'
checksums, the result settings, the code version, the device) and the search's (`SearchPlan.identity`:
objective, study name, space). Every end writes ``summary.json``: status "succeeded", "interrupted" or
"failed", the error, the study's finished and planned trials. The same command on an `--out` holding that
manifest and no finished summary (an interrupted or failed attempt's, or none: a search killed outright)
continues the study (`resumable`); other inputs or settings are refused in one line naming what differs
(`SearchLedger.admit`), and `--overwrite` starts over.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from foxhunt import out_names, storage, strict_json
from foxhunt.errors import RunInterrupted, UsageError
from foxhunt.run.lifecycle import Heartbeat, StopSignals, boundary_check, resumes, stops_caught
from foxhunt.run.sinks.telemetry import RunMetrics
from foxhunt.run.universe_failure import INTERRUPTED, finished
from foxhunt.run.universe_resume import identity_differences

KIND = "universe_search"  # what tells a universe search's manifest from a universe run's


def resumable(out_uri: str, overwrite: bool) -> dict | None:
    """The manifest of the unfinished universe search in `out_uri`, which the same command resumes; None
    when there is none (or with `--overwrite`, which starts over)."""
    uri = storage.join(out_uri, out_names.MANIFEST)
    if overwrite or not storage.exists(uri):
        return None
    try:
        recorded = json.loads(storage.read_bytes(uri))
    except ValueError:  # not a manifest this search wrote: the caller refuses the --out as holding a run
        return None
    if not isinstance(recorded, dict) or recorded.get("kind") != KIND:
        return None
    summary = storage.join(out_uri, out_names.SUMMARY)
    return None if storage.exists(summary) and finished(summary) else recorded


@dataclass
class SearchLedger:
    """A universe search's records in `--out`: its identity (``manifest.json``) and its end
    (``summary.json``); `recorded`: the manifest of the attempt it resumes, None for a new search."""

    out_uri: str
    search: dict  # the plan's identity (`SearchPlan.identity`)
    recorded: dict | None
    planned: int
    finished: int = 0  # the study's finished trials as of its last save (`outputs.StudySummary`)
    identity: dict = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    def admit(self, universe: dict) -> None:
        """The search's identity, its universe's `universe` (read, not yet loaded) with the plan's;
        UsageError (exit 2) naming what differs from the attempt resumed."""
        identity = json.loads(strict_json.json_bytes({**universe, "search": self.search}))
        if self.recorded is not None:
            old = self.recorded.get("search") or {}
            changed = identity_differences(self.recorded, identity) + [
                f"{key}: {old.get(key)!r} → {value!r}"
                for key, value in identity["search"].items()
                if old.get(key) != value
            ]
            if changed:
                raise UsageError(
                    f"{self.out_uri} holds an unfinished universe search with other inputs or settings "
                    f"({'; '.join(changed)}); give the same ones to resume it, another --out, or --overwrite "
                    "to start over"
                )
        self.identity = identity

    def start(self) -> None:
        """As the trials begin: the earlier attempt's summary removed, the manifest written."""
        storage.delete(storage.join(self.out_uri, out_names.SUMMARY))
        manifest = strict_json.json_bytes({"kind": KIND, **self.identity})
        storage.write_bytes(storage.join(self.out_uri, out_names.MANIFEST), manifest)

    def end(self, status: str, error: str | None = None) -> None:
        """``summary.json`` of the search's end: its status and error, the study's trials, its seconds."""
        summary = {
            "status": status,
            "error": error,
            "study_name": self.search["study_name"],
            "finished_trials": self.finished,
            "planned_trials": self.planned,
            "run_seconds": time.perf_counter() - self.started,
        }
        storage.write_bytes(storage.join(self.out_uri, out_names.SUMMARY), strict_json.json_bytes(summary))

    def kept(self) -> str:
        """What a search that ended early kept, as its last line says."""
        return (
            f"the study's files ({self.finished} of {self.planned} trials finished) and summary.json are "
            f"in {self.out_uri}"
        )


@dataclass
class SearchStop:
    """The boundary check of the trials' walks (`WalkHooks.check`, the folds' epochs') and where they are."""

    signals: StopSignals
    heartbeat: Heartbeat
    trial: int | None = None
    fold: int | None = None  # the fold under way; None between a trial's folds

    def at(self, trial: int, fold: int | None) -> None:
        """Trial `trial` began fold `fold` (None: it is between folds)."""
        self.trial, self.fold = trial, fold

    def check(self) -> None:
        """RunInterrupted once a stop signal came, naming the trial and fold under way; RunFailure once the
        `--out` lock was taken over (as `lifecycle.Run.check`)."""
        boundary_check(self.signals, self.heartbeat, self.where)

    def where(self) -> str:
        """The trial and fold under way, as the stopped search's line names them."""
        fold = "" if self.fold is None else f" fold {self.fold}"
        return f"during trial {self.trial}{fold}"


@contextmanager
def search_ending(ledger: SearchLedger, heartbeat: Heartbeat, metrics: RunMetrics) -> Iterator[SearchStop]:
    """The trials' life (`lifecycle.stops_caught`): the trials' boundary check handed out, every way out told
    to `metrics` and written to ``summary.json`` (`SearchLedger.end`); a stop raised again as the line that
    says the same command resumes."""

    def ending(status: str, why: BaseException | None) -> BaseException | None:
        metrics.run_finished(status)
        if isinstance(why, RunInterrupted):
            ledger.end(INTERRUPTED, str(why))
            return resumes(why, ledger.kept())
        ledger.end(status, None if why is None else f"{type(why).__name__}: {why}")
        return None

    with stops_caught(ending) as signals:
        yield SearchStop(signals, heartbeat)
