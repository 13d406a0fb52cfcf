"""The fxcache: features and targets in one uncompressed Arrow IPC file, memory-mapped on read.

Layout and metadata follow DESIGN.md "fxcache". The reader checks everything (format,
schema, names, row count, a checksum of the column buffers, time order, finiteness)
before it hands out a single array, so nothing unchecked reaches the trainer.
"""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa

from foxhunt import __version__, storage
from foxhunt.data.features import FEATURE_NAMES, TARGET_NAMES, FeatureTable
from foxhunt.errors import BadInput

FORMAT_VERSION = 1
CHECKSUM_ALGORITHM = "sha256-tree-16MiB"
# Chunks are hashed in parallel (hashlib releases the GIL); their digests are hashed in
# order, so the value does not depend on the number of threads.
CHECKSUM_CHUNK_BYTES = 16 * 1024 * 1024
FINITE_CHUNK_ROWS = 1 << 18
# The largest magnitude of a feature or target: every one precompute writes is scale-free (returns, log
# ratios, RSI 0-100, z-scores, sin/cos, log minutes): none nears 1e6; 1e30 would swamp every update.
MAX_ABS_VALUE = 1e6
# A copy of some metadata as the object's user metadata, so that `fxcache_matches` needs only a HEAD.
# It is a claim, used for nothing but that skip decision: never for a path, never instead of the checks.
S3_META_PREFIX = "fxcache-"
METADATA_KEYS = (
    "format_version",
    "feature_names",
    "target_names",
    "source_uri",
    "source_hash",
    "rows",
    "checksum_algorithm",
    "checksum",
    "foxhunt_version",
    "created_at",
)


class FxCacheError(BadInput):
    """An fxcache that cannot be trusted; the message names the URI and the problem (exit 2)."""


@dataclass
class FxCache:
    """A validated fxcache: numpy views into the memory-mapped file, plus its metadata."""

    uri: str
    path: Path
    timestamp: np.ndarray
    features: np.ndarray
    targets: np.ndarray
    metadata: dict
    cache_hit: bool = False
    # Keeps the memory map open for as long as the views are in use.
    _mmap: object = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.timestamp)


def _schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("timestamp", pa.int64(), nullable=False),
            pa.field("features", pa.list_(pa.float32(), len(FEATURE_NAMES)), nullable=False),
            pa.field("targets", pa.list_(pa.float32(), len(TARGET_NAMES)), nullable=False),
        ]
    )


def _workers() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def _byte_chunks(array: np.ndarray) -> list[memoryview]:
    flat = memoryview(np.ascontiguousarray(array)).cast("B")  # type: ignore[arg-type]  # numpy arrays are buffers
    return [flat[i : i + CHECKSUM_CHUNK_BYTES] for i in range(0, len(flat), CHECKSUM_CHUNK_BYTES)] or [flat]


def _digest(chunk: memoryview) -> bytes:
    return hashlib.sha256(chunk).digest()


def columns_checksum(timestamp: np.ndarray, features: np.ndarray, targets: np.ndarray) -> str:
    """Checksum of the three column buffers as stored (hex), independent of the thread count."""
    chunks = [c for array in (timestamp, features, targets) for c in _byte_chunks(array)]
    with ThreadPoolExecutor(_workers()) as pool:
        digests = list(pool.map(_digest, chunks))
    combined = hashlib.sha256()
    for array in (timestamp, features, targets):
        combined.update(f"{array.dtype.str}{array.shape}".encode())
    for d in digests:
        combined.update(d)
    return combined.hexdigest()


def _first_nonfinite(values: np.ndarray) -> int | None:
    """Row of the first NaN or infinity, or None; chunked so no full-size mask is allocated."""
    rows = values.reshape(len(values), -1)

    def check(start: int) -> int | None:
        block = rows[start : start + FINITE_CHUNK_ROWS]
        # A float64 sum of float32 values cannot overflow, so it is finite exactly when every value is.
        if np.isfinite(block.sum(dtype=np.float64)):
            return None
        return start + int(np.flatnonzero(~np.isfinite(block).all(axis=1))[0])

    with ThreadPoolExecutor(_workers()) as pool:
        found = [r for r in pool.map(check, range(0, len(rows), FINITE_CHUNK_ROWS)) if r is not None]
    return min(found) if found else None


