"""Checks before work: inputs that exist and can be read, outputs that can be written and overwrite no input.

Each refusal is one line naming the URI, of the bad-input kind (exit 2), raised before a run reads a
bar or trains a fold. The writability probe writes and deletes one small file or object and creates
nothing else, so a refused run leaves nothing behind.
"""

from __future__ import annotations

import os
import posixpath
import tempfile
import uuid
from collections.abc import Iterable
from pathlib import Path

from foxhunt.errors import UsageError
from foxhunt.storage import s3
from foxhunt.storage.local import regular_file
from foxhunt.storage.locations import (
    S3_PREFIX,
    Location,
    StorageAccessError,
    locate,
    require_object,
)


def check_input(uri: str | os.PathLike) -> None:
    """Refuse (exit 2, one line) an input that is misspelt, missing, unreadable or not a regular file."""
    loc = require_object(uri)
    if not loc.is_s3:
        regular_file(loc.path, loc.uri)
        return
    with s3.naming_missing_bucket(loc):
        s3.head(loc)


def _overwrites(out: Location, given: Location) -> bool:
    """True when writing `out` would replace the input `given` or write inside it."""
    if out.is_s3 != given.is_s3:
        return False
    if out.is_s3:
        inside = out.key.startswith(given.key.rstrip("/") + "/")
        return out.bucket == given.bucket and (out.key == given.key or inside)
    out_path, in_path = os.path.realpath(out.uri), os.path.realpath(given.uri)
    return out_path == in_path or out_path.startswith(in_path + os.sep)


def check_output(
    uri: str | os.PathLike, inputs: Iterable[str | os.PathLike] = (), *, folder: bool = False
) -> None:
    """Refuse (exit 2, one line) an output that is misspelt, would overwrite an input, or cannot be written.

    `folder`: the output is a folder of files (a run's --out) rather than one file. The writability
    probe writes and deletes one small file or object, and creates nothing else.
    """
    loc = locate(uri)
    for given in inputs:
        if _overwrites(loc, locate(given)):
            raise UsageError(f"{loc.uri}: the output would overwrite the input {os.fspath(given)}")
    if not folder:
        loc = require_object(uri)
    if loc.is_s3:
        s3.head_bucket(loc)
        # Inside the folder, or beside the file: where the run's writes will go.
        parent = loc.key.rstrip("/") if folder else posixpath.dirname(loc.key)
        key = posixpath.join(parent, f".foxhunt-probe-{uuid.uuid4().hex[:12]}")
        probe = Location(f"{S3_PREFIX}{loc.bucket}/{key}", loc.bucket, key)
        s3.put_bytes(probe, b"", None)
        s3.delete(probe)
        return
    _check_local_output(loc, folder)


def _check_local_output(loc: Location, folder: bool) -> None:
    path = Path(os.path.abspath(loc.uri))
    if path.exists():
        if folder and not path.is_dir():
            raise StorageAccessError(f"{loc.uri}: exists and is not a folder")
        if not folder and path.is_dir():
            raise StorageAccessError(f"{loc.uri}: is a folder, expected a file name")
        if not folder and not path.is_file():
            raise StorageAccessError(f"{loc.uri}: exists and is not a regular file")
    # Probe in the nearest folder that exists, so a refused run leaves nothing behind; a file output's
    # writes go beside it (a file already there is replaced by a rename in its folder).
    candidates = (path, *path.parents) if folder else path.parents
    existing = next(p for p in candidates if p.exists())
    if not existing.is_dir():
        raise StorageAccessError(f"{loc.uri}: {existing} is a file, not a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".foxhunt-probe-", dir=existing)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise StorageAccessError(f"{loc.uri}: cannot write in {existing} ({exc.strerror})") from exc
