"""The MLflow record while the run goes (`--mlflow-uri`): a `RunSink` that writes to MLflow as the run trains.

When the run starts: an MLflow run named for the run, with its settings (params), the code's commit
(`mlflow.source.git.commit`, `foxhunt.commit`), the fxcache as a dataset input (its checksum as the
digest; the whole checksum in `foxhunt.fxcache_checksum`) and `manifest.json` (the settings a fold's
policy is rebuilt with). Each epoch: `fold_N/loss`, `fold_N/q_mean`, `fold_N/q_max`,
`fold_N/train_sharpe` (in-sample) and `fold_N/tail_sharpe`, at step = the run's global epoch index
(fold × epochs + epoch). Each fold as it completes: its figures at step = fold (the keys the
end-of-run record uses) and its folder's files (`fold_N/weights.pt`, norm stats, positions, report)
as artifacts. `mlflow_sink.record_run` then adds the pictures, `summary.json`, the stitched figures
and the status to the same MLflow run.

The calls run on a worker thread of their own: training only queues them, so a slow or failing
store never stalls or stops a fold. A call that fails is counted (`failures`) and logged, the first
as a warning; each HTTP call is bounded by MLflow's timeout and retries (`mlflow_store.BOUNDED_RETRIES`,
the end-of-run record's bound, unless the environment sets them). At the run's end the queue is given `FLUSH_SECONDS` to drain.

    from foxhunt.run.sinks.mlflow_live import fold_policy_from_mlflow
    policy = fold_policy_from_mlflow("sqlite:///mlflow.db", mlflow_run_id, fold=0)
    policy.rollout(features)   # as `foxhunt.evaluate.fold_policy.load_policy` on the run's fold_0/

`mlflow` is imported on the worker thread, once the run starts.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from foxhunt import out_names, storage
from foxhunt.evaluate.fold_policy import Policy, load_policy
from foxhunt.evaluate.reports import FoldReport, RunSummary
from foxhunt.run.manifest import Manifest
from foxhunt.run.sinks.mlflow_sink import (
    _log,
    _ms,
    experiment_id,
    experiment_name,
    fold_metrics,
    run_params,
)
from foxhunt.run.sinks.mlflow_store import quiet_mlflow
from foxhunt.train.epoch_figures import EpochFigures

log = logging.getLogger(__name__)
# The epoch's figures logged live, each as `fold_N/<name>` (None ones are left out).
EPOCH_FIGURES = ("loss", "q_mean", "q_max", "train_sharpe", "tail_sharpe")
FLUSH_SECONDS = 60.0  # at the run's end: what the queue may still take before it is left behind
FOLD_FILES = (out_names.WEIGHTS, out_names.POSITIONS, out_names.FOLD_REPORT)  # and the fold's norm stats


def code_commit() -> str | None:
    """The commit of the code that runs: `$FOXHUNT_COMMIT` (an image built from a checkout sets it), else
    the HEAD of the git checkout the package is imported from, else None."""
    if os.environ.get("FOXHUNT_COMMIT"):
        return os.environ["FOXHUNT_COMMIT"]
    package = Path(__file__).resolve().parents[2]
    try:
        found = subprocess.run(
            ["git", "-C", str(package), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() if found.returncode == 0 and found.stdout.strip() else None


class LiveRecord:
    """The `RunSink` of `--mlflow-uri`: the run's MLflow run, written while it trains (module docstring)."""

    def __init__(self, uri: str, flush_seconds: float = FLUSH_SECONDS) -> None:
        self.uri = uri
        self.flush_seconds = flush_seconds
        self.run_id: str | None = None  # the MLflow run, once created
        self.failures = 0  # calls that failed, or were dropped because the run could not be created
        self.left_behind = False  # the queue did not drain in time at the end
        self.epochs_logged = 0
        self.folds_logged: list[int] = []
        self._client: Any = None
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue()  # None: the worker ends
        self._worker = threading.Thread(target=self._work, name="foxhunt-mlflow", daemon=True)

    @property
    def complete(self) -> bool:
        """Every call reached the store: the end-of-run record need not repeat the folds."""
        return self.run_id is not None and self.failures == 0 and not self.left_behind

    # -- the sink: called on the training thread, each only queues its work -------------------------
    def run_started(self, out_uri: str, summary: RunSummary, manifest: Manifest) -> None:
        """Queue the MLflow run's creation: params, commit, fxcache dataset input, `manifest.json`."""
        self._worker.start()
        self._queue.put(lambda: self._start(out_uri, summary))

    def epoch_finished(self, fold: int, epoch: int, epochs: int, figures: EpochFigures) -> None:
        """Queue the epoch's figures as `fold_N/…` metrics at step = fold × epochs + epoch."""
        values = {name: getattr(figures, name) for name in EPOCH_FIGURES}
        step = fold * epochs + epoch
        rows = [
            (f"{out_names.fold_folder(fold)}/{k}", float(v), step) for k, v in values.items() if v is not None
        ]
        self._queue.put(lambda: self._log_epoch(rows))

    def fold_finished(self, report: FoldReport, out_uri: str) -> None:
        """Queue the fold's figures (step = fold) and its folder's files as artifacts under `fold_N/`."""
        self._queue.put(lambda: self._log_fold(report, out_uri))

    def run_finished(self, status: str) -> None:
        """Let the queue drain for at most `flush_seconds` (the status is the end-of-run record's)."""
        if self._worker.is_alive():
            self.left_behind = not self.flush(self.flush_seconds)
            self._queue.put(None)  # the worker ends once it gets there (a slow store: later, on its own)

    def flush(self, timeout: float) -> bool:
        """Wait until what is queued by now has been written (or failed); False after `timeout` seconds."""
        done = threading.Event()
        self._queue.put(done.set)
        return done.wait(timeout)

    # -- the worker ----------------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            call = self._queue.get()
            if call is None:
                return
            try:
                call()
            except Exception as exc:  # noqa: BLE001 (a store's failure never reaches the run)
                self.failures += 1
                level = logging.WARNING if self.failures == 1 else logging.DEBUG
                log.log(level, "mlflow: a live record call failed (%s: %s); training goes on, the "
                        "end-of-run record repeats what is missing", type(exc).__name__, exc)  # fmt: skip

    def _started_client(self):
        if self.run_id is None:
            raise RuntimeError("the MLflow run was not created")
        return self._client

    def _start(self, out_uri: str, summary: RunSummary) -> None:
        quiet_mlflow(self.uri)
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=self.uri)
        experiment = experiment_id(client, self.uri, experiment_name())
        commit = code_commit()
        tags = {"foxhunt.run_id": summary.run_id, "foxhunt.out": out_uri, "foxhunt.version": summary.version}
        if commit is not None:
            tags.update({"mlflow.source.git.commit": commit, "foxhunt.commit": commit})
        if summary.fxcache_checksum:
            tags["foxhunt.fxcache_checksum"] = summary.fxcache_checksum
        run = client.create_run(
            experiment, start_time=_ms(summary.started_at), run_name=summary.run_id, tags=tags
        )
        self._client, self.run_id = client, run.info.run_id
        _log(client, self.run_id, run_params(summary), [])
        if summary.fxcache_checksum:
            client.log_inputs(
                self.run_id, datasets=[fxcache_input(summary.fxcache, summary.fxcache_checksum)]
            )
        _log_artifacts(client, self.run_id, out_uri, (out_names.MANIFEST,), None)

    def _log_epoch(self, rows: list[tuple[str, float, int]]) -> None:
        _log(self._started_client(), str(self.run_id), {}, rows)
        self.epochs_logged += 1

    def _log_fold(self, report: FoldReport, out_uri: str) -> None:
        client, fold = self._started_client(), report.fold
        _log(client, str(self.run_id), {}, [(k, v, fold) for k, v in fold_metrics(report).items()])
        folder = storage.join(out_uri, out_names.fold_folder(fold))
        names = (*FOLD_FILES, out_names.norm_stats_file(fold))
        _log_artifacts(client, str(self.run_id), folder, names, out_names.fold_folder(fold))
        self.folds_logged.append(fold)