def _first_too_large(values: np.ndarray, bound: float) -> tuple[int, int] | None:
    """(row, column) of the first value past ±`bound` (values are finite), or None; chunked."""
    rows = values.reshape(len(values), -1)

    def check(start: int) -> tuple[int, int] | None:
        block = rows[start : start + FINITE_CHUNK_ROWS]
        if not len(block) or (block.max() <= bound and block.min() >= -bound):  # the common case
            return None
        row, column = np.argwhere(np.abs(block) > bound)[0]
        return start + int(row), int(column)

    with ThreadPoolExecutor(_workers()) as pool:
        found = [r for r in pool.map(check, range(0, len(rows), FINITE_CHUNK_ROWS)) if r is not None]
    return min(found) if found else None


def _check_content(uri: str, timestamp: np.ndarray, features: np.ndarray, targets: np.ndarray) -> None:
    steps = np.diff(timestamp)
    bad = np.flatnonzero(steps <= 0)
    if bad.size:
        row = int(bad[0]) + 1
        raise FxCacheError(
            f"{uri}: timestamps not strictly increasing at row {row} "
            f"({int(timestamp[row - 1])} then {int(timestamp[row])})"
        )
    for name, values in (("features", features), ("targets", targets)):
        nonfinite = _first_nonfinite(values)
        if nonfinite is not None:
            raise FxCacheError(f"{uri}: {name} has a NaN or infinite value at row {nonfinite}")
    for names, values in ((FEATURE_NAMES, features), (TARGET_NAMES, targets)):
        too_large = _first_too_large(values, MAX_ABS_VALUE)
        if too_large is not None:
            row, column = too_large
            shown = f"{float(values[row, column]):g} at row {row}, past ±{MAX_ABS_VALUE:g}"
            raise FxCacheError(f"{uri}: column {names[column]} holds {shown}: no value precompute writes")


def _encode_metadata(metadata: dict) -> dict[bytes, bytes]:
    return {k.encode(): json.dumps(metadata[k]).encode() for k in METADATA_KEYS}


def _decode_metadata(uri: str, raw: dict | None) -> dict:
    raw = raw or {}
    missing = [k for k in METADATA_KEYS if k.encode() not in raw]
    if missing:
        raise FxCacheError(f"{uri}: not an fxcache: schema metadata lacks {', '.join(missing)}")
    try:
        return {k: json.loads(raw[k.encode()]) for k in METADATA_KEYS}
    except ValueError as exc:
        raise FxCacheError(f"{uri}: unreadable schema metadata: {exc}") from exc


def _object_metadata(metadata: dict) -> dict[str, str]:
    return {
        f"{S3_META_PREFIX}format-version": str(metadata["format_version"]),
        f"{S3_META_PREFIX}source-hash": metadata["source_hash"],
        f"{S3_META_PREFIX}checksum": metadata["checksum"],
        f"{S3_META_PREFIX}rows": str(metadata["rows"]),
    }


