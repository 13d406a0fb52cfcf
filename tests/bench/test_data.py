"""bench/data.py: a tiny CPU precompute run writes its throughput from the median call and judges it against
the targets; the oracle's summary is the mean, min and max across seeds."""

import json
import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import data  # noqa: E402


def test_a_cpu_precompute_run_reports_bars_per_second_of_the_median_call(tmp_path):
    out = tmp_path / "precompute.json"
    assert data.main(["precompute", "--rows", "20000", "--repeats", "3", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    generated = record["features_generated"]
    assert generated["bars_per_s"] == pytest.approx(20000 / generated["seconds"]["median"])
    assert generated["seconds"]["n"] == 3 and generated["peak_traced_mib"] > 0
    assert record["features_real"]["file"] == data.REAL_SLICE.name and record["features_real"]["bars"] > 0
    features = record["targets"]["features_bars_per_second"]
    assert features["higher_is_better"] and features["met"] is (generated["bars_per_s"] >= 1_000_000)
    trip = record["targets"]["fxcache_round_trip_seconds"]
    assert trip["measured"] == record["fxcache"]["round_trip_seconds"]["median"]
    assert trip["met"] is (trip["measured"] <= 1.5)


def test_the_oracle_across_seeds_is_each_figures_mean_min_and_max(monkeypatch):
    sharpes = {(True, 0): 2.0, (True, 1): 4.0, (False, 0): -1.0, (False, 1): 0.5}

    def fake_run(seed, bars, signal, scoring):
        value = sharpes[(signal, seed)]
        return {"seed": seed, "signal": "on" if signal else "off", "net_sharpe": {"ridge_15": value},
                "feature_oracle": value}  # fmt: skip

    monkeypatch.setattr(data, "oracle_run", fake_run)
    record: dict = {}
    data.oracle(data.parse_args(["oracle", "--seeds", "0,1", "--bars", "100"]), Path("."), record)
    assert record["summary"]["on"]["feature_oracle"] == {"mean": 3.0, "min": 2.0, "max": 4.0}
    assert record["summary"]["off"]["ridge_15"]["mean"] == statistics.fmean([-1.0, 0.5])
