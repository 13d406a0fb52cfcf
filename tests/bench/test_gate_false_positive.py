"""bench/gate_false_positive.py: a tiny CPU run writes every scenario's rates for every decision, with the
simulated shape and its folds' mode, and says the scenario it ran."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import gate_false_positive as bench  # noqa: E402

from foxhunt.config import FoldConfig  # noqa: E402


def test_a_tiny_run_records_each_scenarios_rates_and_shape(tmp_path):
    out = tmp_path / "gate.json"
    assert bench.main(["--runs", "1", "--power-runs", "1", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert set(record["scenarios"]) == set(bench.NOISE) | set(bench.POWER)
    assert len(record["shape"]["folds"]) == 21 and record["shape"]["bars_per_year"] == 252 * 1440
    assert record["shape"]["mode"] == record["settings"]["mode"] == FoldConfig().mode == "expanding"
    one = record["scenarios"]["E50-cost1bp-hold240"]
    assert one["scenario"]["epochs"] == 50 and one["scenario"]["cost"] == 1e-4
    for decision in bench.DECISIONS:
        assert one[decision]["fold_rate"]["n"] == 21 and one[decision]["run_rate"]["n"] == 1


def test_rolling_folds_are_a_flag_away_and_keep_a_month_long_tail(tmp_path):
    out = tmp_path / "gate.json"
    assert bench.main(["--runs", "1", "--power-runs", "1", "--mode", "rolling", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    tails = {t1 - t0 for t0, t1, _, _ in record["shape"]["folds"]}
    assert record["shape"]["mode"] == "rolling" and tails == {29_791}
