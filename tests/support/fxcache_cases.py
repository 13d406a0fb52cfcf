"""Small fxcache files for the fxcache, storage and bad-input tests: a good one, and rewritten ones."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from foxhunt.data import fxcache
from foxhunt.data.features import FEATURE_NAMES, TARGET_NAMES, FeatureTable

MINUTE_NS = 60_000_000_000


def make_table(rows: int = 500, seed: int = 0) -> FeatureTable:
    rng = np.random.default_rng(seed)
    timestamp = 1_700_000_000 * 1_000_000_000 + np.cumsum(rng.integers(1, 5, rows)) * MINUTE_NS
    return FeatureTable(
        timestamp=timestamp.astype(np.int64),
        features=rng.standard_normal((rows, len(FEATURE_NAMES)), dtype=np.float32),
        targets=rng.standard_normal((rows, len(TARGET_NAMES)), dtype=np.float32) * 1e-3,
    )


def write_raw(path, timestamp, features, targets, metadata: dict) -> None:
    """Write an fxcache the way a foreign or buggy writer might: no checks, metadata as given."""
    batch = pa.record_batch(
        [
            pa.array(timestamp, type=pa.int64()),
            pa.FixedSizeListArray.from_arrays(pa.array(features.reshape(-1)), features.shape[1]),
            pa.FixedSizeListArray.from_arrays(pa.array(targets.reshape(-1)), targets.shape[1]),
        ],
        names=["timestamp", "features", "targets"],
    )
    batch = batch.replace_schema_metadata({k: json.dumps(v) for k, v in metadata.items()})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as writer:
        writer.write_batch(batch)


def write_good(path, table: FeatureTable | None = None, source_hash: str = "bars-hash") -> dict:
    return fxcache.write_fxcache(
        str(path), table or make_table(), source_uri="bars.parquet", source_hash=source_hash
    )


def rewrite_with(path, table: FeatureTable, **changes) -> None:
    """Rewrite a good fxcache with changed arrays or metadata and a checksum that matches the new arrays."""
    metadata = write_good(path, table)
    timestamp = changes.pop("timestamp", table.timestamp)
    features = changes.pop("features", table.features)
    targets = changes.pop("targets", table.targets)
    metadata["checksum"] = fxcache.columns_checksum(timestamp, features, targets)
    metadata.update(changes)
    write_raw(path, timestamp, features, targets, metadata)
