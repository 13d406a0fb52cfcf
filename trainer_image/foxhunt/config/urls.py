"""URLs checked before work: a Pushgateway a push can reach, a study storage a study can open.

Each refusal is a one-line UsageError (exit 2) that shows the URL only redacted.
"""

from __future__ import annotations

import importlib.util
import os
import urllib.parse
from pathlib import Path

from foxhunt.errors import ConfigError
from foxhunt.redaction import redact_url

PUSHGATEWAY_SCHEMES = ("http", "https")


def pushgateway_problem(url: str) -> str | None:
    """What is wrong with a Pushgateway URL (http(s)://host[:port], or a bare host:port), or None."""
    full = url if "://" in url else f"http://{url}"
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        return "holds a space or a control character"
    try:
        parts = urllib.parse.urlsplit(full)
        port = parts.port
    except ValueError:
        return "is not a URL (its port is not a number, or its host is malformed)"
    if parts.scheme not in PUSHGATEWAY_SCHEMES:
        return f"has scheme {parts.scheme or '(none)'!r}; expected http or https"
    if not parts.hostname:
        return "names no host"
    if "@" in (parts.path + parts.query + parts.fragment) or parts.fragment:
        return "has a password with a reserved character (/ ? # @) that is not percent-encoded"
    if port == 0:
        return "has port 0"
    return None


def pushgateway_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """`url` without its userinfo, and the (user, password) it carried for HTTP basic auth (None
    without userinfo). Percent-encoded characters are decoded; a user alone has an empty password."""
    scheme, sep, body = url.rpartition("://") if "://" in url else ("", "", url)
    userinfo, at, rest = body.rpartition("@")
    if not at:
        return url, None
    user, _, password = userinfo.partition(":")
    plain = f"{scheme}{sep}{rest}"
    return plain, (urllib.parse.unquote(user), urllib.parse.unquote(password))


def check_pushgateway(url: str | None) -> str | None:
    """`url` when it is usable as a Pushgateway; ConfigError (exit 2, the URL redacted) when not."""
    if url:
        problem = pushgateway_problem(url)
        if problem:
            raise ConfigError(
                "run config", "pushgateway", f"{redact_url(url)} {problem} (like http://host:9091)"
            )
    return url


# Study storage dialects foxhunt ships a driver for; `+psycopg2` is read as the installed psycopg 3.
POSTGRES_DRIVERS = ("postgresql", "postgresql+psycopg", "postgresql+psycopg2")
SQLITE_DRIVERS = ("sqlite", "sqlite+pysqlite")
SQLITE_HEADER = b"SQLite format 3\x00"


def sqlite_problem(database: str) -> str | None:
    """What keeps `database` from being an SQLite file a store can use (new, empty or a database), or None."""
    if not database or database == ":memory:":
        return "names no file (an in-memory study is lost when the process ends)"
    path = Path(database)
    if path.exists():
        if not path.is_file():
            return f"names {database}, which is not a regular file"
        if not os.access(path, os.W_OK):
            return f"names {database}, which cannot be written"
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
        if head and head != SQLITE_HEADER:
            return f"names {database}, which is not an SQLite database"
        return None
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        return f"names {database}, whose folder does not exist or cannot be written"
    return None


def study_storage_problem(url: str) -> str | None:
    """What is wrong with a study storage URL before a study opens it, or None: a SQLAlchemy URL of
    PostgreSQL (psycopg) or SQLite, its driver installed, a password with no bare `@`, and an SQLite
    file that is a database (or empty, or new) and can be written."""
    from sqlalchemy.engine import make_url  # the search's packages: imported by a search only

    if any(ch.isspace() or not ch.isprintable() for ch in url):
        return "holds a space or a control character"
    scheme, sep, body = url.partition("://")
    if not sep:
        return "is not a usable SQLAlchemy URL (dialect://user:password@host:port/database)"
    if "@" in body.rpartition("@")[0]:
        return "has a password with a bare '@'; percent-encode it as %40"
    try:
        parsed = make_url(url)
        _ = parsed.port
    except Exception:  # ArgumentError, or ValueError for a port that is no number; their text shows the URL
        return "is not a usable SQLAlchemy URL (dialect://user:password@host:port/database)"
    driver = parsed.drivername
    if driver in SQLITE_DRIVERS:
        return sqlite_problem(parsed.database or "")
    if driver not in POSTGRES_DRIVERS:
        return (
            f"uses {driver}, for which this image has no driver; use postgresql:// "
            "(or postgresql+psycopg://) or sqlite:///"
        )
    if importlib.util.find_spec("psycopg") is None:
        return "needs the psycopg driver (pip install 'psycopg[binary]'), which is not installed"
    if not parsed.host:
        return "names no host"
    return None
