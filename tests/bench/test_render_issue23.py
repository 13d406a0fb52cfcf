"""bench/render_issue23.py: issue 23's table from the benchmarks' JSON, verdicts in the right direction."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import render_issue23 as r  # noqa: E402


def _write(tmp_path: Path, name: str, payload: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(payload))
    return str(path)


def _population(samples: dict[int, float]) -> dict:
    return {
        "trainers": [
            {"size": p, "step": {"samples_per_second": s, "speedup_vs_lone": 1.0}} for p, s in samples.items()
        ]
    }


def _row(block: str, start: str) -> str:
    return next(line for line in block.splitlines() if line.startswith(f"| {start}"))


def test_the_population_row_takes_the_best_size_and_more_samples_is_better(tmp_path):
    files = {"population": _write(tmp_path, "pop.json", _population({1: 30e6, 8: 250e6, 64: 90e6}))}
    row = _row(r.table(r.measured(files)), "population")
    assert "| 250.0M |" in row and "P = 8" in row and "| met |" in row
    files = {"population": _write(tmp_path, "pop.json", _population({1: 30e6, 64: 190e6}))}
    assert "**not met**" in _row(r.table(r.measured(files)), "population")


def test_a_seconds_row_is_met_at_or_under_its_target_and_names_its_file(tmp_path):
    real = {
        "cold_runs": {"1": {"summary": {"wall_seconds": 12.0, "runs": 3, "validate_seconds_median": 0.05}}}
    }
    row = _row(
        r.table(r.measured({"real": _write(tmp_path, "real_shape-x.json", real)})), "the real-data shape"
    )
    assert "| 12 s |" in row and "| met |" in row and "`real_shape-x.json`" in row and "median of 3" in row
    real["cold_runs"]["1"]["summary"]["wall_seconds"] = 12.5
    row = _row(
        r.table(r.measured({"real": _write(tmp_path, "real_shape-x.json", real)})), "the real-data shape"
    )
    assert "**not met**" in row


def test_a_benchmark_not_given_leaves_its_rows_not_measured():
    block = r.table(r.measured({}))
    assert len([line for line in block.splitlines() if "not measured" in line]) == len(r.ROWS)


def test_render_replaces_only_the_text_between_the_markers():
    readme = f"head\n{r.BEGIN}\nold table\n{r.END}\ntail\n"
    assert r.render(readme, "new") == f"head\n{r.BEGIN}\nnew\n{r.END}\ntail\n"
    with pytest.raises(SystemExit, match="markers"):
        r.render("no markers here", "new")
