"""Run and per-fold metrics, pushed to a Prometheus Pushgateway under the grouping key {job, run_id}.

The run tells them plain figures (`run/sinks/telemetry_figures.py`), never its reports. A push that fails is logged and counted; training never waits on, or stops for, the metrics path.
Which Pushgateway and run id, and whether a run id is live there, is `pushgateway`'s.
"""

from __future__ import annotations

import http.client
import logging
import threading
import time

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    delete_from_gateway,
    push_to_gateway,
    start_http_server,
)
from prometheus_client.exposition import basic_auth_handler, default_handler

from foxhunt import __version__
from foxhunt.config import PHASES, RUN_ENDINGS
from foxhunt.config.urls import pushgateway_credentials
from foxhunt.errors import ConfigError
from foxhunt.redaction import redact_url, scrub_text
from foxhunt.run.sinks.pushgateway import DEFAULT_JOB, has_host
from foxhunt.run.sinks.telemetry_figures import FoldFigures, HoldoutFigures, StitchedFigures
from foxhunt.run.sinks.telemetry_gauges import (
    BOOK,
    FOLD_GAUGES,
    HOLDOUT_GAUGES,
    INSTRUMENT,
    STITCHED_GAUGES,
    TRIAL,
)

log = logging.getLogger(__name__)


def _basic_auth(user: str, password: str):
    """A prometheus_client push handler that sends `user` and `password` as HTTP basic auth."""

    def handler(url, method, timeout, headers, data):
        return basic_auth_handler(url, method, timeout, headers, data, user, password)

    return handler


