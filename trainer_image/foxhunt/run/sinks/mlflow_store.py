"""The MLflow store `--mlflow-uri` (or $MLFLOW_TRACKING_URI) names, checked before any work, and how
long the record may wait on a tracking server once the run is over.

The record is written after the run, from its files; a store that cannot take it would be found only
then, hours later. So what can be known from the URI is checked before the first fold (exit 2): that
it parses (`http://[::1` does not), a port in 1-65535, a host where one is needed, a file store's
folder that is a folder and can be made or written, an SQLite file that is a database. Whether a
server answers cannot be known that early (it may start later); after the run, an unreachable one
gets a few tries within seconds (`BOUNDED_RETRIES`), not MLflow's default of minutes; so does each
call of the live record (`mlflow_live.LiveRecord`), which is written to the same checked URI.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from foxhunt.config.urls import sqlite_problem

SERVER_SCHEMES = ("http", "https")
DATABASE_SCHEMES = ("postgresql", "mysql", "mssql")
# MLflow's HTTP client settings for the record, unless the environment sets them: 3 tries, 1 s and
# 2 s apart, 5 s a request: an unreachable server fails the record in about 20 s at most.
BOUNDED_RETRIES = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "5",
}
QUIET_LOGGERS = ("mlflow.store.db.utils", "alembic")


def _folder_problem(folder: Path) -> str | None:
    """What keeps `folder` from holding a file store: not a folder, or neither it nor the nearest
    folder above it that exists can be written."""
    if folder.exists():
        if not folder.is_dir():
            return f"names {folder}, which is not a folder"
        return None if os.access(folder, os.W_OK | os.X_OK) else f"names {folder}, which cannot be written"
    above = folder.parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        return f"names {folder}, under {above}, which is not a folder"
    if not os.access(above, os.W_OK | os.X_OK):
        return f"names {folder}, which cannot be created in {above}"
    return None


def store_problem(uri: str) -> str | None:
    """What is wrong with a tracking URI (after `tracking_uri` made a path a `file:` URI), or None."""
    if any(ch.isspace() or not ch.isprintable() for ch in uri):
        return "holds a space or a control character"
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return "is not a URL (a malformed host, or a port that is no number or past 65535)"
    if port == 0:
        return "has port 0"
    if parts.scheme == "file":
        return _folder_problem(Path(unquote(parts.path)))
    if parts.scheme == "sqlite":
        if not uri.startswith("sqlite:///"):
            return "is not sqlite:///PATH (three slashes, then the database's path)"
        return sqlite_problem(uri[len("sqlite:///") :])
    if parts.scheme in SERVER_SCHEMES + DATABASE_SCHEMES and not parts.hostname:
        return "names no host"
    return None


def quiet_mlflow(uri: str) -> None:
    """MLflow's client set up for the store `uri`, for the live record and the end-of-run one alike: the
    file store asked for by name (MLflow 3 refuses it otherwise), HTTP retries bounded to seconds
    (BOUNDED_RETRIES, where the environment sets none), no "View run …" lines on stdout (printed for a
    tracking server), no download progress bars, no table-creation logs."""
    if urlsplit(uri).scheme == "file":
        os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    for name, value in BOUNDED_RETRIES.items():
        os.environ.setdefault(name, value)
    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
    os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"
    for name in QUIET_LOGGERS:  # their INFO lines (creating the store's tables) are not the run's
        logging.getLogger(name).setLevel(logging.WARNING)
