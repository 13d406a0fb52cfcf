"""S3 through boto3: one client per environment, a retry budget, errors that name the URI.

Every operation runs inside `attempt`, one retry loop with a budget that outlasts a server restart:
transient failures (connection refused or reset, a stream cut or stalled, 5xx, throttling) are tried
again after 0.25 s, 0.5 s, 1 s, ... up to 8 s between attempts, so the default 10 attempts span about
40 s. botocore itself does not retry (one budget, not two multiplied), and a socket that delivers
nothing for the read timeout counts as a stalled stream. Settings, from the environment:

- `FOXHUNT_S3_ATTEMPTS` (default 10): attempts per operation, the first included;
- `FOXHUNT_S3_READ_TIMEOUT` (default 10): seconds without a byte before a connection counts as stalled;
- `FOXHUNT_S3_CONNECT_TIMEOUT` (default 5): seconds to open a connection.

Permanent failures are not retried: no credentials, access denied, no such bucket or key.
boto3 is imported on first use: the GPU image may ship without it and local paths work there.
"""

from __future__ import annotations

import hashlib
import os
import random
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from foxhunt.errors import UsageError
from foxhunt.storage.locations import Location, MissingObject, StorageAccessError, StorageError

T = TypeVar("T")

MULTIPART_THRESHOLD = 64 * 1024 * 1024
MULTIPART_CHUNKSIZE = 64 * 1024 * 1024
# s3transfer resumes a cut stream of one part this many times before the whole attempt fails.
STREAM_RESUMES = 3
BACKOFF_FIRST_SECONDS = 0.25
BACKOFF_MAX_SECONDS = 8.0
SETTINGS = {"FOXHUNT_S3_ATTEMPTS": 10, "FOXHUNT_S3_READ_TIMEOUT": 10.0, "FOXHUNT_S3_CONNECT_TIMEOUT": 5.0}
# The client depends on these variables; a change (another endpoint, other keys) needs a new client.
_CLIENT_ENV = (
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    *SETTINGS,
)
_clients: dict[tuple, object] = {}
_NOT_FOUND = ("404", "NoSuchKey", "NotFound")
_DENIED = ("403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AllAccessDisabled")
_TRANSIENT_CODES = (
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "RequestTimeout",
    "InternalError",
    "ServiceUnavailable",
)


class TransientError(Exception):
    """A failure worth another attempt that botocore does not raise itself (a short or corrupt download)."""


def setting(name: str) -> float:
    """A retry or timeout setting from the environment; a bad value is a usage error naming it."""
    default = SETTINGS[name]
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if isinstance(default, int) else float(raw)
    except ValueError:
        value = 0
    if value <= 0:
        kind = "a whole number" if isinstance(default, int) else "a number of seconds"
        raise UsageError(f"{name}={raw!r}: expected {kind} above 0 (default {default})")
    return value


def client():
    """A boto3 S3 client configured from the environment, shared while the environment is unchanged."""
    env_key = tuple(os.environ.get(name) for name in _CLIENT_ENV)
    found = _clients.get(env_key)
    if found is not None:
        return found
    import boto3
    from botocore.config import Config

    # Self-hosted servers (SeaweedFS, MinIO, moto) want path-style addressing.
    custom_endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    config = Config(
        retries={"total_max_attempts": 1, "mode": "standard"},  # `attempt` is the one retry budget
        connect_timeout=setting("FOXHUNT_S3_CONNECT_TIMEOUT"),
        read_timeout=setting("FOXHUNT_S3_READ_TIMEOUT"),
        s3={"addressing_style": "path"} if custom_endpoint else {},
    )
    try:
        made = boto3.session.Session().client("s3", config=config)
    except ValueError as exc:  # e.g. an endpoint URL that is not a URL
        raise UsageError(f"S3 settings: {exc}") from exc
    _clients.clear()
    _clients[env_key] = made
    return made


