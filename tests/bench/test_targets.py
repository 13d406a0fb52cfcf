"""bench/targets.py: every tracked row from the benchmarks' JSON (the harness's `targets` blocks and the older
files as written), verdicts in the right direction, one commit or none, the README's block replaced."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import targets as t  # noqa: E402


def _write(folder: Path, name: str, record: dict) -> Path:
    path = folder / name
    path.write_text(json.dumps(record))
    return path


def _harness_record(commit: str, entries: dict) -> dict:
    return {"benchmark": "x", "commit": commit, "device": "NVIDIA H200", "date": "2026-12-04", "host": {},
            "targets": entries}  # fmt: skip


def _row(block: str, what: str) -> str:
    return next(line for line in block.splitlines() if line.startswith(f"| {what}"))


def test_a_harness_record_gives_its_rows_with_the_file_they_came_from(tmp_path):
    entry = {"measured": 30.0, "target": 25.0, "met": False, "higher_is_better": False, "how": "median of 3"}
    found = t.gathered([_write(tmp_path, "plan_shape-h200-x.json", _harness_record("abc1234", {
        "plan_cached_wall_seconds": entry}))])  # fmt: skip
    row = _row(t.table(found), "the plan's shape")
    assert "| 30 s | ≤ 25 s | **not met** |" in row and "`plan_shape-h200-x.json`" in row


def test_an_older_population_file_gives_the_lone_step_and_the_best_population(tmp_path):
    trainers = [{"kind": "lone", "size": 1, "step": {"samples_per_second": 30e6, "seconds_per_step_median": 0.25e-3,
                                                     "speedup_vs_lone": 1.0}},
                {"kind": "population", "size": 8, "step": {"samples_per_second": 250e6, "speedup_vs_lone": 8.3}},
                {"kind": "population", "size": 64, "step": {"samples_per_second": 90e6, "speedup_vs_lone": 3.0}}]  # fmt: skip
    path = _write(
        tmp_path, "population_gpu-h200-2026-12-03-abc1234.json", {"commit": "abc1234", "trainers": trainers}
    )
    found = t.gathered([path])
    assert (
        found["population_samples_per_second"]["measured"] == 250e6
        and found["population_samples_per_second"]["met"]
    )
    assert found["lone_step_seconds"]["measured"] == 0.25e-3 and not found["lone_step_seconds"]["met"]
    block = t.table(found)
    assert "| 250.0M | ≥ 200.0M | met |" in _row(block, "populations") and "P = 8" in _row(
        block, "populations"
    )
    assert "| 0.25 ms | ≤ 0.2 ms | **not met** |" in _row(block, "the lone trainer's step")


def test_an_older_pipeline_file_is_met_at_its_target(tmp_path):
    record = {"commit": "abc1234", "repeats": 3, "cores": "0,1", "medians": {"wall_seconds": 30.0}}
    found = t.gathered([_write(tmp_path, "pipeline_cpu-2026-12-03-abc1234.json", record)])
    assert found["pipeline_wall_seconds"]["met"] and "taskset -c 0,1" in found["pipeline_wall_seconds"]["how"]


def test_an_older_trials_file_is_judged_on_population_8_with_more_trials_per_hour_better(tmp_path):
    record = {"commit": "abc1234", "shape": {"pruner": "none"}, "populations": {
        "1": {"trials_per_hour_vs_first": 1.0}, "8": {"trials_per_hour_vs_first": 1.41}}}  # fmt: skip
    entry = t.gathered([_write(tmp_path, "trials_gpu-h200-2026-12-03-abc1234.json", record)])[
        "trials_per_hour_ratio"
    ]
    assert entry["measured"] == 1.41 and entry["higher_is_better"] and entry["met"] is False
    record["populations"]["8"]["trials_per_hour_vs_first"] = 1.6
    assert t.gathered([_write(tmp_path, "trials_gpu-x.json", record)])["trials_per_hour_ratio"]["met"]


def test_a_row_no_file_gives_is_not_measured_and_a_later_file_wins_a_row(tmp_path):
    assert len([line for line in t.table({}).splitlines() if "not measured" in line]) == len(t.ROWS)
    older = _harness_record(
        "aaa1111",
        {
            "seeds_wall_ratio": {
                "measured": 2.0,
                "target": 1.3,
                "met": False,
                "higher_is_better": False,
                "how": "",
            }
        },
    )
    newer = _harness_record("bbb2222", {"seeds_wall_ratio": {"measured": 1.2, "target": 1.3, "met": True,
                                                             "higher_is_better": False, "how": ""}})  # fmt: skip
    found = t.gathered([_write(tmp_path, "a.json", older), _write(tmp_path, "b.json", newer)])
    assert found["seeds_wall_ratio"]["commit"] == "bbb2222"


def test_the_one_json_names_a_commit_only_when_every_row_was_measured_at_it():
    one = t.combined({"a": {"commit": "abc1234"}, "b": {"commit": "abc1234"}})
    assert one["commit"] == "abc1234"
    mixed = t.combined({"a": {"commit": "abc1234"}, "b": {"commit": "def5678"}})
    assert mixed["commit"] is None and mixed["commits"] == ["abc1234", "def5678"]


def test_render_replaces_only_the_text_between_the_markers():
    readme = f"head\n{t.BEGIN}\nold table\n{t.END}\ntail\n"
    assert t.render(readme, "new") == f"head\n{t.BEGIN}\nnew\n{t.END}\ntail\n"
    with pytest.raises(SystemExit, match="markers"):
        t.render("no markers here", "new")


def _dated(commit: str, date: str, entries: dict, benchmark: str = "power") -> dict:
    return {**_harness_record(commit, entries), "benchmark": benchmark, "date": date}


def _ratio(measured: float) -> dict:
    return {
        "measured": measured,
        "target": 1.5,
        "met": measured >= 1.5,
        "higher_is_better": True,
        "how": "one way",
    }


def test_newest_takes_each_row_from_the_newest_file_giving_it_not_its_benchmarks_newest_file(
    tmp_path,
):
    _write(tmp_path, "power_universe-a.json", _dated("aaa1111", "2026-12-04", {"universe_row": _ratio(0.4)}))
    _write(tmp_path, "power-b.json", _dated("bbb2222", "2026-12-05", {"one_row": _ratio(0.8)}))
    found = t.gathered(t.newest_files(tmp_path))
    assert found["universe_row"]["commit"] == "aaa1111" and found["one_row"]["commit"] == "bbb2222"


def test_newest_leaves_out_the_before_side_of_a_before_and_after_pair(tmp_path):
    _write(tmp_path, "scoring-h100-abc-before-1.json", _dated("abc0000", "2026-12-06", {"row": _ratio(0.2)}))
    _write(tmp_path, "scoring-h100-def.json", _dated("def0000", "2026-12-05", {"row": _ratio(0.1)}))
    assert t.gathered(t.newest_files(tmp_path))["row"]["commit"] == "def0000"


def test_newest_leaves_out_a_run_at_a_setting_other_than_the_shipped_default(tmp_path):
    _write(
        tmp_path,
        "overlay-h100-abc-eurusd-at-cost02.json",
        _dated("abc0000", "2026-12-06", {"row": _ratio(0.9)}),
    )
    _write(tmp_path, "overlay-h100-def.json", _dated("def0000", "2026-12-05", {"row": _ratio(0.5)}))
    assert t.gathered(t.newest_files(tmp_path))["row"]["commit"] == "def0000"


def test_numbered_files_of_one_commit_and_device_give_their_median_as_one_row(tmp_path):
    paths = [_write(tmp_path, f"scoring-h100-abc-{i}.json", _dated("abc0000", f"2026-12-05T10:0{i}", {
        "row": _ratio(value)})) for i, value in ((1, 1.0), (2, 1.8), (3, 1.6))]  # fmt: skip
    entry = t.gathered(paths)["row"]
    assert entry["measured"] == 1.6 and entry["met"] is True
    assert "median of 3 processes" in entry["how"] and entry["file"] == "scoring-h100-abc-{1,2,3}.json"
