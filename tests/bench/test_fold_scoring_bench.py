"""bench/fold_scoring.py's agreement figure: the largest relative difference over every figure of two
evaluations, which the JSON reports against issue 23's 1e-9."""

import math
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from fold_scoring import largest_difference  # noqa: E402


@dataclass(frozen=True)
class Figures:
    sharpe: float
    low: float
    verdict: str


def test_the_largest_relative_difference_is_found_inside_nested_figures():
    want = {"model": Figures(2.0, -1.0, "above"), "flat": Figures(0.0, math.nan, "no")}
    got = {"model": Figures(2.0 * (1 + 3e-12), -1.0, "above"), "flat": Figures(1e-13, math.nan, "no")}
    assert math.isclose(largest_difference(got, want), 3e-12, rel_tol=1e-3)


def test_another_word_is_an_infinite_difference():
    assert largest_difference(Figures(1.0, 1.0, "above"), Figures(1.0, 1.0, "below")) == math.inf
