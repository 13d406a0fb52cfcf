"""Benchmark of the precompute step: bars → features (one core) and the fxcache round trip.

Prints the figures and writes them as JSON (default bench/results/precompute-<date>-<host>.json).
Targets it reports against: compute_features ≥ 1M bars/s on one core; fxcache write + read
of 4M rows ≤ 1.5 s.

Peak memory is tracemalloc's peak of traced allocations during a second, untimed call
(numpy and scipy allocate their arrays through the traced allocator), so it counts the
arrays compute_features creates, not the interpreter or the input bars.

    python bench/precompute.py [--rows 4000000] [--repeat 3] [--out PATH]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import socket
import tempfile
import time
import tracemalloc
from pathlib import Path

from provenance import cpu_model, git_commit

from foxhunt.data.bars import Bars, generate_sample_bars, read_bars
from foxhunt.data.features import FeatureTable, compute_features

ROOT = Path(__file__).resolve().parents[1]
EURUSD = ROOT.parent / "shared" / "data" / "EURUSD_M1_2018_2019.parquet"
TARGET_BARS_PER_S = 1_000_000
TARGET_FXCACHE_ROUND_TRIP_S = 1.5


def measure_features(bars: Bars, repeat: int) -> tuple[dict, FeatureTable]:
    """Time compute_features (best and all of `repeat` calls) and trace its peak memory."""
    seconds, cpu_seconds = [], []
    table = None
    for _ in range(repeat):
        del table  # the previous table's memory goes back before the next call
        start, cpu_start = time.perf_counter(), time.process_time()
        table = compute_features(bars)
        seconds.append(time.perf_counter() - start)
        cpu_seconds.append(time.process_time() - cpu_start)
    del table
    tracemalloc.start()
    table = compute_features(bars)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    best = min(seconds)
    return {
        "bars": len(bars),
        "rows": len(table),
        "seconds": seconds,
        "best_seconds": best,
        "bars_per_s": len(bars) / best,
        "cpu_seconds": cpu_seconds,
        # CPU time is what the call itself used; on a shared machine wall time also holds waiting.
        "bars_per_cpu_s": len(bars) / min(cpu_seconds),
        "peak_traced_mib": peak / 2**20,
        "output_mib": (table.features.nbytes + table.targets.nbytes + table.timestamp.nbytes) / 2**20,
    }, table


def measure_fxcache(table: FeatureTable, repeat: int) -> dict:
    """Seconds to write the table as a local fxcache and to read (validate, memory-map) it back."""
    from foxhunt.data.fxcache import read_fxcache, write_fxcache

    writes, reads = [], []
    with tempfile.TemporaryDirectory(prefix="fxcache-bench-") as tmp:
        uri = str(Path(tmp) / "bench.arrow")
        for _ in range(repeat):
            start = time.perf_counter()
            write_fxcache(uri, table, source_uri="sample://bench", source_hash="0" * 64)
            writes.append(time.perf_counter() - start)
            start = time.perf_counter()
            cache = read_fxcache(uri)
            reads.append(time.perf_counter() - start)
            assert cache.features.shape == table.features.shape
            del cache
        size = Path(uri).stat().st_size
    return {
        "rows": len(table),
        "file_mib": size / 2**20,
        "write_seconds": writes,
        "read_seconds": reads,
        "best_round_trip_seconds": min(w + r for w, r in zip(writes, reads, strict=True)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000, help="generated bars for the big run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    cores = sorted(os.sched_getaffinity(0))
    # numpy's element-wise kernels are single-threaded anyway; pinning makes "one core" literal.
    os.sched_setaffinity(0, {cores[0]})

    generated = generate_sample_bars(args.rows)
    big, big_table = measure_features(generated, args.repeat)
    del generated
    print(
        f"compute_features, {big['bars']:,} generated bars: best {big['best_seconds']:.2f} s, "
        f"{big['bars_per_s'] / 1e6:.2f} M bars/s (target ≥ {TARGET_BARS_PER_S / 1e6:.0f} M; "
        f"{big['bars_per_cpu_s'] / 1e6:.2f} M per CPU-second), "
        f"peak traced {big['peak_traced_mib']:.0f} MiB for {big['output_mib']:.0f} MiB of output"
    )

    start = time.perf_counter()
    eurusd_bars = read_bars([str(EURUSD)])
    read_seconds = time.perf_counter() - start
    eurusd, _ = measure_features(eurusd_bars, args.repeat)
    eurusd["read_bars_seconds"] = read_seconds
    del eurusd_bars
    print(
        f"compute_features, EURUSD {eurusd['bars']:,} bars: best {eurusd['best_seconds']:.2f} s, "
        f"{eurusd['bars_per_s'] / 1e6:.2f} M bars/s ({eurusd['bars_per_cpu_s'] / 1e6:.2f} M per CPU-second), peak traced {eurusd['peak_traced_mib']:.0f} MiB "
        f"(read_bars {read_seconds:.2f} s)"
    )

    os.sched_setaffinity(0, set(cores))  # the fxcache hashes its chunks on all cores
    fxcache = measure_fxcache(big_table, args.repeat)
    print(
        f"fxcache, {fxcache['rows']:,} rows ({fxcache['file_mib']:.0f} MiB): "
        f"write {min(fxcache['write_seconds']):.2f} s, read {min(fxcache['read_seconds']):.2f} s, "
        f"best round trip {fxcache['best_round_trip_seconds']:.2f} s "
        f"(target ≤ {TARGET_FXCACHE_ROUND_TRIP_S} s)"
    )

    now = dt.datetime.now(dt.timezone.utc)
    host = socket.gethostname()
    result = {
        "benchmark": "precompute",
        "date": now.isoformat(timespec="seconds"),
        "host": host,
        "cpu_model": cpu_model(),
        "cpus_available": len(cores),
        "load_average_1m": os.getloadavg()[0],
        "commit": git_commit(),
        "memory_method": "tracemalloc peak of traced allocations during one compute_features call",
        "features_core_pinned": cores[0],
        "features_generated": big,
        "features_eurusd": eurusd,
        "fxcache": fxcache,
        "targets": {
            "features_bars_per_s_min": TARGET_BARS_PER_S,
            "fxcache_round_trip_s_max": TARGET_FXCACHE_ROUND_TRIP_S,
            "features_met": big["bars_per_s"] >= TARGET_BARS_PER_S,
            "fxcache_met": fxcache["best_round_trip_seconds"] <= TARGET_FXCACHE_ROUND_TRIP_S,
        },
    }
    out = args.out or ROOT / "bench" / "results" / f"precompute-{now:%Y%m%d}-{host}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
