"""A run's life in its `--out`: signals, heartbeat, manifest and summary, and the one way out.

Every exit of a run, whether it succeeded, failed (an exception anywhere in it, a fold included),
or was interrupted by SIGINT/SIGTERM, goes through `Run.finish`: it writes the manifest and
`summary.json` with the status, makes the final metrics push, deletes the metrics group when asked,
and releases the `--out` lock. SIGINT and SIGTERM only set a flag; the run stops at the next epoch
boundary (an epoch is a fraction of a second on a GPU at the default shapes), so files and the
device are never left half-written.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Literal, Protocol

from foxhunt import out_names, storage
from foxhunt.config import RunConfig
from foxhunt.errors import FoxhuntError, RunFailure, RunInterrupted
from foxhunt.evaluate.reports import FoldReport, RunSummary
from foxhunt.redaction import scrub_text
from foxhunt.run.lock import HEARTBEAT_SECONDS, STALE_SECONDS, OutLock
from foxhunt.run.manifest import FoldRecord, Manifest, write_manifest
from foxhunt.run.out_folder import local_folder_exists, remove_empty_folder
from foxhunt.run.sinks.telemetry import RunMetrics
from foxhunt.run.sinks.telemetry_reads import fold_figures
from foxhunt.run.summary_file import SummaryText
from foxhunt.train.epoch_figures import EpochFigures

log = logging.getLogger(__name__)
Progress = Callable[[str], None]
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def now_iso() -> str:
    """The current time, ISO-8601 UTC to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def console(log_format: str, run_id: str) -> Progress:
    """Progress lines on stdout: plain text, or one JSON object per line with time and run id."""
    if log_format == "json":

        def emit(message: str) -> None:
            print(
                json.dumps({"time": now_iso(), "run_id": run_id, "message": scrub_text(message)}), flush=True
            )
    else:

        def emit(message: str) -> None:
            print(scrub_text(message), flush=True)

    return emit


class RunSink(Protocol):
    """Where a run's progress goes as it happens (the MLflow live record: `run/sinks/mlflow_live.py`). Called on
    the training thread: an implementation returns at once and never raises, so it cannot stop a run."""

    def run_started(self, out_uri: str, summary: RunSummary, manifest: Manifest) -> None: ...

    def epoch_finished(self, fold: int, epoch: int, epochs: int, figures: EpochFigures) -> None: ...

    def fold_finished(self, report: FoldReport, out_uri: str) -> None: ...

    def run_finished(self, status: str) -> None: ...


def stop_where(fold: str | None, last_done: int | None) -> str:
    """Where a stop signal found a run, as its line says: during `fold` (the one under way, named), after
    the last completed fold `last_done`, or before the folds."""
    if fold:
        return f"during {fold}"
    return f"after fold {last_done}" if last_done is not None else "before the folds"


def interruption(exc: BaseException) -> RunInterrupted | None:
    """`exc` as a run's interruption: a stop signal's, or a second Ctrl-C's (KeyboardInterrupt, raised at
    once); None for anything else."""
    if isinstance(exc, KeyboardInterrupt):
        return RunInterrupted(signal.SIGINT, "at once (second signal)")
    return exc if isinstance(exc, RunInterrupted) else None


def outputs_kept(folds: int, out_uri: str) -> str:
    """What a run that ended early kept, as its last line says."""
    return f"{folds} completed fold(s) and summary.json are in {out_uri}"


def resumes(stopped: RunInterrupted, kept: str) -> RunInterrupted:
    """The interruption a run raises once it has ended: where it stopped, what it `kept`, and that the same
    command resumes (the CLI's line; exit 128 + the signal)."""
    return RunInterrupted(stopped.signum, f"{stopped.where}; {kept}; the same command resumes")


