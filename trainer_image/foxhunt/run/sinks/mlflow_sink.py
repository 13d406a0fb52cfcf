"""The optional MLflow sink (`--mlflow-uri`): a run's settings, figures and pictures in an MLflow store.

It records what the run left in `--out` once the command ends, however it ended: `summary.json` gives
the settings (params), each fold's figures (metrics with the fold as the step) and the stitched
record's (`stitched.` metrics); the run's pictures (`*.png`) and `summary.json` become artifacts. A
search (`--trials N`) is one MLflow run for the study (`study.json`, `best_params.json` as artifacts)
with a nested run per trial from `trials.json` and `trials/NNNN/trial.json`. Reading the files, not
the training loop, keeps the run free of MLflow: a tracking server that is slow or down never stalls
a fold, and a resumed run is recorded whole.

`mlflow` (the `mlflow` extra, mlflow-skinny) is imported only when a record is written.

`foxhunt train` and `pipeline` also write the run while it goes (`mlflow_live.LiveRecord`: params,
commit, each epoch's and fold's figures, each fold's weights); the record then completes that MLflow
run (pictures, summary, stitched figures, status) instead of creating one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from foxhunt import out_names, storage
from foxhunt.errors import RunFailure, UsageError
from foxhunt.evaluate.evaluation import MODEL, WindowEvaluation
from foxhunt.evaluate.reports import FoldReport, RunSummary
from foxhunt.redaction import redact_url
from foxhunt.run.lifecycle import console
from foxhunt.run.sinks.mlflow_store import quiet_mlflow, store_problem

# `--mlflow-uri` without a value: $MLFLOW_TRACKING_URI, else a local file store `./mlruns` (what
# `mlflow ui --backend-store-uri ./mlruns` shows): nothing to set up, one folder to copy or delete.
# MLflow 3 keeps the file store in maintenance mode and refuses it unless asked, so a `file:` store is
# asked for explicitly here; `sqlite:///PATH` gives MLflow's database store instead.
DEFAULT_FILE_STORE = "mlruns"
EXPERIMENT = "foxhunt"  # unless $MLFLOW_EXPERIMENT_NAME names another
SQLITE_PREFIX = "sqlite:///"  # then the database's path: relative, or absolute with a fourth slash
TRACKING_SCHEMES = ("file", "sqlite", "postgresql", "mysql", "mssql", "http", "https", "databricks")
RUN_STATUS = {"succeeded": "FINISHED", "failed": "FAILED", "interrupted": "KILLED", "running": "FAILED"}
# A trial still RUNNING in the table when its process ended was stopped with it.
TRIAL_STATUS = {"COMPLETE": "FINISHED", "PRUNED": "KILLED", "FAIL": "FAILED", "RUNNING": "KILLED"}
PICTURES = (
    out_names.RUN_PICTURE,
    out_names.TIMINGS_PICTURE,
    out_names.HOLDOUT_PICTURE,
    out_names.LEARNING_PICTURE,
    out_names.POSITIONS_PICTURE,
    out_names.SEEDS_PICTURE,
    out_names.TRIALS_PICTURE,
)
STUDY_FILES = (out_names.STUDY_SUMMARY, out_names.BEST_PARAMS, out_names.TRIALS_CSV)
# MLflow's per-call limits on a batch.
PARAMS_PER_BATCH, METRICS_PER_BATCH = 100, 1000


class LiveRun(Protocol):
    """The MLflow run the run wrote while it went (`mlflow_live.LiveRecord`), which the record completes."""

    run_id: str | None  # None: it was never created

    @property
    def complete(self) -> bool: ...  # every fold reached it


def tracking_uri(value: str) -> str:
    """The tracking URI that `--mlflow-uri VALUE` names; '' (the flag alone) is $MLFLOW_TRACKING_URI,
    else the local default store.

    A plain path is a file store there; `file:` alone is `./mlruns`. UsageError (exit 2), naming the
    flag or the variable, for a scheme MLflow has no store for or a store that cannot take the record
    (foxhunt.run.sinks.mlflow_store.store_problem): checked before any work."""
    source = "--mlflow-uri"
    if value == "":
        value, source = os.environ.get("MLFLOW_TRACKING_URI", ""), "$MLFLOW_TRACKING_URI"
    uri = _resolved(value, source)
    problem = store_problem(uri)
    if problem:
        raise UsageError(f"{source}: {redact_url(uri, bare_host=False)} {problem}")
    return uri


def _resolved(value: str, source: str) -> str:
    if value == "":
        return f"file:{os.path.abspath(DEFAULT_FILE_STORE)}"
    try:
        scheme = urlsplit(value).scheme
    except ValueError:  # `http://[::1`: a bracket left open
        raise UsageError(f"{source}: {redact_url(value, bare_host=False)} is not a URL") from None
    if scheme == "":
        return f"file:{os.path.abspath(value)}"
    if scheme not in TRACKING_SCHEMES:
        raise UsageError(
            f"{source}: no MLflow store for the scheme {scheme}:, expected a path or one of "
            f"{', '.join(s + ':' for s in TRACKING_SCHEMES)}"
        )
    if scheme == "file" and urlsplit(value).path == "":
        return f"file:{os.path.abspath(DEFAULT_FILE_STORE)}"
    return value


@contextmanager
def recorded_in_mlflow(
    uri: str | None, out_uri: str, log_format: str = "text", live: LiveRun | None = None
) -> Iterator[None]:
    """Record the run in `out_uri` in the MLflow store `uri` once the block ends (nothing when `uri` is
    None), completing the `live` MLflow run when the run wrote one. A run refused before work
    (UsageError) has nothing to record. After a run that failed or was stopped, a record that cannot be
    written is reported and the run's own error goes on; after a successful run it is a RunFailure
    (exit 1)."""
    if uri is None:
        yield
        return
    try:
        yield
    except UsageError:
        raise
    except BaseException:
        try:
            record_run(uri, out_uri, log_format, live)
        except Exception as exc:  # noqa: BLE001 (reported; the run's own exception goes on)
            console(log_format, "")(f"mlflow: the run was not recorded: {type(exc).__name__}: {exc}")
        raise
    try:
        record_run(uri, out_uri, log_format, live)
    except Exception as exc:
        raise RunFailure(
            f"the run's outputs are in {out_uri}, but recording it in MLflow failed: {type(exc).__name__}: {exc}"
        ) from exc


def record_run(uri: str, out_uri: str, log_format: str = "text", live: LiveRun | None = None) -> str:
    """Write the run (or study) in `out_uri` to the MLflow store `uri`; prints and returns a line saying
    where (on the run's console, text or JSON). A `live` run is completed: its params and folds are not
    written again when every one reached it."""
    summary_uri = storage.join(out_uri, out_names.SUMMARY)
    if not storage.exists(summary_uri):
        line = f"mlflow: nothing recorded, {summary_uri} does not exist"
        console(log_format, "")(line)
        return line
    quiet_mlflow(uri)  # an unreachable server: seconds of tries, not MLflow's minutes
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    summary = RunSummary.from_dict(json.loads(storage.read_bytes(summary_uri)))
    name = experiment_name()
    experiment = experiment_id(client, uri, name)
    run_id = live.run_id if live is not None else None
    if run_id is None:
        run_id = client.create_run(
            experiment,
            start_time=_ms(summary.started_at),
            run_name=summary.run_id,
            tags={
                "foxhunt.run_id": summary.run_id,
                "foxhunt.out": out_uri,
                "foxhunt.version": summary.version,
            },
        ).info.run_id
    if live is not None and live.complete:
        _log(client, run_id, {}, run_metrics(summary, folds=False))
    else:
        _log(client, run_id, run_params(summary), run_metrics(summary))
    _log_files(client, run_id, out_uri, (out_names.SUMMARY, *PICTURES))
    trials = 0
    if summary.trials > 0:
        _log_files(client, run_id, out_uri, STUDY_FILES)
        trials = _record_trials(client, experiment, run_id, out_uri)
    client.set_terminated(run_id, RUN_STATUS[summary.status], end_time=_ms(summary.finished_at))
    nested = f" with {trials} nested trial run(s)" if summary.trials > 0 else ""
    line = f"mlflow: recorded run {summary.run_id} (MLflow run {run_id}){nested} in experiment {name}"
    console(log_format, summary.run_id)(line)
    return line


def experiment_name() -> str:
    """The experiment runs are recorded in: $MLFLOW_EXPERIMENT_NAME, else `EXPERIMENT`."""
    return os.environ.get("MLFLOW_EXPERIMENT_NAME") or EXPERIMENT


def experiment_id(client, uri: str, name: str) -> str:
    """The id of the experiment `name` in the store `uri`, created (its artifacts beside the store) when
    it does not exist yet: the live record and the end-of-run one write to the same."""
    found = client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    return client.create_experiment(name, artifact_location=artifact_location(uri, name))


def artifact_location(uri: str, experiment: str) -> str | None:
    """Where an SQLite store keeps the experiment's artifacts: `mlruns/<experiment>` beside the database
    (MLflow would take `./mlruns` of whatever folder the command ran in). Other stores decide (None)."""
    if not uri.startswith(SQLITE_PREFIX):
        return None
    database = os.path.abspath(uri[len(SQLITE_PREFIX) :])
    return os.path.join(os.path.dirname(database), DEFAULT_FILE_STORE, experiment)


def run_params(summary: RunSummary) -> dict[str, str]:
    """The run's settings as MLflow params: the top-level ones, then `folds.`, `dqn.` and `eval.` ones."""
    params = {k: getattr(summary, k) for k in ("model", "epochs", "seed", "trials", "device", "rows")}
    params["fxcache"] = summary.fxcache
    for section, values in (("folds", summary.fold_config), ("dqn", summary.dqn_config)):
        params.update({f"{section}.{k}": v for k, v in values.items()})
    params.update({f"eval.{k}": v for k, v in summary.eval_config.items()})
    return {k: str(v) for k, v in params.items()}


def window_metrics(window: WindowEvaluation, prefix: str = "") -> dict[str, float]:
    """A window's figures: the model's net and gross (`net.sharpe`, ...), each policy's net Sharpe."""
    model = window.policies[MODEL]
    figures: dict[str, float] = {}
    for level, metrics in (("net", model.net), ("gross", model.gross)):
        figures.update({f"{prefix}{level}.{k}": float(v) for k, v in vars(metrics).items()})
    for name, evaluation in window.policies.items():
        if name != MODEL:
            figures[f"{prefix}{name}.net.sharpe"] = float(evaluation.net.sharpe)
    return figures


def fold_metrics(report: FoldReport) -> dict[str, float]:
    """A fold's figures: its window's (`window_metrics`) and its timings and final loss."""
    figures = window_metrics(report.evaluation)
    figures.update(
        fold_seconds=report.fold_seconds,
        samples_per_second=report.samples_per_second,
        final_loss=report.final_loss,
    )
    return figures


def run_metrics(summary: RunSummary, folds: bool = True) -> list[tuple[str, float, int]]:
    """(key, value, step): each fold's figures at step = fold (unless `folds` is False), the stitched
    record's and the held-out period's at step 0, and the run's timings."""
    rows: list[tuple[str, float, int]] = []
    for report in summary.folds if folds else ():
        rows += [(key, value, report.fold) for key, value in fold_metrics(report).items()]
    if summary.stitched is not None:
        rows += [(k, v, 0) for k, v in window_metrics(summary.stitched, "stitched.").items()]
    rows += [(k, v, 0) for k, v in _numbers(summary.holdout or {}, "holdout.").items()]
    rows += [("run_seconds", summary.run_seconds, 0), ("data_load_seconds", summary.data_load_seconds, 0)]
    return rows


def _record_trials(client, experiment: str, parent: str, out_uri: str) -> int:
    """A nested run per trial of the study table: its settings, each fold's net Sharpe, its record."""
    table_uri = storage.join(out_uri, out_names.TRIALS_JSON)
    if not storage.exists(table_uri):
        return 0
    rows = json.loads(storage.read_bytes(table_uri))
    for row in rows:
        report_uri = storage.join(out_uri, row["folder"], out_names.TRIAL_REPORT)
        report = json.loads(storage.read_bytes(report_uri)) if storage.exists(report_uri) else {}
        run = client.create_run(
            experiment,
            run_name=f"trial {row['number']}",
            tags={"mlflow.parentRunId": parent, "foxhunt.trial": str(row["number"]), "foxhunt.state": row["state"]},
        )  # fmt: skip
        _log(client, run.info.run_id, *trial_record(row, report))
        if report:
            _log_files(
                client, run.info.run_id, storage.join(out_uri, row["folder"]), (out_names.TRIAL_REPORT,)
            )
        client.set_terminated(run.info.run_id, TRIAL_STATUS.get(row["state"], "FAILED"))
    return len(rows)


def trial_record(row: dict, report: dict) -> tuple[dict[str, str], list[tuple[str, float, int]]]:
    """A trial's params (every DQN setting it trained with, else its searched ones) and metrics (each
    fold's net Sharpe at step = fold, its objective, its stitched net and gross figures)."""
    dqn = report.get("dqn") or row.get("params", {})
    params = {f"dqn.{k}": str(v) for k, v in dqn.items()}
    metrics = [("net.sharpe", float(v), int(f)) for f, v in report.get("fold_net_sharpe", {}).items()]
    if row.get("objective") is not None:
        metrics.append(("objective", float(row["objective"]), 0))
    stitched = report.get("stitched") or {}
    metrics += [(k, v, 0) for k, v in _numbers(stitched, "stitched.").items()]
    return params, metrics


def _numbers(data: dict, prefix: str) -> dict[str, float]:
    """The numeric leaves of nested `data`, keyed by their dotted path (null and booleans left out)."""
    found: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            found.update(_numbers(value, f"{prefix}{key}."))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            found[f"{prefix}{key}"] = float(value)
    return found


def _log(client, run_id: str, params: dict[str, str], metrics: list[tuple[str, float, int]]) -> None:
    from mlflow.entities import Metric, Param

    stamp = _ms(None)
    plist = [Param(k, v) for k, v in params.items()]
    mlist = [Metric(k, v, stamp, step) for k, v, step in metrics]
    for i in range(0, len(plist), PARAMS_PER_BATCH):
        client.log_batch(run_id, params=plist[i : i + PARAMS_PER_BATCH])
    for i in range(0, len(mlist), METRICS_PER_BATCH):
        client.log_batch(run_id, metrics=mlist[i : i + METRICS_PER_BATCH])


def _log_files(client, run_id: str, folder_uri: str, names: tuple[str, ...]) -> None:
    """Each of `names` that exists in `folder_uri` as an artifact of the run (fetched first if remote)."""
    for name in names:
        uri = storage.join(folder_uri, name)
        if not storage.exists(uri):
            continue
        local = storage.local_path(uri)
        if local is not None:
            client.log_artifact(run_id, str(local))
            continue
        with tempfile.TemporaryDirectory(prefix="foxhunt-mlflow-") as tmp:
            client.log_artifact(run_id, str(storage.download_file(uri, Path(tmp, name))))


def _ms(iso: str | None) -> int:
    """Milliseconds since the epoch of an ISO-8601 time (now when None), as MLflow keeps times."""
    when = datetime.fromisoformat(iso.replace("Z", "+00:00")) if iso else datetime.now().astimezone()
    return int(when.timestamp() * 1000)