class RunMetrics:
    """The metrics of one run: its own registry (so runs in one process never mix) and push bookkeeping."""

    def __init__(
        self,
        run_id: str,
        *,
        pushgateway: str | None,
        model: str,
        device: str,
        job: str = DEFAULT_JOB,
        timeout: float = 2.0,
        metrics_port: int | None = None,
        metrics_addr: str = "0.0.0.0",
        instrument: str = "",
    ) -> None:
        if pushgateway and not has_host(pushgateway):
            raise ConfigError(
                "run config",
                "pushgateway",
                f"expected a URL like http://host:9091, got {redact_url(pushgateway)}",
            )
        self.run_id = run_id
        # The `instrument` label of the fold, stitched and held-out gauges, unless a call names another.
        self.instrument = instrument
        self.pushgateway = pushgateway
        self.shown = redact_url(pushgateway)  # what lines and errors name: no password
        self.job = job
        self.timeout = timeout
        self.push_failures = 0
        self._push_lock = threading.Lock()  # the heartbeat thread pushes too
        self.registry = CollectorRegistry()
        self._run_gauges(self.registry, model, device)
        self._fold_gauges(self.registry)
        self._evaluation_gauges(self.registry)
        self._progress_gauges(self.registry)
        self._server = None
        if metrics_port is not None:
            self._server = _serve(self.registry, metrics_port, metrics_addr)

    def _run_gauges(self, r: CollectorRegistry, model: str, device: str) -> None:
        """The run's own gauges and counters: what it is, when it started and ended, its data and pushes."""
        self._info = Gauge(
            "foxhunt_run_info",
            "Always 1; labels describe the run.",
            ["model", "device", "version"],
            registry=r,
        )
        self._info.labels(model=model, device=device, version=__version__).set(1)
        self._start_ts = Gauge(
            "foxhunt_run_start_timestamp_seconds", "Unix time the run started.", registry=r
        )
        self._end_ts = Gauge("foxhunt_run_end_timestamp_seconds", "Unix time the run finished.", registry=r)
        self._finished = Gauge(
            "foxhunt_run_finished",
            "1 once the run has finished, labelled by its status.",
            ["status"],
            registry=r,
        )
        self._load_seconds = Gauge(
            "foxhunt_data_load_seconds", "Seconds to load the fxcache onto the device.", registry=r
        )
        self._rows = Gauge("foxhunt_data_rows", "Rows loaded from the fxcache.", registry=r)

    def _fold_gauges(self, r: CollectorRegistry) -> None:
        """Each fold's phases and figures."""
        self._phase = Gauge(
            "foxhunt_fold_phase_seconds",
            "Seconds spent in each phase of a fold.",
            ["fold", "phase", INSTRUMENT, TRIAL],
            registry=r,
        )
        self._fold_figures = [
            (Gauge(name, help_text, ["fold", INSTRUMENT, TRIAL], registry=r), read)
            for name, help_text, read in FOLD_GAUGES
        ]

    def _progress_gauges(self, r: CollectorRegistry) -> None:
        """The run's progress through its folds, and its failed pushes."""
        self._last_fold_ts = Gauge(
            "foxhunt_last_fold_completed_timestamp_seconds",
            "Unix time the latest fold completed.",
            registry=r,
        )
        self._folds_done = Counter("foxhunt_folds_completed", "Folds completed in this run.", registry=r)
        self._folds_planned = Gauge("foxhunt_folds_planned", "Folds this run will train in all.", registry=r)
        self._push_failed = Counter(
            "foxhunt_push_failures", "Pushes to the Pushgateway that failed.", registry=r
        )

    def _evaluation_gauges(self, r: CollectorRegistry) -> None:
        """The evaluation's gauges: each fold's dates, SE and best baseline; the stitched record."""
        self._fold_info = Gauge(
            "foxhunt_fold_info",
            "Always 1; labels give a fold's validation dates (first and last bar, ISO-8601 UTC).",
            ["fold", "val_start", "val_end", INSTRUMENT, TRIAL],
            registry=r,
        )
        self._fold_sharpe_se = Gauge(
            "foxhunt_fold_validation_sharpe_se",
            "Standard error (Lo 2002) of a fold's validation Sharpe after costs.",
            ["fold", INSTRUMENT, TRIAL],
            registry=r,
        )
        self._fold_best_baseline = Gauge(
            "foxhunt_fold_best_baseline_sharpe",
            "Validation Sharpe after costs of a fold's best baseline, labelled by its name.",
            ["fold", "baseline", INSTRUMENT, TRIAL],
            registry=r,
        )
        self._stitched = {
            name: (
                Gauge(
                    name,
                    f"{what} of the stitched out-of-sample record, after costs.",
                    [INSTRUMENT],
                    registry=r,
                ),
                read,
            )
            for name, (what, read) in STITCHED_GAUGES.items()
        }
        self._holdout = {
            # Labelled by the period's length: a labelled gauge shows nothing until set, so a run
            # without --holdout-days pushes no headline rather than a 0 that reads as one.
            name: (
                Gauge(
                    name,
                    f"{what} on the held-out final period (the run's headline), by its days.",
                    ["days", INSTRUMENT],
                    registry=r,
                ),
                read,
            )
            for name, (what, read) in HOLDOUT_GAUGES.items()
        }
        self._stitched_baseline = Gauge(
            "foxhunt_stitched_baseline_sharpe",
            "Sharpe after costs of each baseline over the stitched record's bars.",
            ["baseline", INSTRUMENT],
            registry=r,
        )

    def run_started(self) -> None:
        """Mark the start of the run and push."""
        self._start_ts.set(time.time())
        self.push()

    def data_loaded(self, seconds: float, rows: int) -> None:
        """Record the one data load of the run and push."""
        self._load_seconds.set(seconds)
        self._rows.set(rows)
        self.push()

    def folds_planned(self, folds: int) -> None:
        """Record how many folds the run will train (progress and ETA on the dashboard) and push."""
        self._folds_planned.set(folds)
        self.push()

    def fold_finished(
        self, figures: FoldFigures, instrument: str | None = None, trial: int | None = None
    ) -> None:
        """Record a finished fold's figures (of `instrument`, default the run's; of a search's `trial`, whose
        trials share the run's folds) and push."""
        fold, of = str(figures.fold), self.instrument if instrument is None else instrument
        by = "" if trial is None else str(trial)  # an empty label is no label: a plain run's series
        for phase in PHASES:
            self._phase.labels(fold, phase, of, by).set(figures.phases[phase])
        for gauge, read in self._fold_figures:
            gauge.labels(fold, of, by).set(read(figures))
        self._fold_info.labels(fold, figures.val_first_bar, figures.val_last_bar, of, by).set(1)
        self._fold_sharpe_se.labels(fold, of, by).set(figures.model.sharpe_se)
        self._fold_best_baseline.labels(fold, figures.best_baseline, of, by).set(figures.best_baseline_sharpe)
        self._folds_done.inc()
        self._last_fold_ts.set(time.time())
        self.push()

    def stitched_scored(self, stitched: StitchedFigures, instrument: str | None = None) -> None:
        """Record a stitched out-of-sample record (model and baselines after costs) of `instrument`
        (default the run's) and push."""
        of = self.instrument if instrument is None else instrument
        for gauge, read in self._stitched.values():
            gauge.labels(of).set(read(stitched))
        for name, sharpe in stitched.baseline_sharpes.items():
            self._stitched_baseline.labels(name, of).set(sharpe)
        self.push()

    def book_scored(self, book: StitchedFigures) -> None:
        """Record the book's stitched record (the instruments combined) under `instrument="book"` and push."""
        self.stitched_scored(book, BOOK)

    def holdout_scored(self, holdout: HoldoutFigures, instrument: str | None = None) -> None:
        """Record the held-out final period's headline (of `instrument`, default the run's) and push."""
        days, of = f"{holdout.days:g}", self.instrument if instrument is None else instrument
        for gauge, read in self._holdout.values():
            gauge.labels(days, of).set(read(holdout))
        self.push()

    def run_finished(self, status: str) -> None:
        """Mark the end of the run with its status (one of RUN_ENDINGS) and push."""
        if status not in RUN_ENDINGS:
            raise ValueError(f"run status {status!r}: expected one of {RUN_ENDINGS}")
        self._finished.labels(status).set(1)
        self._end_ts.set(time.time())
        self.push()

    def push(self) -> bool:
        """Replace the run's group on the Pushgateway with the registry; False (logged, counted) if it failed."""
        if not self.pushgateway:
            return True
        with self._push_lock:
            return self._push()

    def _target(self):
        """The Pushgateway URL without userinfo, and the handler that sends the userinfo as basic auth."""
        gateway, credentials = pushgateway_credentials(self.pushgateway or "")
        return gateway, default_handler if credentials is None else _basic_auth(*credentials)

    def _push(self) -> bool:
        gateway, handler = self._target()
        try:
            # PUT of the whole registry: the group always equals the run's full state, so a push
            # after failed ones repairs the gap, and the failure counter rides along.
            push_to_gateway(
                gateway,
                job=self.job,
                registry=self.registry,
                grouping_key={"run_id": self.run_id},
                timeout=self.timeout,
                handler=handler,
            )
        # URLError, HTTPError, timeouts and refused or reset connections are OSErrors; a peer that
        # answers with something other than HTTP raises HTTPException.
        except (OSError, http.client.HTTPException) as exc:
            self.push_failures += 1
            self._push_failed.inc()
            level = logging.WARNING if self.push_failures == 1 else logging.DEBUG
            log.log(
                level,
                "metrics push to %s failed (%s); training goes on, failures are counted in "
                "foxhunt_push_failures_total",
                self.shown,
                scrub_text(exc),
            )
            return False
        return True

    def delete_group(self) -> bool:
        """Delete the run's group from the Pushgateway; False (logged, counted) if that failed.

        Prometheus keeps what it scraped before; call this only after at least one scrape interval
        since the final push, or the final values never reach Prometheus.
        """
        if not self.pushgateway:
            return True
        gateway, handler = self._target()
        try:
            with self._push_lock:
                delete_from_gateway(
                    gateway,
                    job=self.job,
                    grouping_key={"run_id": self.run_id},
                    timeout=self.timeout,
                    handler=handler,
                )
        except (OSError, http.client.HTTPException) as exc:
            self.push_failures += 1
            log.warning(
                "deleting metrics group run_id=%s from %s failed (%s)",
                self.run_id,
                self.shown,
                scrub_text(exc),
            )
            return False
        return True

    def close(self) -> None:
        """Stop the live /metrics endpoint, if one was started."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def _serve(registry: CollectorRegistry, port: int, addr: str):
    """A live /metrics endpoint of `registry`; ConfigError (a usage error found before work) when it cannot be."""
    try:
        server, _ = start_http_server(port, addr=addr, registry=registry)
    except OSError as exc:  # in use, or a privileged port
        raise ConfigError(
            "run config",
            "metrics_port",
            f"{port}: cannot serve /metrics there ({exc.strerror or exc}); choose a free port",
        ) from exc
    return server
