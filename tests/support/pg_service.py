"""A real PostgreSQL server (Debian's `postgresql` binaries) on 127.0.0.1 for tests, started by a fixture.

`postgres_url` (session) yields the SQLAlchemy URL of an empty database on a server that lives
for the session: a fresh cluster in a temporary folder, trust authentication on loopback only,
a Unix socket in that folder (not /var/run), fsync off. PostgreSQL refuses to run as root, so
when the suite runs as root the server runs as the `postgres` user that the package creates.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["PostgresServer", "postgres_server", "postgres_url", "start_postgres"]

START_TIMEOUT_S = 60
DATABASE = "foxhunt_test"
INSTALL_HINT = "apt-get install -y --no-install-recommends postgresql (scripts/test.sh does)"


def _bin_dir() -> Path:
    # Debian keeps the server binaries out of PATH, one folder per major version.
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb is None:
        raise RuntimeError(f"PostgreSQL's initdb not found: {INSTALL_HINT}")
    return Path(initdb).parent


def _as_server_user(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


def _run(args: list[str], what: str) -> None:
    done = subprocess.run(_as_server_user(args), capture_output=True, text=True, timeout=START_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}): {done.stdout[-1500:]}{done.stderr[-1500:]}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class PostgresServer:
    """A running PostgreSQL cluster in its own folder."""

    bin_dir: Path
    folder: Path
    port: int

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the session's test database."""
        return self.database_url(DATABASE)

    def database_url(self, name: str) -> str:
        """SQLAlchemy URL of database `name` on this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def create_database(self, name: str) -> str:
        """Create an empty database; returns its URL."""
        _run(
            [str(self.bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name],
            "createdb",
        )
        return self.database_url(name)

    def stop(self) -> None:
        """Fast shutdown (open sessions are ended), then the folder goes."""
        try:
            _run(
                [str(self.bin_dir / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop"],
                "pg_ctl stop",
            )
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def start_postgres() -> PostgresServer:
    """Create a cluster in a new temporary folder, start it on a free loopback port, create the database."""
    bin_dir = _bin_dir()
    folder = Path(tempfile.mkdtemp(prefix="foxhunt-pg-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
    data, port = folder / "data", _free_port()
    try:
        _run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            "initdb",
        )
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off -c full_page_writes=off"
        _run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(folder / "server.log"),
                "-o",
                options,
                "-w",
                "-t",
                str(START_TIMEOUT_S),
                "start",
            ],
            "pg_ctl start",
        )
        server = PostgresServer(bin_dir, folder, port)
        server.create_database(DATABASE)
    except BaseException:
        log = folder / "server.log"
        if log.exists():
            print(log.read_text()[-2000:])
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return server


@pytest.fixture(scope="session")
def postgres_server() -> PostgresServer:
    """PostgreSQL on 127.0.0.1 for the session (give each test its own study or table names)."""
    server = start_postgres()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres_server) -> str:
    """SQLAlchemy URL of an empty database on the session's PostgreSQL server."""
    return postgres_server.url
