"""bench/slot_use.py: the slot loop's rounds against batches walked in lockstep, on the same pruned study."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import slot_use as bench  # noqa: E402


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    out = tmp_path_factory.mktemp("slot_use") / "slot_use.json"
    assert bench.main(["--populations", "4", "--folds", "4", "--trials", "24", "--out", str(out)]) == 0
    (only,) = json.loads(out.read_text())["cases"]
    return only


def test_slot_use_is_the_member_folds_over_every_rounds_slots(case):
    for way in ("lockstep", "slots"):
        figures = case[way]
        assert figures["slot_use"] == pytest.approx(figures["member_folds"] / (figures["rounds"] * 4))


def test_both_ways_finish_every_trial_and_prune_some(case):
    for way in ("lockstep", "slots"):
        assert case[way]["complete"] + case[way]["pruned"] == 24 and case[way]["pruned"] > 0


def test_the_slot_loop_fills_more_of_its_slots_in_fewer_rounds(case):
    assert case["slots"]["slot_use"] > case["lockstep"]["slot_use"]
    assert case["rounds_ratio"] == pytest.approx(case["lockstep"]["rounds"] / case["slots"]["rounds"])
    assert case["rounds_ratio"] > 1


def test_a_fold_value_is_fixed_by_the_trial_and_fold_and_scaled_by_the_noise():
    params = {"lr": 1e-4, "gamma": 0.95}
    assert bench.fold_value(params, 3, 1, 0.0) == 0.0
    assert bench.fold_value(params, 3, 1, 2.0) == 2 * bench.fold_value(params, 3, 1, 1.0)
    assert bench.fold_value(params, 3, 1, 1.0) != bench.fold_value(params, 3, 2, 1.0)
