"""A file out of the page cache, checked: eviction for honest cold-read timings.

`evict(path)` flushes the file (fsync) and asks the kernel to drop its pages
(posix_fadvise DONTNEED); where pages stay (a mapping still open, tmpfs), it falls back to
dropping the whole page cache when this process may (root: /proc/sys/vm/drop_caches). Residency
is read with mincore(2) on a fresh mapping, which faults nothing in, so every timing can say how
cold the file really was.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
from pathlib import Path

_PROT_READ, _MAP_SHARED = mmap.PROT_READ, mmap.MAP_SHARED
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_MAP_FAILED = ctypes.c_void_p(-1).value


def resident_fraction(path: str | os.PathLike) -> float | None:
    """Share of the file's pages in the page cache (0..1), or None where mincore is unavailable."""
    size = os.path.getsize(path)
    if size == 0:
        return 0.0
    page = mmap.PAGESIZE
    pages = (size + page - 1) // page
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, size, _PROT_READ, _MAP_SHARED, fd, 0)
        if addr in (None, _MAP_FAILED):
            return None
        try:
            vec = (ctypes.c_ubyte * pages)()
            if _libc.mincore(ctypes.c_void_p(addr), size, vec) != 0:
                return None
            return sum(b & 1 for b in vec) / pages
        finally:
            _libc.munmap(ctypes.c_void_p(addr), size)
    finally:
        os.close(fd)


def _drop_all_caches() -> bool:
    """Drop the whole page cache (needs root; harmless to correctness, costs other files' warmth)."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("1\n")
    except OSError:
        return False
    return True


def evict(path: str | os.PathLike, tolerance: float = 0.01) -> dict:
    """Drop `path` from the page cache; what was done and how resident it was before and after."""
    before = resident_fraction(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # dirty pages cannot be dropped
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    method = "posix_fadvise"
    after = resident_fraction(path)
    if after is not None and after > tolerance and _drop_all_caches():
        method = "drop_caches"
        after = resident_fraction(path)
    effective = after is not None and after <= tolerance
    return {"method": method, "resident_before": before, "resident_after": after, "effective": effective}


def filesystem_of(path: str | os.PathLike) -> str:
    """The filesystem type holding `path` (from /proc/mounts), e.g. ext4, overlay, tmpfs."""
    target = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) > 2 and target.startswith(fields[1]) and len(fields[1]) > len(best):
                best, kind = fields[1], fields[2]
    except OSError:
        pass
    return kind
