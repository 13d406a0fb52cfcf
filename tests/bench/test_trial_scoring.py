"""bench/trial_scoring.py: a search's stitched and fold scorings, each call timed, in one process."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import trial_scoring as bench  # noqa: E402

FLAGS = ["--train-days", "5", "--val-days", "2", "--step-days", "2", "--max-folds", "2", "--seed", "11"]


@pytest.fixture(scope="module")
def record(tiny_fxcache, tmp_path_factory):
    out = tmp_path_factory.mktemp("trial_scoring") / "scoring.json"
    argv = [
        "--fxcache",
        str(tiny_fxcache),
        "--trials",
        "3",
        "--population",
        "2",
        "--out",
        str(out),
        "--",
        *FLAGS,
    ]
    assert bench.main(argv) == 0
    return json.loads(out.read_text())


def test_every_trial_is_scored_once_stitched_and_once_per_fold(record):
    figures = record["figures"]
    assert figures["stitched"]["calls"] == 3 and len(figures["stitched"]["walls"]) == 3
    assert figures["folds"]["calls"] == 3 * 2


def test_the_scoring_functions_are_themselves_again_after_the_search(record):
    from foxhunt.evaluate.run_scores import evaluate_fold
    from foxhunt.run import fold
    from foxhunt.run.fold import stitch_outcomes
    from foxhunt.search import driver

    assert fold.evaluate_fold is evaluate_fold and driver.stitch_outcomes is stitch_outcomes


def test_the_totals_are_the_calls_and_the_search_holds_them(record):
    stitched, folds = record["figures"]["stitched"], record["figures"]["folds"]
    assert stitched["seconds"] == pytest.approx(sum(stitched["walls"]))
    after_first = stitched["walls"][1:]  # two calls: their median is their mean
    assert stitched["median_after_first"] == pytest.approx(sum(after_first) / 2)
    assert stitched["seconds"] + folds["seconds"] < record["figures"]["wall_seconds"]
    assert record["settings"]["trials"] == 3 and record["settings"]["population"] == 2