def _code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def _status(exc: Exception) -> int:
    response = getattr(exc, "response", None) or {}
    return int(response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _is_transient(exc: Exception) -> bool:
    from boto3.exceptions import RetriesExceededError as DownloadRetriesExceeded
    from botocore.exceptions import (
        ClientError,
        ConnectionError,
        FlexibleChecksumError,
        HTTPClientError,
        IncompleteReadError,
        ResponseStreamingError,
    )
    from s3transfer.exceptions import RetriesExceededError

    if isinstance(exc, ClientError):
        return _status(exc) >= 500 or _code(exc) in _TRANSIENT_CODES
    transient = (
        ConnectionError,
        FlexibleChecksumError,
        HTTPClientError,
        IncompleteReadError,
        ResponseStreamingError,
        RetriesExceededError,
        DownloadRetriesExceeded,
        TransientError,
        socket.timeout,
        ConnectionResetError,
        BrokenPipeError,
    )
    return isinstance(exc, transient)


def _permanent(uri: str, exc: Exception) -> Exception | None:
    """The foxhunt error for a failure that another attempt cannot fix; None when it is not one."""
    from botocore.exceptions import (
        ClientError,
        NoCredentialsError,
        ParamValidationError,
        PartialCredentialsError,
    )

    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return StorageAccessError(
            f"{uri}: no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"
        )
    if isinstance(exc, ParamValidationError):
        return StorageAccessError(f"{uri}: {_one_line(exc)}")
    if isinstance(exc, ClientError) and not _is_transient(exc):
        code = _code(exc)
        if code == "NoSuchBucket":
            return MissingObject(f"{uri}: no such bucket")
        if code in _NOT_FOUND:
            return MissingObject(f"{uri}: no such object")
        if code in _DENIED:
            return StorageAccessError(f"{uri}: access denied ({code})")
        return StorageError(f"{uri}: {_one_line(exc)}")
    return None


def backoff_seconds(failed_attempts: int) -> float:
    """The wait after the n-th failed attempt: doubling from 0.25 s up to 8 s, with ±25% jitter."""
    base = min(BACKOFF_FIRST_SECONDS * 2 ** (failed_attempts - 1), BACKOFF_MAX_SECONDS)
    return base * random.uniform(0.75, 1.25)


def _unwrapped(exc: Exception) -> Exception:
    """The botocore error inside boto3's S3UploadFailedError, which only rewords it."""
    inner = exc.__context__
    if type(exc).__name__ == "S3UploadFailedError" and isinstance(inner, Exception):
        return inner
    return exc


def attempt(uri: str, what: str, operation: Callable[[], T]) -> T:
    """Run `operation`, retrying transient failures within the budget; every final error names `uri`."""
    attempts = int(setting("FOXHUNT_S3_ATTEMPTS"))
    start = time.monotonic()
    for n in range(1, attempts + 1):
        try:
            return operation()
        except Exception as raised:
            exc = _unwrapped(raised)
            if not _is_transient(exc):
                permanent = _permanent(uri, exc)
                if permanent is None:
                    raise
                raise permanent from exc
            if n == attempts:
                raise StorageError(
                    f"{uri}: {what} failed after {attempts} attempts in {time.monotonic() - start:.0f}s "
                    f"({_one_line(exc)}); FOXHUNT_S3_ATTEMPTS sets the attempts"
                ) from exc
            time.sleep(backoff_seconds(n))
    raise AssertionError("unreachable")


def _transfer_config():
    from boto3.s3.transfer import TransferConfig

    return TransferConfig(
        multipart_threshold=MULTIPART_THRESHOLD,
        multipart_chunksize=MULTIPART_CHUNKSIZE,
        num_download_attempts=STREAM_RESUMES,
    )


def head(loc: Location) -> dict:
    """Size, ETag, mtime and user metadata of an object."""
    response = attempt(loc.uri, "HEAD", lambda: client().head_object(Bucket=loc.bucket, Key=loc.key))
    return {
        "size": response["ContentLength"],
        "mtime": response["LastModified"].timestamp(),
        "etag": response.get("ETag", "").strip('"') or None,
        "metadata": dict(response.get("Metadata", {})),
        "encryption": response.get("ServerSideEncryption"),
    }


def head_bucket(loc: Location) -> None:
    """Raise MissingObject or StorageAccessError unless the bucket exists and is ours to use."""

    def probe() -> None:
        try:
            client().head_bucket(Bucket=loc.bucket)
        except Exception as exc:
            if _code(exc) in _NOT_FOUND:  # HEAD has no body, so no NoSuchBucket code to tell it apart
                raise MissingObject(f"{loc.uri}: no such bucket '{loc.bucket}'") from exc
            raise

    attempt(loc.uri, "HEAD bucket", probe)


def get_bytes(loc: Location) -> bytes:
    """The whole object; a body shorter than its Content-Length is another attempt."""

    def get() -> bytes:
        response = client().get_object(Bucket=loc.bucket, Key=loc.key)
        data = response["Body"].read()
        if len(data) != response["ContentLength"]:
            raise TransientError(f"got {len(data)} of {response['ContentLength']} bytes")
        return data

    return attempt(loc.uri, "GET", get)


@contextmanager
def naming_missing_bucket(loc: Location) -> Iterator[None]:
    """A refusal says "no such bucket" when that is why: a HEAD of a key cannot tell, and SeaweedFS
    answers a PUT into a missing bucket with 403."""
    try:
        yield
    except (StorageAccessError, MissingObject):
        head_bucket(loc)
        raise


def put_bytes(loc: Location, data: bytes, metadata: dict[str, str] | None, if_absent: bool = False) -> bool:
    """One PUT (visible whole or not at all); with `if_absent`, False when the key already existed."""
    extra = {"IfNoneMatch": "*"} if if_absent else {}

    def put() -> bool:
        try:
            client().put_object(
                Bucket=loc.bucket, Key=loc.key, Body=data, Metadata=dict(metadata or {}), **extra
            )
        except Exception as exc:
            if if_absent and (_code(exc) in ("PreconditionFailed", "412") or _status(exc) == 412):
                return False
            raise
        return True

    with naming_missing_bucket(loc):
        return attempt(loc.uri, "PUT", put)


def upload(loc: Location, path: Path, metadata: dict[str, str] | None) -> None:
    """A managed upload: a multipart upload is completed only on success and aborted on failure."""
    extra = {"Metadata": dict(metadata)} if metadata else None
    with naming_missing_bucket(loc):
        attempt(
            loc.uri,
            "upload",
            lambda: client().upload_file(
                str(path), loc.bucket, loc.key, ExtraArgs=extra, Config=_transfer_config()
            ),
        )


def md5_of_etag(info: dict) -> str | None:
    """The MD5 of the content when the ETag is one (a single-part, not KMS-encrypted object), else None."""
    etag = info.get("etag") or ""
    plain = len(etag) == 32 and all(c in "0123456789abcdef" for c in etag.lower())
    return etag.lower() if plain and info.get("encryption") != "aws:kms" else None


def _file_md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        while chunk := fh.read(8 * 1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def download(loc: Location, path: Path, info: dict) -> None:
    """A managed download into `path`, checked against the HEAD `info` (size; MD5 when the ETag is one)."""
    expected_md5 = md5_of_etag(info)

    def get() -> None:
        client().download_file(loc.bucket, loc.key, str(path), Config=_transfer_config())
        size = path.stat().st_size
        if size != info["size"]:
            raise TransientError(f"downloaded {size} bytes, the object has {info['size']}")
        if expected_md5 is not None and _file_md5(path) != expected_md5:
            raise TransientError("downloaded bytes do not match the object's ETag (MD5)")

    attempt(loc.uri, "download", get)


def delete(loc: Location) -> None:
    """Delete one object; one already gone is fine (S3 says so itself)."""
    attempt(loc.uri, "DELETE", lambda: client().delete_object(Bucket=loc.bucket, Key=loc.key))


def list_keys(loc: Location) -> list[str]:
    """Every key under the location's key taken as a folder, relative to it."""
    prefix = loc.key.rstrip("/") + "/" if loc.key.strip("/") else ""

    def listing() -> list[str]:
        names: list[str] = []
        for page in client().get_paginator("list_objects_v2").paginate(Bucket=loc.bucket, Prefix=prefix):
            names.extend(obj["Key"][len(prefix) :] for obj in page.get("Contents", []))
        return names

    return attempt(loc.uri, "LIST", listing)