def write_fxcache(uri: str, table: FeatureTable, *, source_uri: str, source_hash: str) -> dict:
    """Write `table` as an fxcache at `uri` (local or s3://), atomically; returns its metadata.

    Refuses a table the reader would refuse (wrong shapes, unordered timestamps, NaN), so a
    bad cache is never published.
    """
    uri = str(uri)
    timestamp = np.ascontiguousarray(table.timestamp, dtype=np.int64)
    features = np.ascontiguousarray(table.features, dtype=np.float32)
    targets = np.ascontiguousarray(table.targets, dtype=np.float32)
    n = len(timestamp)
    if features.shape != (n, len(FEATURE_NAMES)) or targets.shape != (n, len(TARGET_NAMES)):
        raise FxCacheError(
            f"{uri}: expected features [{n}, {len(FEATURE_NAMES)}] and targets [{n}, {len(TARGET_NAMES)}], "
            f"got {list(features.shape)} and {list(targets.shape)}"
        )
    _check_content(uri, timestamp, features, targets)
    metadata = {
        "format_version": FORMAT_VERSION,
        "feature_names": list(FEATURE_NAMES),
        "target_names": list(TARGET_NAMES),
        "source_uri": source_uri,
        "source_hash": source_hash,
        "rows": n,
        "checksum_algorithm": CHECKSUM_ALGORITHM,
        "checksum": columns_checksum(timestamp, features, targets),
        "foxhunt_version": __version__,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    batch = pa.record_batch(
        [
            _wrap(timestamp, pa.int64()),
            pa.FixedSizeListArray.from_arrays(_wrap(features, pa.float32()), len(FEATURE_NAMES)),
            pa.FixedSizeListArray.from_arrays(_wrap(targets, pa.float32()), len(TARGET_NAMES)),
        ],
        schema=_schema().with_metadata(_encode_metadata(metadata)),
    )
    # Written whole to a local file, then published at once: readers see all of it or nothing.
    with storage.staged_write(uri, metadata=_object_metadata(metadata)) as tmp:
        _write_ipc(tmp, batch)
    return metadata


def _wrap(values: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
    # pa.array() may copy; wrapping the buffer never does.
    return pa.Array.from_buffers(arrow_type, values.size, [None, pa.py_buffer(values.reshape(-1))])


def _write_ipc(path: Path, batch: pa.RecordBatch) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as writer:
        writer.write_batch(batch)


def _check_schema(uri: str, schema: pa.Schema) -> dict:
    metadata = _decode_metadata(uri, schema.metadata)
    version = metadata["format_version"]
    if type(version) is not int:  # "1" is not 1: name the type, or the message reads "1, reads 1"
        raise FxCacheError(
            f"{uri}: format version {version!r} is a {type(version).__name__}, expected the number "
            f"{FORMAT_VERSION}"
        )
    if version != FORMAT_VERSION:
        raise FxCacheError(f"{uri}: format version {version}, this foxhunt reads version {FORMAT_VERSION}")
    expected = _schema()
    if schema.names != expected.names:
        raise FxCacheError(f"{uri}: columns {schema.names}, expected {expected.names}")
    for want in expected:
        got = schema.field(want.name).type
        same = got == want.type
        if pa.types.is_fixed_size_list(want.type):
            same = (
                pa.types.is_fixed_size_list(got)
                and got.list_size == want.type.list_size
                and got.value_type == pa.float32()
            )
        if not same:
            raise FxCacheError(f"{uri}: column '{want.name}' has type {got}, expected {want.type}")
    for key, names in (("feature_names", FEATURE_NAMES), ("target_names", TARGET_NAMES)):
        if tuple(metadata[key]) != tuple(names):
            diff = next(
                (
                    f"position {i}: {a!r} != {b!r}"
                    for i, (a, b) in enumerate(zip(metadata[key], names, strict=False))
                    if a != b
                ),
                f"{len(metadata[key])} names, expected {len(names)}",
            )
            raise FxCacheError(f"{uri}: {key} differ from this foxhunt's ({diff})")
    if metadata["checksum_algorithm"] != CHECKSUM_ALGORITHM:
        raise FxCacheError(f"{uri}: unknown checksum algorithm {metadata['checksum_algorithm']!r}")
    return metadata


def _open_local(uri: str, path: Path) -> FxCache:
    try:
        source = pa.memory_map(str(path), "r")
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{uri}: no such fxcache") from exc
    try:
        return _load_mapped(uri, path, source)
    except FxCacheError:
        source.close()
        raise
    except (pa.ArrowException, OSError, ValueError, TypeError, IndexError, KeyError) as exc:
        # Damage can land anywhere in Arrow's own framing; whatever pyarrow or numpy trips
        # over, the caller gets one kind of refusal that says which file.
        source.close()
        raise FxCacheError(f"{uri}: corrupt fxcache: {' '.join(str(exc).split())}") from exc


def _mapped_values(array: pa.Array, dtype: type) -> np.ndarray:
    """A read-only numpy view of a null-free primitive Arrow array's values, in the mapped file itself.

    Arrow's own `to_numpy` imports pandas on its first call (0.3 s of a run's load, for nothing here);
    the values buffer read directly is the same zero-copy view."""
    itemsize = np.dtype(dtype).itemsize
    if array.type.bit_width != 8 * itemsize:
        raise TypeError(f"a {array.type} column read as {np.dtype(dtype)}")
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * itemsize)


def _load_mapped(uri: str, path: Path, source: pa.MemoryMappedFile) -> FxCache:
    try:
        reader = pa.ipc.open_file(source)
    except (pa.ArrowInvalid, OSError) as exc:
        raise FxCacheError(f"{uri}: not a complete Arrow IPC file (truncated or corrupt): {exc}") from exc
    metadata = _check_schema(uri, reader.schema)
    if reader.num_record_batches != 1:
        raise FxCacheError(f"{uri}: {reader.num_record_batches} record batches, expected exactly 1")
    batch = reader.get_batch(0)
    # Lengths and buffer sizes as the file states them are checked before any slice is taken: a
    # damaged length reached Arrow's C++ assertions and aborted the process (found by fuzzing).
    batch.validate(full=True)
    columns = {name: batch.column(name) for name in ("timestamp", "features", "targets")}
    if any(col.null_count for col in columns.values()):
        raise FxCacheError(f"{uri}: a column has null entries")
    n, rows = batch.num_rows, metadata["rows"]
    if type(rows) is not int:  # "500" is not 500: name the type, or the message reads "500 rows, says 500"
        raise FxCacheError(f"{uri}: metadata's rows {rows!r} is a {type(rows).__name__}, expected a number")
    if n != rows:
        raise FxCacheError(f"{uri}: {n} rows, metadata says {rows}")
    timestamp = _mapped_values(columns["timestamp"], np.int64)
    features = _mapped_values(columns["features"].flatten(), np.float32).reshape(n, len(FEATURE_NAMES))
    targets = _mapped_values(columns["targets"].flatten(), np.float32).reshape(n, len(TARGET_NAMES))
    checksum = columns_checksum(timestamp, features, targets)
    if checksum != metadata["checksum"]:
        raise FxCacheError(
            f"{uri}: checksum mismatch (file {checksum[:16]}…, metadata {str(metadata['checksum'])[:16]}…)"
        )
    _check_content(uri, timestamp, features, targets)
    return FxCache(uri, path, timestamp, features, targets, metadata, _mmap=source)


def read_fxcache(uri: str, cache_dir: str | os.PathLike | None = None) -> FxCache:
    """Load and validate the fxcache at `uri`; arrays are read-only views of a memory map.

    An fxcache in object storage is downloaded once into the cache directory and verified (every
    check below, the column checksum included) before use; later loads use that copy while the
    object is unchanged and the copy still verifies (`cache_hit=True`). Every problem with the
    content is an FxCacheError naming the URI.
    """
    uri = str(uri)
    opened: list[FxCache] = []

    def verify(path: Path) -> str:
        opened.append(_open_local(uri, path))  # the check is the full load: kept, not done twice
        return opened[-1].metadata["checksum"]

    fetched = storage.fetch_cached(uri, verify, cache_dir)
    cache = opened[-1]
    cache.path, cache.cache_hit = fetched.path, fetched.cache_hit
    return cache


def _claimed_metadata(user: dict[str, str]) -> dict | None:
    """The metadata an object's user metadata claims, or None when it has none or it is unreadable."""
    try:
        return {
            "format_version": int(user[f"{S3_META_PREFIX}format-version"]),
            "source_hash": user[f"{S3_META_PREFIX}source-hash"],
            "checksum": user[f"{S3_META_PREFIX}checksum"],
            "rows": int(user[f"{S3_META_PREFIX}rows"]),
        }
    except (KeyError, ValueError):
        return None


def _footer_metadata(uri: str, path: Path) -> dict | None:
    """The schema metadata of a local fxcache (its footer only), or None when unreadable."""
    try:
        with pa.memory_map(str(path), "r") as source:
            return _decode_metadata(uri, pa.ipc.open_file(source).schema.metadata)
    except (OSError, pa.ArrowException, ValueError):
        return None


def fxcache_matches(uri: str, source_hash: str) -> dict | None:
    """Metadata of the fxcache at `uri` if it was built from bars with `source_hash` by this format.

    Cheap: a local file's schema (footer) only, an object's HEAD only (the subset kept in its user
    metadata). None when absent, different or unreadable, so that the fxcache is built again.
    """
    uri = str(uri)
    try:
        info = storage.head(uri)
    except FileNotFoundError:
        return None
    local = storage.local_path(uri)
    metadata = _footer_metadata(uri, local) if local is not None else _claimed_metadata(info["metadata"])
    if (
        metadata is None
        or metadata["format_version"] != FORMAT_VERSION
        or metadata["source_hash"] != source_hash
    ):
        return None
    return metadata