class StopSignals:
    """SIGINT and SIGTERM ask the run to stop at its next boundary; a second signal acts at once."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        # Handlers can only be set from the main thread; a run started elsewhere keeps the defaults.
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in STOP_SIGNALS}

    def _handle(self, signum: int, frame) -> None:
        self.received = signum
        # The second Ctrl-C raises KeyboardInterrupt, the second SIGTERM terminates: never ignored.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]  # what signal.getsignal returned
        self._previous = {}


class Heartbeat:
    """A daemon thread that renews the `--out` lock and re-pushes the metrics (the run's liveness)."""

    def __init__(self, lock: OutLock, metrics: RunMetrics, interval: float = HEARTBEAT_SECONDS) -> None:
        self.lock, self.metrics, self.interval = lock, metrics, interval
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="foxhunt-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                if not self.lock.refresh():
                    self.lost = True
                    return
            except OSError as exc:  # storage hiccup: the next beat tries again
                log.warning("lock heartbeat failed (%s); retrying in %gs", exc, self.interval)
            self.metrics.push()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def check(self) -> None:
        """RunFailure once a beat found the lock taken over by another run: a run's boundary check."""
        if self.lost:
            raise RunFailure(
                f"{self.lock.uri}: the lock was taken over by another run while this one stalled"
            )


def boundary_check(signals: StopSignals, heartbeat: Heartbeat, where: Callable[[], str]) -> None:
    """A run's boundary check: RunInterrupted naming `where()` once a stop signal came; RunFailure once the
    `--out` lock was taken over by another run (`Heartbeat.check`)."""
    if signals.received is not None:
        raise RunInterrupted(signals.received, where())
    heartbeat.check()


# How the body of `stops_caught` ended, and what it raises instead (None: the exception itself).
Ending = Callable[[str, BaseException | None], BaseException | None]


@contextmanager
def stops_caught(ending: Ending) -> Iterator[StopSignals]:
    """SIGINT and SIGTERM caught while the body runs (its boundary checks read the signals handed out), and
    every way out told to `ending(status, why)` once: "succeeded" (why None), "interrupted" (a stop: the
    RunInterrupted), "failed" (any other exception); on a stop or a failure the body raises what `ending`
    returns. The handlers are restored before `ending` is told."""
    signals = StopSignals()
    signals.install()
    try:
        yield signals
    except BaseException as exc:
        signals.restore()
        stopped = interruption(exc)
        raised = ending("failed" if stopped is None else "interrupted", exc if stopped is None else stopped)
        if raised is None:
            raise
        raise raised from (None if stopped is not None else exc)
    signals.restore()
    ending("succeeded", None)


@contextmanager
def holding_out(out_uri: str, run_id: str, metrics: RunMetrics) -> Iterator[Heartbeat]:
    """The `--out` locked for one run (a retried pod of the same run id waits out its predecessor's lock),
    renewed by a `Heartbeat` while the body runs, released after; a new `--out` the body left empty (a
    refusal before work) is removed. The body gets the heartbeat, whose `check` its boundaries call (a
    lock taken over fails the run, as `Run.check` does). OutLocked (exit 2) when another live run holds it."""
    new_out = not local_folder_exists(out_uri)
    lock = OutLock(out_uri, run_id)
    lock.acquire(wait_seconds=STALE_SECONDS + HEARTBEAT_SECONDS)
    heartbeat = Heartbeat(lock, metrics)
    heartbeat.start()
    try:
        yield heartbeat
    finally:
        heartbeat.stop()
        lock.release()
        if new_out:
            remove_empty_folder(out_uri)


class Run:
    """One run in its `--out`, from its first push to `finish`; used as a context manager."""

    def __init__(
        self,
        out_uri: str,
        config: RunConfig,
        summary: RunSummary,
        manifest: Manifest,
        lock: OutLock,
        metrics: RunMetrics,
        progress: Progress,
        sink: RunSink | None = None,
    ) -> None:
        self.out_uri, self.config, self.summary, self.manifest = out_uri, config, summary, manifest
        self.summary_text = SummaryText()  # each finished fold's text, kept for the next write
        self.lock, self.metrics, self.progress = lock, metrics, progress
        self.signals = StopSignals()
        self.heartbeat = Heartbeat(lock, metrics)
        self.sink = sink
        self.current_fold: int | None = None
        self.holdout_fold: int | None = None  # the held-out fold's number, once `run_holdout` walks it
        self._started = time.perf_counter()

    def __enter__(self) -> Run:
        self.signals.install()
        try:
            write_manifest(self.out_uri, self.manifest)
            self._write_summary()
            self.metrics.run_started()
            self.metrics.folds_planned(self.summary.folds_planned)
            self.heartbeat.start()
            if self.sink is not None:
                self.sink.run_started(self.out_uri, self.summary, self.manifest)
        except BaseException as exc:
            self.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    def check(self) -> None:
        """The boundary check: raise RunInterrupted after a stop signal, RunFailure if the lock was lost."""
        boundary_check(self.signals, self.heartbeat, self._stop_where)

    def _stop_where(self) -> str:
        done = self.summary.folds
        return stop_where(self._fold_name(), done[-1].fold if done else None)

    def epoch_finished(self, fold: int, epoch: int, epochs: int, figures: list[EpochFigures | None]) -> None:
        """Hand the run's own member's figures of a finished epoch to the sink (member 0; others are seeds)."""
        if self.sink is not None and figures and figures[0] is not None:
            self.sink.epoch_finished(fold, epoch, epochs, figures[0])

    def fold_finished(self, report: FoldReport, outputs: dict[str, str] | None) -> None:
        """Record a fold: trained here (`outputs`: name → sha256, kept in the manifest) or resumed (None)."""
        if outputs is None:
            self.summary.resumed_folds.append(report.fold)
        else:
            self.manifest.run.folds[report.fold] = FoldRecord(outputs, now_iso())
            write_manifest(self.out_uri, self.manifest)
        self.summary.folds.append(report)
        self.current_fold = None
        self.metrics.fold_finished(fold_figures(report))
        self._write_summary()
        if self.sink is not None:
            self.sink.fold_finished(report, self.out_uri)

    def _write_summary(self, *, fresh: bool = False) -> None:
        # Written after every fold: the finished folds' text is reused (summary_file.py says why).
        data = self.summary_text.render(self.summary, fresh=fresh)
        storage.write_bytes(storage.join(self.out_uri, out_names.SUMMARY), data.encode())

    def finish(self, status: str, error: str | None = None) -> None:
        """The one way out: manifest, final push, `summary.json` with the status, group deletion, unlock."""
        self.heartbeat.stop()
        self.signals.restore()
        summary = self.summary
        summary.status, summary.error = status, error
        summary.finished_at = now_iso()
        summary.run_seconds = time.perf_counter() - self._started
        try:
            write_manifest(self.out_uri, self.manifest)
            self.metrics.run_finished(status)
            summary.push_failures = self.metrics.push_failures
            self._write_summary(fresh=True)
            # Only a succeeded run's group goes: a failed one is what FoxhuntRunFailed reads (its
            # runbook deletes it once handled), and an interrupted one's retry (same run id) takes it over.
            if self.config.delete_metrics_group and self.metrics.pushgateway and status == "succeeded":
                # Prometheus keeps only what it scraped: give it a scrape of the final values first.
                self.progress(
                    f"deleting metrics group run_id={summary.run_id} in "
                    f"{self.config.metrics_keep_seconds:g}s (after Prometheus has scraped it)"
                )
                time.sleep(self.config.metrics_keep_seconds)
                if not self.metrics.delete_group():  # warned; the summary counts it with the pushes
                    summary.push_failures = self.metrics.push_failures
                    self._write_summary(fresh=True)
        finally:
            if self.sink is not None:  # what it still holds reaches the store (for a bounded time)
                self.sink.run_finished(status)
            self.metrics.close()
            self.lock.release()

    def __exit__(self, exc_type, exc, tb) -> Literal[False]:
        if exc is None:
            self._finish_or_fail("succeeded")
            return False
        stopped = interruption(exc)
        if stopped is not None:
            self._finish_or_fail("interrupted", str(stopped))
            raise resumes(stopped, self._where_outputs()) from None
        if not isinstance(exc, Exception):  # SystemExit and the like: record, then let it through
            self._finish_or_fail("failed", f"{type(exc).__name__}: {exc}")
            return False
        where = self._fold_name() or "the run"
        self._finish_or_fail("failed", f"{type(exc).__name__}: {exc}")
        # An unexpected exception is a run failure too (exit 1), never mistaken for bad usage.
        what = str(exc) if isinstance(exc, FoxhuntError) else f"{type(exc).__name__}: {exc}"
        raise RunFailure(f"{where} failed: {what}; {self._where_outputs()}") from exc

    def _finish_or_fail(self, status: str, error: str | None = None) -> None:
        try:
            self.finish(status, error)
        except Exception as exc:
            raise RunFailure(
                f"the run ended {status} but its outputs could not be written to {self.out_uri}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def _fold_name(self) -> str | None:
        """The fold under way as a stop or failure names it (the held-out fold by that name); None if none."""
        if self.current_fold is None:
            return None
        return "the held-out fold" if self.current_fold == self.holdout_fold else f"fold {self.current_fold}"

    def _where_outputs(self) -> str:
        return outputs_kept(len(self.summary.folds), self.out_uri)
