"""bench/perf_targets.py's arithmetic and bench/render_readme.py's block: medians, not best-of; failed runs and
warm loads never count; the README keeps everything outside its generated block."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import page_cache  # noqa: E402
import perf_targets  # noqa: E402
import perf_variants  # noqa: E402
import render_readme  # noqa: E402

from foxhunt.data.bars import generate_sample_bars  # noqa: E402
from foxhunt.data.folds import generate_walk_forward_indices  # noqa: E402


def _run(
    epoch: float, wall: float = 20.0, load: float = 0.5, evicted: bool = True, status="succeeded"
) -> dict:
    fold = {"fold": 0, "train_rows": 4_000_000, "epoch_seconds_median": epoch, "transition_seconds": 0.001}
    return {
        "status": status,
        "wall_seconds": wall,
        "run_seconds": wall - 5,
        "build_seconds": 3.0,
        "data_load_seconds": load,
        "eviction": {"effective": evicted},
        "epoch_seconds_biggest_fold": epoch,
        "epoch_seconds_all_folds": epoch,
        "transition_seconds_worst": 0.001,
        "compile_cache": ["compile cache: loaded s3://x in 0.2s"],
        "folds": [fold],
    }


def _report(runs: list[dict], load_median: float | None = 0.7) -> dict:
    report = {
        "commit": "abc",
        "device": "NVIDIA H200",
        "torch": "2.11.0+cu130",
        "date": "2026-12-02T18:00:00+00:00",
        "cold": True,
        "shape": {"bars": 4_700_000, "rows": 4_699_000, "folds": [{"train_rows": 4_000_000}], "batch_size": 8192,
                  "epochs": 50},
        "settings": {"dqn": {"batch_size": 8192}, "shipped_defaults": True},
        "cold_runs": runs,
        "load": {"cold_seconds_median": load_median},
    }  # fmt: skip
    report["targets"] = perf_targets.targets(report)
    return report


def test_each_target_is_the_median_over_cold_runs_not_the_best():
    targets = perf_targets.targets(_report([_run(0.09, 24), _run(0.12, 27), _run(0.11, 26)]))
    assert targets["epoch_seconds"] == pytest.approx(
        {"measured": 0.11, "target": 0.10, "met": False, "how": targets["epoch_seconds"]["how"]}
    )
    assert targets["run_seconds"]["measured"] == 26 and not targets["run_seconds"]["met"]


def test_a_failed_run_does_not_count():
    targets = perf_targets.targets(_report([_run(0.08), _run(0.5, status="failed")]))
    assert targets["epoch_seconds"]["measured"] == 0.08 and targets["epoch_seconds"]["met"]


def test_a_load_read_from_the_page_cache_never_stands_for_a_cold_one():
    warm_only = perf_targets.targets(_report([_run(0.08, load=0.2, evicted=False)], load_median=1.3))
    assert warm_only["load_seconds"]["measured"] == 1.3 and not warm_only["load_seconds"]["met"]
    cold = perf_targets.targets(_report([_run(0.08, load=0.9), _run(0.08, load=0.2, evicted=False)]))
    assert cold["load_seconds"]["measured"] == 0.9


def test_the_folds_have_the_issue_shape_in_training_rows():
    table_ts = generate_sample_bars(470_000, seed=0).timestamp
    folds = generate_walk_forward_indices(table_ts, perf_targets.issue_folds(table_ts))
    shares = [f.train_rows / len(table_ts) for f in folds]
    assert shares == pytest.approx([4.0 / 4.7, 4.19 / 4.7, 4.37 / 4.7], rel=0.005)


def test_a_variant_is_chosen_only_when_it_beats_the_base_by_more_than_the_noise():
    results = {"base": {"epoch_seconds": 0.100, "changes": {}}, "bf16=True": {"epoch_seconds": 0.099,
               "changes": {"bf16": True}}, "steps_per_graph=2": {"error": "boom", "changes": {}}}  # fmt: skip
    assert perf_variants.choose(results)["choice"] == "base"
    results["bf16=True"]["epoch_seconds"] = 0.090
    assert perf_variants.choose(results)["choice_changes"] == {"bf16": True}


def test_when_the_base_fails_the_fastest_variant_that_ran_is_chosen():
    results = {"base": {"error": "compile failed", "changes": {}}, "bf16=True": {"epoch_seconds": 0.2,
               "changes": {"bf16": True}}, "steps_per_graph=2": {"epoch_seconds": 0.1,
               "changes": {"steps_per_graph": 2}}}  # fmt: skip
    chosen = perf_variants.choose(results)
    assert chosen["choice_changes"] == {"steps_per_graph": 2} and "compile failed" in chosen["why"]


def test_the_readme_block_marks_what_is_not_met():
    block = render_readme.render(_report([_run(0.12, 24)]), "results/x.json")
    lines = {line.split(" | ")[0]: line for line in block.splitlines() if line.startswith("| ")}
    assert "**not met**" in lines["| epoch ≤ 0.1 s at ≈4M training rows"]
    assert "| met |" in lines["| cold `foxhunt train`, 3 folds × 50 epochs, ≤ 25 s wall"]
    assert "commit `abc`" in block and "results/x.json" in block


def test_rendering_replaces_only_the_generated_block():
    readme = "# B\n\n## Latest figures against the targets\n\nold figures\n\n## Earlier\n\nkept\n"
    once = render_readme.replace_block(readme, "new block")
    twice = render_readme.replace_block(once, "newer block")
    assert "old figures" in once and twice.count("block") == 1 and "newer block" in twice
    assert twice.endswith("## Earlier\n\nkept\n") and twice.startswith("# B\n\n## Latest figures")


def test_a_file_just_read_is_resident_and_evict_reports_what_mincore_sees(tmp_path, monkeypatch):
    monkeypatch.setattr(page_cache, "_drop_all_caches", lambda: False)  # never the whole machine's cache here
    path = tmp_path / "blob"
    path.write_bytes(np.random.default_rng(0).bytes(1 << 20))
    path.read_bytes()
    assert page_cache.resident_fraction(path) == 1.0
    done = page_cache.evict(path)
    assert done["resident_before"] == 1.0
    assert done["resident_after"] == page_cache.resident_fraction(path)
    assert done["effective"] == (done["resident_after"] <= 0.01)
