"""bench/gate_power.py: a tiny CPU run sweeps every scenario over the ts, records each edge's calibrated
drift and skill, and tabulates the answer per t; the noise targets' arithmetic by hand."""

import json
import sys
from pathlib import Path

import pytest

from foxhunt.config import FoldConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import gate_power as bench  # noqa: E402


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    out = tmp_path_factory.mktemp("gate_power") / "gate_power.json"
    argv = ["--ts", "1", "3", "--runs", "2", "--edge-runs", "2", "--calibration-runs", "2", "--minutes", "60"]
    assert bench.main([*argv, "--out", str(out)]) == 0
    return json.loads(out.read_text())


def test_a_tiny_run_sweeps_every_scenario_over_every_t(record):
    edges = {bench.edge_name(size, skill) for size in bench.EDGES for skill in bench.SKILLS}
    assert set(record["scenarios"]) == set(bench.NOISE) | edges
    for scenario in record["scenarios"].values():
        assert set(scenario["by_t"]) == {"1", "3"}
        for cell in scenario["by_t"].values():
            assert cell["above_flat"]["n"] == cell["below_flat"]["n"] == scenario["runs"]
    assert [row["t"] for row in record["table"]] == [1.0, 3.0]


def test_the_folds_expand_as_shipped_unless_told(record):
    assert record["shape"]["mode"] == FoldConfig().mode == "expanding" and len(record["shape"]["folds"]) == 21


def test_each_edge_records_its_calibrated_drift_and_skill_and_simulates_them(record):
    quarter = record["scenarios"][bench.edge_name("quarter", 1.0)]
    assert quarter["calibration"]["target_shadow"] == bench.EDGES["quarter"][0] == quarter["oracle_target"]
    assert quarter["scenario"]["drift_sharpe"] == quarter["calibration"]["drift_sharpe"]
    assert quarter["scenario"]["skill"] == quarter["calibration"]["skill"] == 1.0


def test_noise_has_no_oracle_so_no_share():
    assert bench.ratio(0.5, 0.0) is None and bench.ratio(0.5, 2.0) == 0.25


def test_a_skill_one_edges_calibration_hits_its_target_on_its_own_seed():
    # Holding the oracle's positions, the mean shadow Sharpe is linear in the drift: one secant step lands.
    cal = bench.calibrate(1.24, 1.0, bench.Grid(60, "expanding"), runs=3, seed=7)
    assert cal["points"][-1]["mean_shadow"] == pytest.approx(1.24, abs=1e-6)


def test_ten_noise_seeds_pass_when_none_is_below_flat_and_at_most_one_above():
    assert bench.ten_seed_pass(0.0, 0.1) == pytest.approx(0.9**10 + 10 * 0.1 * 0.9**9, rel=1e-12)
    assert bench.ten_seed_pass(0.01, 0.0) == pytest.approx(0.99**10, rel=1e-12)
