"""Local files: atomic replacement (temp file, fsync, rename) and the regular-file check."""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from foxhunt.storage.locations import MissingObject, StorageAccessError


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


def regular_file(path: Path, uri: str) -> os.stat_result:
    """The stat of a readable regular file; refuses at once a FIFO, a folder or a device (no hang)."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise MissingObject(f"{uri}: no such file") from exc
    except OSError as exc:
        raise StorageAccessError(f"{uri}: cannot stat: {exc.strerror}") from exc
    if stat.S_ISDIR(info.st_mode):
        raise StorageAccessError(f"{uri}: is a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a socket or device"
        raise StorageAccessError(f"{uri}: is {kind}, not a regular file")
    if not os.access(path, os.R_OK):
        if not os.path.lexists(path):  # removed since the stat (e.g. a released lock): gone, not forbidden
            raise MissingObject(f"{uri}: no such file")
        raise StorageAccessError(f"{uri}: not readable (permission denied)")
    return info
