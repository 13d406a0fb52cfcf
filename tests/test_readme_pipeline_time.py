"""The README's run time of the default `foxhunt pipeline` is the figure `bench/speed.py pipeline` measured last."""

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
ROUNDING = 1  # the README gives the median wall to the nearest second


def newest_record() -> dict:
    """The pipeline_cpu JSON measured last (by its date)."""
    records = [json.loads(p.read_text()) for p in (REPO / "bench" / "results").glob("pipeline_cpu-*.json")]
    assert records, "no bench/results/pipeline_cpu-*.json: run bench/speed.py pipeline"
    return max(records, key=lambda record: record["date"])


def test_the_command_table_states_the_measured_median_wall_of_the_default_pipeline():
    found = re.search(r"3 folds × 3 epochs \((\d+) s on 2 idle CPU cores, median of 3 cold processes", README)
    assert found, "the README's command table does not give the default pipeline's measured time"
    record = newest_record()

    assert record["repeats"] >= 3 and record["cores"] == "0,1"
    assert abs(int(found.group(1)) - record["medians"]["wall_seconds"]) <= ROUNDING / 2 + 1e-9


def test_the_first_line_gives_the_same_run_time_as_the_command_table():
    table = re.search(r"3 folds × 3 epochs \((\d+) s on 2 idle", README)
    first = re.search(r"then the run (\d+) s \(median of 3 cold processes", README.splitlines()[0])
    assert table and first and table.group(1) == first.group(1)
