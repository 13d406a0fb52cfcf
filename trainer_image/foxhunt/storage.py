"""Where bytes live: local paths and `s3://bucket/key` URIs, read and written atomically.

The S3 endpoint and credentials come from boto3's own environment (`AWS_ENDPOINT_URL`,
`AWS_ENDPOINT_URL_S3`, the standard credential chain). boto3 is imported only when an
s3:// URI is used: the GPU image ships without it and local paths must work there.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

S3_PREFIX = "s3://"
MULTIPART_THRESHOLD = 64 * 1024 * 1024
MULTIPART_CHUNKSIZE = 64 * 1024 * 1024
DOWNLOAD_ATTEMPTS = 5
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
)
_clients: dict[tuple, object] = {}


class StorageError(OSError):
    """A storage operation failed; the message names the URI."""


def is_s3(uri: str | os.PathLike) -> bool:
    """True for `s3://` URIs, False for local paths."""
    return str(uri).startswith(S3_PREFIX)


def split_s3(uri: str) -> tuple[str, str]:
    """`s3://bucket/key` → (bucket, key); ValueError when either part is missing."""
    bucket, _, key = str(uri)[len(S3_PREFIX) :].partition("/")
    if not is_s3(uri) or not bucket or not key:
        raise ValueError(f"{uri}: not an s3://bucket/key URI")
    return bucket, key


def join(uri: str | os.PathLike, *parts: str) -> str:
    """Append path components to a local path or an s3:// URI."""
    if is_s3(uri):
        pieces = [str(uri).rstrip("/")] + [p.strip("/") for p in parts if p.strip("/")]
        return "/".join(pieces)
    return str(Path(uri, *parts))


