"""The README's first command says how long its install takes: the figure `bench/data.py install` measured last."""

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import data as install_time  # noqa: E402

README = (REPO / "README.md").read_text().splitlines()
STATED = re.compile(r"the install takes about (\d+) s\b")
ROUNDING = 10  # the README gives the median to the nearest 10 s


def newest_record() -> dict:
    """The install_time JSON measured last (by its date)."""
    records = [
        json.loads(p.read_text()) for p in sorted((REPO / "bench" / "results").glob("install_time-*.json"))
    ]
    assert records, "no bench/results/install_time-*.json: run `bench/data.py install`"
    return max(records, key=lambda record: record["date"])


def test_the_readmes_first_line_states_the_measured_install_time_within_its_rounding():
    found = STATED.search(README[0])
    assert found, f"README line 1 does not say 'the install takes about N s': {README[0]}"
    measured = newest_record()["median_seconds"]["total"]

    assert abs(int(found.group(1)) - measured) <= ROUNDING / 2


def test_the_timed_steps_are_the_readmes_install_command():
    command = README[1]

    assert command.startswith("`python3 -m venv .venv && . .venv/bin/activate && ")
    assert f"pip install {install_time.TORCH} && pip install -e '.[train]'" in command
    assert newest_record()["what"] == install_time.WHAT


def test_the_record_says_how_loaded_the_machine_was_and_where_torch_came_from():
    record = newest_record()

    assert len(record["repeats"]) >= 3
    assert all(len(r["load_before"]) == 3 and len(r["load_after"]) == 3 for r in record["repeats"])
    assert record["pip_cache"].startswith("off")
    assert record["torch_source"]
