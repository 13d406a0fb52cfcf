"""bench/step_kernels.py: a tiny CPU run profiles each population size's step in both modes and says how its
step time grows with the size; the kernel table adds up what the profiler saw."""

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import step_kernels  # noqa: E402

TINY = ["--device", "cpu", "--rows", "4000", "--batch", "256", "--hidden", "16", "--sizes", "1,2"]
TINY += [
    "--steps",
    "2",
    "--replays",
    "2",
    "--figure-calls",
    "2",
    "--variants",
    "base=",
    "narrow=dqn.hidden=8",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("kernels") / "kernels.json"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert step_kernels.main([*TINY, "--out", str(out)]) == 0
    finally:
        torch.set_num_threads(threads)
    return json.loads(out.read_text())


def test_each_variant_and_size_is_profiled_as_graph_replays_and_as_eager_compiled_steps(report):
    assert [(r["variant"], r["size"]) for r in report["sizes"]] == [
        ("base", 1),
        ("base", 2),
        ("narrow", 1),
        ("narrow", 2),
    ]
    assert [r["dqn"] for r in report["sizes"]] == [{}, {}, {"hidden": 8}, {"hidden": 8}]
    for r in report["sizes"]:
        for mode in ("graph", "eager_compiled"):
            assert r[mode]["kernels_per_step"] > 0
            assert 0 < r[mode]["busy_us_per_step"]
            assert r[mode]["top"][0]["us_per_step"] >= r[mode]["top"][-1]["us_per_step"]
        figures = r["tail_scores"]
        assert figures["kernels_per_step"] > 0 and figures["profiled_wall_us_per_call"] > 0
        assert r["tail_scores"]["kernels_per_step"] > 0 and r["tail_scores"]["profiled_wall_us_per_call"] > 0


def test_step_time_over_lone_is_each_row_over_the_base_variants_lone_step(report):
    per_step = {(r["variant"], r["size"]): r["seconds_per_step"] for r in report["sizes"]}
    lone = per_step[("base", 1)]
    assert report["step_time_over_lone"]["base P=1"] == 1.0
    assert report["step_time_over_lone"]["base P=2"] == pytest.approx(per_step[("base", 2)] / lone)
    assert report["step_time_over_lone"]["narrow P=2"] == pytest.approx(per_step[("narrow", 2)] / lone)


def event(name, micros, parent=None):
    return SimpleNamespace(name=name, cpu_time=micros, cpu_parent=parent, device_type=None)


def test_kernel_table_sums_top_level_ops_per_step_and_ranks_them():
    events = [event("a", 30.0), event("b", 10.0), event("a", 30.0), event("child", 99.0, parent=object())]
    table = step_kernels.kernel_table(events, steps=2, device=torch.device("cpu"))
    assert table["kernels_per_step"] == 1.5
    assert table["busy_us_per_step"] == 35.0
    assert [(k["name"], k["per_step"], k["us_per_step"]) for k in table["top"]] == [
        ("a", 1.0, 30.0),
        ("b", 0.5, 5.0),
    ]
    assert table["top"][0]["share"] == pytest.approx(60 / 70)


def test_a_chunk_sweep_scores_the_tail_at_each_chunk_and_restores_the_shipped_one(tmp_path):
    from foxhunt.train.device_data import chunk_rows

    shipped = chunk_rows(torch.device("cpu"))
    out = tmp_path / "chunks.json"
    argv = [*TINY[:10], "--figure-calls", "2", "--chunk-rows", "4096,128", "--out", str(out)]
    assert step_kernels.main(argv) == 0
    rows = json.loads(out.read_text())["sizes"]
    assert [(r["chunk_rows"], r["size"]) for r in rows] == [(4096, 1), (4096, 2), (128, 1), (128, 2)]
    for r in rows:
        assert r["tail_rows"] > 128  # several chunks of 128 rows: the edges are crossed
        assert r["map_entries_differing"] == 0  # the CPU's row-wise products round alike at any chunk
        assert r["wall_us_per_call"] > 0 and r["tail_scores"]["kernels_per_step"] > 0
    assert rows[2]["tail_scores"]["kernels_per_step"] > rows[0]["tail_scores"]["kernels_per_step"]
    assert chunk_rows(torch.device("cpu")) == shipped
