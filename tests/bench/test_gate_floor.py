"""bench/gate_floor.py: per fold the gate a pooled Sharpe must clear, by hand: t standard errors of a zero
Sharpe over the pooled bars, K instruments counted at K_eff = K / (1 + (K − 1) ρ)."""

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import gate_floor as bench  # noqa: E402


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    out = tmp_path_factory.mktemp("gate_floor") / "gate_floor.json"
    assert bench.main(["--bars", "260000", "--instruments", "1", "4", "--correlation", "0", "0.3",
                       "--out", str(out)]) == 0  # fmt: skip
    return json.loads(out.read_text())


def test_one_instruments_gate_is_t_errors_of_a_zero_sharpe_over_its_pooled_bars(record):
    gates = record["gates"]
    for row in gates["folds"]:
        error = math.sqrt(gates["bars_per_year"] / row["pooled_bars_one_instrument"])
        assert row["gates"]["K1_rho0"] == pytest.approx(gates["select_pool_t"] * error, rel=1e-12)


def test_k_independent_instruments_divide_the_gate_by_root_k_and_correlation_takes_some_back(record):
    row = record["gates"]["folds"][0]["gates"]
    assert row["K4_rho0"] == pytest.approx(row["K1_rho0"] / 2, rel=1e-12)
    assert row["K4_rho0.3"] == pytest.approx(row["K1_rho0"] / math.sqrt(4 / (1 + 3 * 0.3)), rel=1e-12)


def test_each_fold_pools_the_earlier_folds_validation_bars(record):
    bars = [r["pooled_bars_one_instrument"] for r in record["gates"]["folds"]]
    assert len(bars) > 1 and all(later > earlier for earlier, later in zip(bars[:-1], bars[1:], strict=True))
