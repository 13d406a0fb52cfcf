"""No input makes the process abort: `foxhunt precompute` with torch imported before pyarrow, many times.

pyarrow's threaded CSV reader aborted the process (exit 134, SIGABRT) about one run in ten when torch
was loaded first, sometimes after printing the right error line. Each case here runs in a new
process FOXHUNT_ABORT_RUNS times (10 in CI; 50 for the figure in the closing note) and must end with
its own exit code every time. The processes are forked from one that has imported torch
(tests/support/abort_runs.py): each starts with torch loaded and pyarrow not, as a fresh `foxhunt`
with torch imported first does, without a torch import per run. The runs start in the background when the session starts
(tests/support/background_runs.py); each test reads its case's.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.background_runs import STARTERS, queue_command

from foxhunt.data.bars import generate_sample_bars, write_bars

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

RUNS = int(os.environ.get("FOXHUNT_ABORT_RUNS", "10"))
HEADER = "timestamp,open,high,low,close,volume\n"
# Forks the runs after importing torch: the order that made pyarrow's threads abort.
RUNNER = Path(__file__).resolve().parents[1] / "support" / "abort_runs.py"


def bad_gzipped_csv(folder: Path) -> Path:
    path = folder / "bad.csv.gz"
    path.write_bytes(
        gzip.compress(
            (HEADER + "2024-01-02T00:00:00,1,1.2,0.9,1.1,10\n2024-01-02T00:01:00,abc,1,1,1,1\n").encode()
        )
    )
    return path


def nan_parquet(folder: Path) -> Path:
    path = folder / "nan.parquet"
    stamps = pa.array(np.array(["2024-01-02T00:00", "2024-01-02T00:01"], dtype="datetime64[ns]"))
    pq.write_table(
        pa.table(
            {
                "timestamp": stamps,
                "open": [1.0, np.nan],
                "high": [1.0, 1.0],
                "low": [1.0, 1.0],
                "close": [1.0, 1.0],
                "volume": [1.0, 1.0],
            }
        ),
        path,
    )
    return path


def header_only_csv(folder: Path) -> Path:
    path = folder / "header.csv"
    path.write_text(HEADER)
    return path


def good_gzipped_csv(folder: Path) -> Path:
    plain = folder / "good.csv"
    write_bars(generate_sample_bars(1500, seed=7), plain)
    path = folder / "good.csv.gz"
    path.write_bytes(gzip.compress(plain.read_bytes()))
    plain.unlink()
    return path


CASES = {
    "bad_gzipped_csv": (bad_gzipped_csv, 2, "cannot parse"),
    "nan_parquet": (nan_parquet, 2, "open is NaN"),
    "header_only_csv": (header_only_csv, 2, "empty file"),
    "good_gzipped_csv": (good_gzipped_csv, 0, ""),
}


def queue_abort_runs(request: pytest.FixtureRequest) -> dict[str, Future]:
    """Queue each case's RUNS processes in the background; per case, the future of the runner's finished
    process and the folder its outputs went to."""

    def argv_in(case: str) -> Callable[[Path], list[str]]:
        return lambda folder: [sys.executable, str(RUNNER), str(RUNS), "precompute",
                               "--bars", str(CASES[case][0](folder)), "--out", str(folder / "out{run}.fxcache")]  # fmt: skip

    def env_in(folder: Path) -> dict[str, str]:
        return {**os.environ, "FOXHUNT_CACHE_DIR": str(folder / "cache")}

    return {case: queue_command(request, f"abort-{case}", argv_in(case), env_in) for case in sorted(CASES)}


STARTERS["abort_case_runs"] = queue_abort_runs


@pytest.fixture(scope="session")
def abort_case_runs(request) -> dict[str, Future]:
    """Each case's runs, queued in the background from the session's start."""
    return queue_abort_runs(request)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_no_input_aborts_the_process(case, abort_case_runs):
    _, expected_code, expected_error = CASES[case]
    done, folder = abort_case_runs[case].result()
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)
    codes = Counter(code for code, _ in runs)
    for run, (_, stderr) in enumerate(runs):
        assert expected_error in stderr and "Traceback" not in stderr
        assert (folder / f"out{run}.fxcache").exists() == (expected_code == 0)
    assert codes == {expected_code: RUNS}
