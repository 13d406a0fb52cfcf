"""Where bytes live: local paths and `s3://bucket/key` URIs. No other module looks at a URI's scheme.

- `locate` parses a URI and refuses misspellings that would become a local folder named `s3:`;
- `check_input` / `check_output` find before any work what can be known: a missing file, object or
  bucket, a FIFO, an output that cannot be written or that would overwrite an input;
- `write_atomic` publishes whole or not at all (local: temp file, fsync, rename; S3: one PUT, or a
  managed multipart upload that is aborted on failure); `staged_write` gives a writer a local path;
- `fetch_cached` gives a local copy of an object, verified by its reader (`storage.cache`);
- `writes_in_background` lets a fold's files (`write_bytes_soon`) be written on worker threads, all finished
  when the block ends (`storage.background`).

The S3 endpoint and credentials come from boto3's own environment (`AWS_ENDPOINT_URL`, the standard
credential chain); retries and timeouts are `storage.s3`'s (`FOXHUNT_S3_ATTEMPTS`, ...). boto3 is
imported on first use of an s3:// URI: local paths work without it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from foxhunt.storage import background, cache, s3
from foxhunt.storage.background import writes_in_background
from foxhunt.storage.cache import Fetched
from foxhunt.storage.checks import check_input, check_output
from foxhunt.storage.local import atomic_local_path, regular_file
from foxhunt.storage.locations import (
    S3_PREFIX,
    BadURI,
    Location,
    MissingObject,
    StorageAccessError,
    StorageError,
    default_cache_dir,
    is_s3,
    join,
    locate,
    require_object,
    split_s3,
)

__all__ = [
    "S3_PREFIX",
    "BadURI",
    "Fetched",
    "Location",
    "MissingObject",
    "StorageAccessError",
    "StorageError",
    "atomic_local_path",
    "check_input",
    "check_output",
    "create_exclusive",
    "default_cache_dir",
    "delete",
    "delete_prefix",
    "download_file",
    "exists",
    "fetch",
    "fetch_cached",
    "head",
    "is_s3",
    "join",
    "list_prefix",
    "local_path",
    "locate",
    "read_bytes",
    "s3_client",
    "split_s3",
    "staged_write",
    "upload_file",
    "write_atomic",
    "write_bytes",
    "write_bytes_soon",
    "writes_in_background",
]


def s3_client():
    """The shared boto3 S3 client (see `storage.s3.client`)."""
    return s3.client()


def exists(uri: str | os.PathLike) -> bool:
    """True if a file or object is at `uri`."""
    loc = locate(uri)
    if not loc.is_s3:
        return loc.path.exists()
    try:
        head(uri)
    except FileNotFoundError:
        return False
    return True


def head(uri: str | os.PathLike) -> dict:
    """Size, ETag/mtime and user metadata of the object at `uri`; MissingObject if absent."""
    loc = require_object(uri)
    if loc.is_s3:
        return s3.head(loc)
    info = regular_file(loc.path, loc.uri)
    return {"size": info.st_size, "mtime": info.st_mtime, "etag": None, "metadata": {}, "encryption": None}


def local_path(uri: str | os.PathLike) -> Path | None:
    """The local file that `uri` names, or None for an object in S3 (which `fetch_cached` brings here)."""
    loc = locate(uri)
    return None if loc.is_s3 else loc.path


def read_bytes(uri: str | os.PathLike) -> bytes:
    """The whole content at `uri` (for small objects; large ones go through fetch_cached)."""
    loc = require_object(uri)
    if loc.is_s3:
        return s3.get_bytes(loc)
    regular_file(loc.path, loc.uri)
    return loc.path.read_bytes()


def write_atomic(
    uri: str | os.PathLike, data: bytes | os.PathLike, metadata: dict[str, str] | None = None
) -> None:
    """Publish `data` (bytes, or the content of a local file) at `uri`, whole or not at all.

    Local: temp file, fsync, rename. S3: one PUT for bytes; a managed upload for a file, whose
    multipart upload becomes visible only when completed and is aborted on failure. `metadata`
    becomes the object's user metadata (local files have none).
    """
    loc = require_object(uri)
    if loc.is_s3:
        if isinstance(data, (bytes, bytearray, memoryview)):
            s3.put_bytes(loc, bytes(data), metadata)
        else:
            s3.upload(loc, Path(data), metadata)
        return
    with atomic_local_path(loc.path) as tmp:
        if isinstance(data, (bytes, bytearray, memoryview)):
            tmp.write_bytes(data)
        else:
            shutil.copyfile(data, tmp)


def write_bytes(uri: str | os.PathLike, data: bytes, metadata: dict[str, str] | None = None) -> None:
    """`write_atomic` of bytes."""
    write_atomic(uri, data, metadata)


def write_bytes_soon(uri: str | os.PathLike, data: bytes) -> None:
    """`write_bytes`: on a worker thread inside `writes_in_background` (done by the block's end), else now."""
    if not background.submit(write_atomic, uri, data):
        write_atomic(uri, data)


def upload_file(
    path: str | os.PathLike, uri: str | os.PathLike, metadata: dict[str, str] | None = None
) -> None:
    """`write_atomic` of a local file's content."""
    write_atomic(uri, Path(path), metadata)


@contextmanager
def staged_write(uri: str | os.PathLike, metadata: dict[str, str] | None = None) -> Iterator[Path]:
    """Yield a local path to write; on success its content is published at `uri` by `write_atomic`.

    Local targets are renamed into place; S3 targets are staged in the cache directory under a name
    that the next run removes if this process dies before cleaning up.
    """
    loc = require_object(uri)
    if not loc.is_s3:
        with atomic_local_path(loc.path) as tmp:
            yield tmp
        return
    with cache.part_file(default_cache_dir() / "staging") as part:
        yield part
        write_atomic(loc.uri, part, metadata)


def download_file(uri: str | os.PathLike, path: str | os.PathLike) -> Path:
    """Copy the file or object at `uri` to local `path` atomically, checked against its size; returns the path."""
    loc = require_object(uri)
    target = Path(path)
    with atomic_local_path(target) as tmp:
        if loc.is_s3:
            s3.download(loc, tmp, s3.head(loc))
        else:
            regular_file(loc.path, loc.uri)
            shutil.copyfile(loc.path, tmp)
    return target


def fetch_cached(
    uri: str | os.PathLike,
    verify: Callable[[Path], str] | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> Fetched:
    """A local copy of `uri` that `verify` (the reader's own check, returning the content checksum) accepted.

    See `storage.cache`: local files are verified in place; S3 objects are downloaded once
    into the cache directory, keyed only by the checksum `verify` computed, and trusted again only
    while the object's size and ETag are unchanged and the copy still verifies.
    """
    root = Path(cache_dir or default_cache_dir())
    return cache.fetch(require_object(uri), verify or cache.sha256_file, root)


def fetch(uri: str | os.PathLike, cache_dir: str | os.PathLike | None = None) -> Path:
    """The local path of `fetch_cached(uri)`, with the content's SHA-256 as its check."""
    return fetch_cached(uri, cache_dir=cache_dir).path


# ---- listing, deleting and exclusive creation (run outputs, --overwrite, the --out lock) --------
def list_prefix(uri: str | os.PathLike) -> list[str]:
    """Names (relative, with "/") of every file or object under the folder or prefix `uri`, sorted."""
    loc = locate(uri)
    if loc.is_s3:
        return sorted(s3.list_keys(loc))
    if not loc.path.is_dir():
        return []
    return sorted(p.relative_to(loc.path).as_posix() for p in loc.path.rglob("*") if p.is_file())


def delete(uri: str | os.PathLike) -> None:
    """Remove the file or object at `uri`; one that is already gone is fine."""
    loc = require_object(uri)
    if loc.is_s3:
        s3.delete(loc)
    else:
        loc.path.unlink(missing_ok=True)


def create_exclusive(uri: str | os.PathLike, data: bytes) -> bool:
    """Create `uri` holding `data` only if nothing is there; True if this call created it.

    Local: O_CREAT | O_EXCL. S3: a PUT with If-None-Match: * (412 when the key exists), then a read
    back: a server that ignores the condition overwrites instead, and a retried PUT whose first try
    landed gets 412 for its own object; the read-back tells whose bytes stayed.
    """
    loc = require_object(uri)
    if not loc.is_s3:
        loc.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(loc.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        return True
    s3.put_bytes(loc, data, None, if_absent=True)
    try:
        return read_bytes(uri) == data
    except FileNotFoundError:
        return False


def delete_prefix(uri: str | os.PathLike) -> None:
    """Remove the folder or prefix `uri` and everything under it; one that is already gone is fine."""
    loc = locate(uri)
    if not loc.is_s3:
        if loc.path.is_dir():
            shutil.rmtree(loc.path)
        else:
            loc.path.unlink(missing_ok=True)
        return
    for name in list_prefix(uri):
        delete(join(uri, name))