def default_cache_dir() -> Path:
    """Where downloaded objects are kept: `FOXHUNT_CACHE_DIR`, else ~/.cache/foxhunt."""
    configured = os.environ.get("FOXHUNT_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "foxhunt"


def s3_client():
    """A boto3 S3 client configured from the environment, shared while the environment is unchanged."""
    env_key = tuple(os.environ.get(name) for name in _CLIENT_ENV)
    client = _clients.get(env_key)
    if client is None:
        import boto3
        from botocore.config import Config

        # boto3 reads the endpoint itself; we only need to know whether there is one, because
        # self-hosted servers (SeaweedFS, MinIO, moto) want path-style addressing.
        custom_endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        config = Config(
            retries={"total_max_attempts": 5, "mode": "standard"},
            connect_timeout=5,
            read_timeout=60,
            s3={"addressing_style": "path"} if custom_endpoint else {},
        )
        client = boto3.session.Session().client("s3", config=config)
        _clients.clear()
        _clients[env_key] = client
    return client


def _transfer_config():
    from boto3.s3.transfer import TransferConfig

    return TransferConfig(
        multipart_threshold=MULTIPART_THRESHOLD,
        multipart_chunksize=MULTIPART_CHUNKSIZE,
        num_download_attempts=DOWNLOAD_ATTEMPTS,
    )


def _is_not_found(exc: Exception) -> bool:
    response = getattr(exc, "response", None) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    return code in ("404", "NoSuchKey", "NotFound", "NoSuchBucket")


@contextmanager
def _s3_errors(uri: str) -> Iterator[None]:
    """Turn botocore's errors into FileNotFoundError / StorageError that name the URI."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except ClientError as exc:
        if _is_not_found(exc):
            raise FileNotFoundError(f"{uri}: no such object") from exc
        raise StorageError(f"{uri}: {exc}") from exc
    except BotoCoreError as exc:
        raise StorageError(f"{uri}: {exc}") from exc


def _temp_sibling(path: Path) -> Path:
    # Same directory, so the final os.replace is a rename within one filesystem; the dot
    # prefix and unique suffix keep readers and concurrent writers off it.
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # some filesystems do not let a directory be opened; the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_local_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success it is fsynced and renamed onto `path`.

    On any exception the temporary file is removed and `path` is left as it was.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_sibling(target)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def exists(uri: str | os.PathLike) -> bool:
    """True if a file or object is at `uri`."""
    if not is_s3(uri):
        return Path(uri).exists()
    try:
        head(str(uri))
    except FileNotFoundError:
        return False
    return True


def head(uri: str | os.PathLike) -> dict:
    """Size, ETag/mtime and user metadata of the object at `uri`; FileNotFoundError if absent."""
    if not is_s3(uri):
        try:
            stat = Path(uri).stat()
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{uri}: no such file") from exc
        return {"size": stat.st_size, "mtime": stat.st_mtime, "etag": None, "metadata": {}}
    bucket, key = split_s3(str(uri))
    with _s3_errors(str(uri)):
        response = s3_client().head_object(Bucket=bucket, Key=key)
    return {
        "size": response["ContentLength"],
        "mtime": response["LastModified"].timestamp(),
        "etag": response.get("ETag", "").strip('"') or None,
        "metadata": dict(response.get("Metadata", {})),
    }


def read_bytes(uri: str | os.PathLike) -> bytes:
    """The whole content at `uri` (for small objects; large ones go through fetch)."""
    if not is_s3(uri):
        try:
            return Path(uri).read_bytes()
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{uri}: no such file") from exc
    bucket, key = split_s3(str(uri))
    with _s3_errors(str(uri)):
        return s3_client().get_object(Bucket=bucket, Key=key)["Body"].read()


def write_bytes(uri: str | os.PathLike, data: bytes, metadata: dict[str, str] | None = None) -> None:
    """Write `data` to `uri` atomically (local: temp + rename; S3: one PUT).

    `metadata` becomes the S3 object's user metadata; local files have none.
    """
    if not is_s3(uri):
        with atomic_local_path(uri) as tmp:
            tmp.write_bytes(data)
        return
    bucket, key = split_s3(str(uri))
    with _s3_errors(str(uri)):
        s3_client().put_object(Bucket=bucket, Key=key, Body=data, Metadata=dict(metadata or {}))


def upload_file(
    path: str | os.PathLike, uri: str | os.PathLike, metadata: dict[str, str] | None = None
) -> None:
    """Copy a local file to `uri` so that readers see either nothing or the whole file.

    S3 uses one managed transfer: a multipart upload becomes visible only when completed.
    """
    if not is_s3(uri):
        with atomic_local_path(uri) as tmp:
            shutil.copyfile(path, tmp)
        return
    bucket, key = split_s3(str(uri))
    extra = {"Metadata": dict(metadata)} if metadata else None
    with _s3_errors(str(uri)):
        s3_client().upload_file(str(path), bucket, key, ExtraArgs=extra, Config=_transfer_config())


def download_file(uri: str | os.PathLike, path: str | os.PathLike) -> Path:
    """Copy the object at `uri` to local `path` atomically (retried on cut streams); returns the path."""
    target = Path(path)
    if not is_s3(uri):
        if not Path(uri).exists():
            raise FileNotFoundError(f"{uri}: no such file")
        with atomic_local_path(target) as tmp:
            shutil.copyfile(uri, tmp)
        return target
    bucket, key = split_s3(str(uri))
    with atomic_local_path(target) as tmp, _s3_errors(str(uri)):
        s3_client().download_file(bucket, key, str(tmp), Config=_transfer_config())
    return target


def fetch(uri: str | os.PathLike, cache_dir: str | os.PathLike | None = None) -> Path:
    """A local path holding the content at `uri`.

    Local URIs are returned as they are. S3 objects are downloaded once into the cache
    directory, keyed by bucket, key and ETag, so a changed object is fetched again; the
    file name keeps the key's suffix, which readers use to tell the format.
    """
    if not is_s3(uri):
        path = Path(uri)
        if not path.exists():
            raise FileNotFoundError(f"{uri}: no such file")
        return path
    bucket, key = split_s3(str(uri))
    etag = head(uri)["etag"] or "no-etag"
    cached = Path(cache_dir or default_cache_dir()) / "s3" / bucket / key / etag / Path(key).name
    if not cached.exists():
        download_file(uri, cached)
    return cached


# ---- H2: listing, deleting and exclusive creation (run outputs, --overwrite, the --out lock) ----------
def list_prefix(uri: str | os.PathLike) -> list[str]:
    """Names (relative, with "/") of every file or object under the folder or prefix `uri`, sorted."""
    if not is_s3(uri):
        root = Path(uri)
        if not root.is_dir():
            return []
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    bucket, _, key = str(uri)[len(S3_PREFIX) :].partition("/")
    prefix = key.rstrip("/") + "/" if key.strip("/") else ""
    names: list[str] = []
    with _s3_errors(str(uri)):
        for page in s3_client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            names.extend(obj["Key"][len(prefix) :] for obj in page.get("Contents", []))
    return sorted(names)


def delete(uri: str | os.PathLike) -> None:
    """Remove the file or object at `uri`; one that is already gone is fine."""
    if not is_s3(uri):
        Path(uri).unlink(missing_ok=True)
        return
    bucket, key = split_s3(str(uri))
    with _s3_errors(str(uri)):
        s3_client().delete_object(Bucket=bucket, Key=key)


def create_exclusive(uri: str | os.PathLike, data: bytes) -> bool:
    """Create `uri` holding `data` only if nothing is there; True if this call created it.

    Local: O_CREAT | O_EXCL. S3: a PUT with If-None-Match: * (412 when the key exists), then a read
    back, because a server that ignores the condition overwrites instead: the read-back then shows
    whether this writer's bytes are the ones that stayed.
    """
    if not is_s3(uri):
        path = Path(uri)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        return True
    from botocore.exceptions import ClientError

    bucket, key = split_s3(str(uri))
    with _s3_errors(str(uri)):
        try:
            s3_client().put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code", "")) in ("PreconditionFailed", "412"):
                return False
            raise
    try:
        return read_bytes(uri) == data
    except FileNotFoundError:
        return False


def delete_prefix(uri: str | os.PathLike) -> None:
    """Remove the folder or prefix `uri` and everything under it; one that is already gone is fine."""
    if not is_s3(uri):
        if Path(uri).is_dir():
            shutil.rmtree(uri)
        else:
            Path(uri).unlink(missing_ok=True)
        return
    for name in list_prefix(uri):
        delete(join(uri, name))