def fxcache_input(uri: str, checksum: str):
    """The fxcache as an MLflow dataset input: named for its file, its checksum as the digest (MLflow
    keeps 36 characters: the whole one is in the profile and the run's `foxhunt.fxcache_checksum` tag)."""
    from mlflow.entities import Dataset, DatasetInput, InputTag

    scheme = urlsplit(uri).scheme or "local"
    uri = os.path.abspath(uri) if scheme == "local" else uri
    dataset = Dataset(
        name=uri.rstrip("/").rpartition("/")[2] or uri,
        digest=checksum[:36],
        source_type=scheme,
        source=json.dumps({"uri": uri}),
        profile=json.dumps({"checksum": checksum}),
    )
    return DatasetInput(dataset, tags=[InputTag("mlflow.data.context", "training")])


def _log_artifacts(client, run_id: str, folder_uri: str, names: tuple[str, ...], under: str | None) -> None:
    """Each of `names` in `folder_uri` as an artifact of the run under `under` (fetched first if remote)."""
    for name in names:
        uri = storage.join(folder_uri, name)
        local = storage.local_path(uri)
        if local is not None:
            client.log_artifact(run_id, str(local), under)
            continue
        with tempfile.TemporaryDirectory(prefix="foxhunt-mlflow-") as tmp:
            client.log_artifact(run_id, str(storage.download_file(uri, Path(tmp, name))), under)


def fold_policy_from_mlflow(uri: str, run_id: str, fold: int, device: str = "cpu") -> Policy:
    """A fold's greedy policy from the MLflow run `run_id` in the store `uri`: its `fold_N/` artifacts and
    `manifest.json`, downloaded and read by `foxhunt.evaluate.fold_policy.load_policy`."""
    quiet_mlflow(uri)
    from mlflow.artifacts import download_artifacts

    with tempfile.TemporaryDirectory(prefix="foxhunt-policy-") as tmp:
        for path in (out_names.MANIFEST, out_names.fold_folder(fold)):
            download_artifacts(run_id=run_id, artifact_path=path, dst_path=tmp, tracking_uri=uri)
        return load_policy(str(Path(tmp, out_names.fold_folder(fold))), device)
