"""Where a study lives: an SQLite file in the run's work folder (the embedded default, copied to
object storage after each round that ends a trial when `--out` is s3://), or a SQL server (PostgreSQL)
that many worker pods share, given as a SQLAlchemy URL.

A URL can carry a password (it comes from a Secret in the cluster): messages show it redacted.
"""

from __future__ import annotations

import random
import re
import sqlite3
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from optuna.exceptions import ExperimentalWarning
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url

from foxhunt import out_names, storage
from foxhunt.config.urls import POSTGRES_DRIVERS, study_storage_problem
from foxhunt.errors import BadInput, RunFailure
from foxhunt.redaction import NOT_A_URL, redact_url

STUDY_FILE = out_names.STUDY_FILE
SQLITE_BUSY_TIMEOUT_S = 60
# Workers that start together on a fresh database race to create Optuna's tables; the losers retry.
OPEN_ATTEMPTS = 5
# A plain postgresql:// URL uses psycopg 3, the driver foxhunt ships (SQLAlchemy 2.0 would pick psycopg2).
POSTGRES_DRIVER = "postgresql+psycopg"
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


def study_storage_url(storage_url: str | None, work_dir: str | Path) -> str:
    """The SQLAlchemy URL of the study: `storage_url` as given, else the SQLite file in `work_dir`."""
    if storage_url:
        return storage_url
    path = Path(work_dir).resolve() / STUDY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def redacted(url: str) -> str:
    """The URL with its password masked (foxhunt.redaction); NOT_A_URL without a scheme."""
    if not _SCHEME.match(url) or "://" not in url:
        return NOT_A_URL
    return redact_url(url, bare_host=False)


def check_storage_url(url: str) -> None:
    """BadInput (naming the redacted URL) when `url` is no study storage this image can open
    (foxhunt.config.urls.study_storage_problem); checked before any work."""
    problem = study_storage_problem(url)
    if problem:
        raise BadInput(f"study storage {redacted(url)}: {problem}")


def _driver_url(url: str) -> str:
    parsed = make_url(url)
    return (
        parsed.set(drivername=POSTGRES_DRIVER).render_as_string(hide_password=False)
        if parsed.drivername in POSTGRES_DRIVERS
        else url
    )


def private_sqlite(path: str) -> sqlite3.Connection:
    """A connection to the SQLite study at `path` in WAL mode, committing without an fsync per commit.

    Only for a study in a pod-local folder that no other process opens (an s3:// `--out`'s copy): WAL's
    shared-memory index does not hold on a network volume, and a host that loses power may lose the last
    commits, which the upload after each round keeps anyway.
    """
    connection = sqlite3.connect(path, timeout=SQLITE_BUSY_TIMEOUT_S, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    return connection


def _engine_kwargs(url: str, private: bool) -> dict:
    if not url.startswith("sqlite"):
        return {}
    if private:
        return {"creator": partial(private_sqlite, make_url(url).database or "")}
    return {"connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_S}}


def rdb_storage(
    url: str, *, heartbeat_seconds: int, grace_seconds: int, max_retry: int, private: bool = False
) -> RDBStorage:
    """Optuna's SQL storage with heartbeats and the retry of stale trials; a bad URL is BadInput, an
    unreachable or unusable server a RunFailure, both naming the redacted URL in one line. `private`: an
    SQLite file only this process opens, kept in WAL mode (`private_sqlite`)."""
    shown = redacted(url)
    last: Exception | None = None
    for _ in range(OPEN_ATTEMPTS):
        try:
            engine_kwargs = _engine_kwargs(url, private)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ExperimentalWarning)
                return RDBStorage(
                    _driver_url(url),
                    engine_kwargs=engine_kwargs,
                    heartbeat_interval=heartbeat_seconds,
                    grace_period=grace_seconds,
                    heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=max_retry),
                )
        except (sa_exc.ArgumentError, ImportError) as exc:
            raise BadInput(f"study storage {shown}: not a usable SQLAlchemy URL: {_first_line(exc)}") from exc
        except (sa_exc.IntegrityError, sa_exc.ProgrammingError) as exc:
            last = exc  # another worker is creating the tables right now
            time.sleep(random.uniform(0.2, 1.0))
        except sa_exc.SQLAlchemyError as exc:
            raise RunFailure(f"study storage {shown}: cannot open: {_first_line(exc)}") from exc
    raise RunFailure(f"study storage {shown}: cannot create the study tables: {_first_line(last)}") from last


def _first_line(exc: BaseException | None) -> str:
    return str(exc).strip().splitlines()[0] if exc is not None and str(exc).strip() else type(exc).__name__


def sync_study_file(local_path: str | Path, out_uri: str) -> None:
    """Upload a consistent snapshot of the local SQLite study to `out_uri` (after each round ending a trial).

    SQLite's backup API copies a transaction-consistent image even while the study is open;
    the upload replaces the object whole, so a reader sees the previous or the new study.
    """
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = Path(tmp) / STUDY_FILE
        with (
            closing(sqlite3.connect(str(local_path))) as source,
            closing(sqlite3.connect(str(snapshot))) as target,
        ):
            source.backup(target)
            # The copy takes a private study's WAL mode; a reader of the upload must not write beside it.
            target.execute("PRAGMA journal_mode=DELETE")
        storage.upload_file(snapshot, storage.join(out_uri, STUDY_FILE))


def fetch_study_file(out_uri: str, work_dir: str | Path) -> Path | None:
    """Put the study uploaded to `out_uri` in `work_dir` unless a local one is there; its path, or None.

    A local file wins: it is at least as new as the upload, which follows each trial.
    """
    local = Path(work_dir) / STUDY_FILE
    if local.exists():
        return local
    remote = storage.join(out_uri, STUDY_FILE)
    if not storage.exists(remote):
        return None
    return storage.download_file(remote, local)


@dataclass(frozen=True)
class StudyFolder:
    """Where a search keeps its embedded study: the folder, and the study file uploaded to `--out` after
    each round when the folder is a pod-local copy (None: the folder is `--out` itself, or the study lives
    on a server)."""

    path: Path
    synced: Path | None

    @property
    def private(self) -> bool:
        """The study file is a pod-local copy that no other process opens (`private_sqlite`)."""
        return self.synced is not None


@contextmanager
def study_folder(out_uri: str, *, embedded: bool = True, start_over: bool = False) -> Iterator[StudyFolder]:
    """`--out` itself (its old study removed when `start_over`), or for an s3:// `--out` a temporary local
    folder holding the `embedded` study uploaded there (fetched first, unless `start_over`, so a restarted
    pod continues it), synced back by the caller."""
    local = storage.local_path(out_uri)
    if local is not None:
        local.mkdir(parents=True, exist_ok=True)
        if start_over:
            (local / STUDY_FILE).unlink(missing_ok=True)
        yield StudyFolder(local, None)
        return
    with tempfile.TemporaryDirectory(prefix="foxhunt-study-") as tmp:
        if embedded and not start_over:
            fetch_study_file(out_uri, tmp)
        yield StudyFolder(Path(tmp), Path(tmp) / STUDY_FILE if embedded else None)
