"""Parsing URIs: a local path or `s3://bucket/key`, and the errors of the storage layer.

A misspelt URI (`S3://b/k`, `s3:/b/k`, `s3:b`, `s3://` without a bucket, a first path component ending
in ':') is refused here, where it would otherwise become a local folder named `s3:` and a run's
results would vanish with the pod.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from foxhunt.errors import BadInput, RunFailure

S3_PREFIX = "s3://"
_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]")


class StorageError(RunFailure, OSError):
    """A storage operation that failed after its retries; the message names the URI (exit 1)."""


class BadURI(BadInput):
    """A misspelt URI, or one naming no usable location (exit 2)."""


class StorageAccessError(BadInput, OSError):
    """Storage that cannot be used as asked: no credentials, access denied, not a regular file (exit 2)."""


class MissingObject(BadInput, FileNotFoundError):
    """No file, object or bucket at the URI (exit 2)."""


@dataclass(frozen=True)
class Location:
    """A parsed URI: an S3 bucket and key, or a local path when `bucket` is None."""

    uri: str
    bucket: str | None = None
    key: str = ""

    @property
    def is_s3(self) -> bool:
        return self.bucket is not None

    @property
    def path(self) -> Path:
        return Path(self.uri)


def locate(uri: str | os.PathLike) -> Location:
    """Parse a local path or an s3:// URI; BadURI for anything that looks like a misspelt URI."""
    text = os.fspath(uri)
    if not isinstance(text, str) or not text.strip():
        raise BadURI(f"{text!r}: an empty path or URI")
    if text.startswith(S3_PREFIX):
        bucket, _, key = text[len(S3_PREFIX) :].partition("/")
        if not bucket:
            raise BadURI(f"{text}: no bucket after s3:// (expected s3://BUCKET/KEY)")
        if not _BUCKET_NAME.fullmatch(bucket):
            raise BadURI(f"{text}: '{bucket}' is not an S3 bucket name (3-63 of a-z 0-9 . -)")
        if key.startswith("/") or "//" in key:
            raise BadURI(f"{text}: an empty path segment in the key")
        return Location(text, bucket, key)
    first = text.split("/", 1)[0].strip()
    if first.lower().startswith("s3:"):
        raise BadURI(f"{text}: misspelt S3 URI (expected s3://BUCKET/KEY: lowercase s3, two slashes)")
    if first.endswith(":"):
        raise BadURI(
            f"{text}: '{first}' looks like a URI scheme, and only local paths and s3://BUCKET/KEY are "
            f"supported (write ./{text} for a local path of that name)"
        )
    return Location(text)


def require_object(uri: str | os.PathLike) -> Location:
    loc = locate(uri)
    if loc.is_s3 and (not loc.key or loc.key.endswith("/")):
        raise BadURI(f"{loc.uri}: names a bucket or folder, not an object (expected s3://BUCKET/KEY)")
    return loc


def is_s3(uri: str | os.PathLike) -> bool:
    """True for `s3://` URIs, False for local paths; BadURI for a misspelt URI."""
    return locate(uri).is_s3


def split_s3(uri: str) -> tuple[str, str]:
    """`s3://bucket/key` → (bucket, key); BadURI (a ValueError) when either part is missing."""
    loc = locate(uri)
    if not loc.is_s3 or not loc.key or not loc.bucket:
        raise BadURI(f"{uri}: not an s3://bucket/key URI")
    return loc.bucket, loc.key


def join(uri: str | os.PathLike, *parts: str) -> str:
    """Append path components to a local path or an s3:// URI."""
    loc = locate(uri)
    if loc.is_s3:
        return "/".join([loc.uri.rstrip("/")] + [p.strip("/") for p in parts if p.strip("/")])
    return str(Path(loc.uri, *parts))


def default_cache_dir() -> Path:
    """Where downloaded objects are kept: `FOXHUNT_CACHE_DIR`, else ~/.cache/foxhunt."""
    configured = os.environ.get("FOXHUNT_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "foxhunt"
