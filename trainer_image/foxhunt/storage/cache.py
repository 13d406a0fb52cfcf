"""The local cache of downloaded objects, keyed by what the reader verified, never by what the remote claims.

Layout under the cache directory (`FOXHUNT_CACHE_DIR`, else ~/.cache/foxhunt):

- `objects/<checksum><suffix>`: content that the reader's `verify` accepted, named by the checksum that
  `verify` computed from the bytes (hex only, so no remote text ever becomes part of a path);
- `index/<sha256 of the URI>.json`: the object that URI was when fetched (size, ETag, checksum);
- `locks/<sha256 of the URI>.lock`: one fetch of a URI at a time, across processes (fcntl);
- `objects/*.part-<host>-<pid>*`, `staging/*.part-<host>-<pid>*`: downloads and uploads in progress.

A cached copy is used only while a HEAD shows the object with the size and ETag recorded at download
and the copy still verifies to the checksum in its name; anything else is downloaded again. Parts of a
process that died (its pid gone on this host) or untouched for an hour are removed by the next fetch.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from foxhunt.storage import s3
from foxhunt.storage.local import atomic_local_path, regular_file
from foxhunt.storage.locations import Location

PART_MAX_AGE_SECONDS = 3600.0
_CHECKSUM = re.compile(r"[0-9a-f]{16,128}")
_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,12}")
_PART = re.compile(r"\.part-(?P<host>[0-9a-f]{8})-(?P<pid>\d+)(\.|$)")


@dataclass(frozen=True)
class Fetched:
    """A local copy that its reader verified: where it is, its checksum, and whether it was cached."""

    path: Path
    checksum: str
    cache_hit: bool


def sha256_file(path: Path) -> str:
    """SHA-256 of a file's bytes (hex): the check for content that carries no checksum of its own."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(8 * 1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def _host_tag() -> str:
    # Host names may hold '-'; a short hash of the name cannot, so the part name parses back.
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def pid_alive(pid: int) -> bool:
    """True while a process with this pid exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    return True


def remove_stale_parts(directory: Path) -> list[Path]:
    """Delete the parts in `directory` whose process is gone (same host) or untouched for an hour."""
    removed: list[Path] = []
    if not directory.is_dir():
        return removed
    now = time.time()
    for entry in directory.iterdir():
        found = _PART.search(entry.name)
        if found is None:
            continue
        try:
            age = now - entry.stat().st_mtime
        except FileNotFoundError:
            continue  # finished or removed meanwhile
        dead = found["host"] == _host_tag() and not pid_alive(int(found["pid"]))
        if dead or age > PART_MAX_AGE_SECONDS:
            entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


@contextmanager
def part_file(directory: Path) -> Iterator[Path]:
    """A fresh part name in `directory` (stale ones removed first), deleted on the way out."""
    directory.mkdir(parents=True, exist_ok=True)
    remove_stale_parts(directory)
    part = directory / f"{uuid.uuid4().hex[:12]}.part-{_host_tag()}-{os.getpid()}"
    try:
        yield part
    finally:
        part.unlink(missing_ok=True)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)  # released when the file closes, also if we die
        yield


def _checked(checksum: object) -> str:
    if not isinstance(checksum, str) or not _CHECKSUM.fullmatch(checksum):
        raise ValueError(f"verify returned {checksum!r}, not a lowercase hex checksum")
    return checksum


def _suffix(key: str) -> str:
    """The key's last two suffixes (`.csv.gz`), which readers use to tell the format; odd ones dropped."""
    return "".join(s for s in PurePosixPath(key).suffixes[-2:] if _SUFFIX.fullmatch(s))


def _read_record(index: Path) -> dict | None:
    try:
        record = json.loads(index.read_text())
        if isinstance(record, dict) and _CHECKSUM.fullmatch(str(record.get("checksum"))):
            return record
    except (OSError, ValueError):
        pass
    return None  # missing or unreadable: fetched again


def _reuse(loc: Location, info: dict, index: Path, objects: Path, verify) -> Fetched | None:
    """The cached copy of `loc`, if it still stands for the object HEAD describes and still verifies."""
    record = _read_record(index)
    if record is None or (record.get("uri"), record.get("size"), record.get("etag")) != (
        loc.uri,
        info["size"],
        info["etag"],
    ):
        return None
    path = objects / f"{record['checksum']}{_suffix(loc.key)}"
    if not path.is_file() or path.stat().st_size != info["size"]:
        return None
    try:
        checksum = verify(path)
    except Exception:  # the reader refuses it: damaged since, so fetched again
        checksum = None
    if checksum == record["checksum"]:
        return Fetched(path, checksum, cache_hit=True)
    path.unlink(missing_ok=True)  # a copy that no longer verifies is never trusted again
    index.unlink(missing_ok=True)
    return None


def fetch(loc: Location, verify: Callable[[Path], str], root: Path) -> Fetched:
    """A verified local copy of `loc` (see the module docstring); local files are verified in place.

    `verify(path)` is the reader's check: it raises the reader's error for bad content and returns the
    content's checksum (lowercase hex). A download is also checked against the object's size, and
    its MD5 when the ETag is one, before `verify` sees it.
    """
    if not loc.is_s3:
        regular_file(loc.path, loc.uri)
        return Fetched(loc.path, _checked(verify(loc.path)), cache_hit=False)
    objects = root / "objects"
    remove_stale_parts(objects)  # on every fetch, so that a run served from the cache cleans up too
    remove_stale_parts(root / "staging")
    name = hashlib.sha256(loc.uri.encode()).hexdigest()
    index = root / "index" / f"{name}.json"
    with _locked(root / "locks" / f"{name}.lock"):
        with s3.naming_missing_bucket(loc):
            info = s3.head(loc)
        hit = _reuse(loc, info, index, objects, verify)
        if hit is not None:
            return hit
        with part_file(objects) as part:
            s3.download(loc, part, info)
            checksum = _checked(verify(part))
            final = objects / f"{checksum}{_suffix(loc.key)}"
            os.replace(part, final)
        record = {"uri": loc.uri, "size": info["size"], "etag": info["etag"], "checksum": checksum}
        index.parent.mkdir(parents=True, exist_ok=True)
        with atomic_local_path(index) as tmp:
            tmp.write_text(json.dumps(record))
    return Fetched(final, checksum, cache_hit=False)
