"""The spread across training seeds (--seeds K): median and IQR of the stitched Sharpe, one lucky seed."""

import dataclasses

import numpy as np
import pytest

from foxhunt.evaluate.evaluation import Metrics
from foxhunt.evaluate.seed_spread import (
    majority_figures,
    majority_positions,
    result_label,
    seed_spread,
    spread_lines,
)

_ZERO = Metrics(**{f.name: 0.0 for f in dataclasses.fields(Metrics)})


def _net(sharpe: float, low: float, high: float | None = None, **figures: float) -> Metrics:
    return dataclasses.replace(
        _ZERO,
        sharpe=sharpe,
        sharpe_ci_low=low,
        sharpe_ci_high=sharpe + 1.0 if high is None else high,
        **figures,
    )


def _spread(sharpes: dict[int, float], lows: dict[int, float]) -> dict:
    return seed_spread({s: _net(sharpes[s], lows[s]) for s in sharpes})


def test_median_and_quartiles_interpolate_between_order_statistics():
    spread = _spread({0: 10.0, 1: 1.0, 2: 3.0, 3: 2.0}, {0: 1.0, 1: -1.0, 2: -1.0, 3: -1.0})
    # sorted 1, 2, 3, 10: positions 0.75, 1.5, 2.25 of 0..3
    assert spread["q1"] == pytest.approx(1.75)
    assert spread["median"] == pytest.approx(2.5)
    assert spread["q3"] == pytest.approx(4.75)
    assert spread["iqr"] == pytest.approx(3.0)


def test_one_seed_carries_the_result_when_it_alone_is_above_flat():
    spread = _spread({0: 4.0, 1: 0.5, 2: -0.2}, {0: 0.1, 1: -2.0, 2: -3.0})
    assert spread["above_flat"] == [0] and spread["one_seed_carries"]
    assert any("one seed carries" in line for line in spread_lines(spread))


def test_two_seeds_above_flat_are_not_one_lucky_seed():
    spread = _spread({0: 4.0, 1: 3.5, 2: -0.2}, {0: 0.1, 1: 0.2, 2: -3.0})
    assert not spread["one_seed_carries"]
    assert not any("one seed carries" in line for line in spread_lines(spread))


def test_an_interval_touching_flat_is_not_above_it():
    assert _spread({0: 1.0, 1: 2.0}, {0: 0.0, 1: 0.5})["above_flat"] == [1]


def test_a_single_seed_never_carries_alone():
    spread = _spread({7: 3.0}, {7: 1.0})
    assert spread["iqr"] == 0.0 and spread["median"] == 3.0 and not spread["one_seed_carries"]


def test_a_seed_whose_whole_interval_is_below_flat_does_harm():
    spread = seed_spread({0: _net(-2.0, -3.0, -0.5), 1: _net(-1.0, -2.0, 0.0), 2: _net(1.0, -1.0, 3.0)})
    assert spread["below_flat"] == [0]  # an interval reaching flat's 0 is not below it
    assert "1 of 3 below it" in spread_lines(spread)[0]


def test_each_seed_keeps_its_interval_exposure_and_turnover():
    spread = seed_spread({3: _net(0.5, -0.2, 1.1, exposure=0.25, turnover_per_year=40.0)})
    assert spread["figures"]["3"] == {
        "sharpe": 0.5,
        "ci": [-0.2, 1.1],
        "exposure": 0.25,
        "turnover_per_year": 40.0,
    }


def test_two_or_three_seeds_are_read_as_their_range_not_a_median_and_iqr():
    line = spread_lines(_spread({0: 1.5, 1: -0.25, 2: 0.75}, {0: -1.0, 1: -2.0, 2: -1.0}))[0]
    assert line.startswith("3 seeds: stitched net Sharpe from -0.25 to 1.50;")
    assert "IQR" not in line and "median" not in line


def test_four_seeds_are_read_as_a_median_and_iqr():
    line = spread_lines(_spread({0: 10.0, 1: 1.0, 2: 3.0, 3: 2.0}, {0: 1.0, 1: -1.0, 2: -1.0, 3: -1.0}))[0]
    assert line.startswith("4 seeds: stitched net Sharpe median 2.50, IQR 3.00 (1.75 to 4.75);")


def test_a_seed_left_out_is_listed_with_its_reason():
    spread = seed_spread({11: _net(1.0, -1.0), 12: _net(2.0, -1.0)}, left_out={13: "diverged in fold 1"})
    assert spread["left_out"] == [{"seed": 13, "reason": "diverged in fold 1"}]
    assert spread["seeds"] == [11, 12]


def test_a_spread_of_every_seed_leaves_none_out():
    assert _spread({0: 1.0, 1: 2.0}, {0: -1.0, 1: -1.0})["left_out"] == []


def test_the_console_names_each_seed_left_out_and_why():
    spread = seed_spread({11: _net(1.0, -1.0)}, left_out={14: "diverged in fold 2", 12: "diverged in fold 0"})
    assert spread_lines(spread)[-1] == (
        "2 of 3 seeds left out of the spread: seed 12 (diverged in fold 0), seed 14 (diverged in fold 2)"
    )


def test_a_spread_of_every_seed_says_nothing_of_seeds_left_out():
    assert not any("left out" in line for line in spread_lines(_spread({0: 1.0, 1: 2.0}, {0: -1.0, 1: -1.0})))


def test_the_majority_holds_a_side_only_where_more_than_half_the_seeds_hold_it():
    members = [np.array([1.0, 1.0, -1.0, 1.0, 0.0]), np.array([1.0, 0.0, -1.0, -1.0, 0.0]),
               np.array([0.0, 0.0, 1.0, -1.0, 1.0])]  # fmt: skip
    assert majority_positions(members).tolist() == [1.0, 0.0, -1.0, -1.0, 0.0]


def test_two_of_four_seeds_are_not_a_majority():
    # Catches: "at least half" for "more than half" (a tie of two against two, or two against flat, trades).
    members = [np.array([1.0, 1.0]), np.array([1.0, 1.0]), np.array([-1.0, 0.0]), np.array([-1.0, 0.0])]
    assert majority_positions(members).tolist() == [0.0, 0.0]
    assert majority_positions([*members, np.array([1.0, 1.0])]).tolist() == [1.0, 1.0]


def test_the_majority_of_no_seeds_is_refused():
    with pytest.raises(ValueError, match="no member positions"):
        majority_positions([])


def test_the_majority_line_says_where_it_lies_against_flat():
    above = majority_figures(_net(2.5, 0.4, 4.6, exposure=0.3, turnover_per_year=120.0), [0, 1, 2])
    inside = majority_figures(_net(0.5, -1.0, 2.0), [0, 1, 2])
    spread = {**_spread({0: 1.0, 1: 2.0, 2: 3.0}, {0: 0.1, 1: 0.2, 2: 0.3}), "majority": above}
    assert spread_lines(spread)[-1] == (
        "majority of 3 seeds (the side more than half hold, else flat): stitched net Sharpe 2.50 "
        "[0.40, 4.60], above flat outside its interval; exposure 30%, turnover 120/yr"
    )
    assert "flat within its interval" in spread_lines({**spread, "majority": inside})[-1]


def test_the_result_is_the_majority_from_three_voting_seeds_and_the_first_seeds_below():
    # Catches: a quorum of more than three, or two seeds' "agreement" taken as a vote.
    assert result_label([4, 5, 6], 4) == "majority of seeds 4, 5, 6"
    assert result_label([4, 5], 4) == "seed 4 (the majority needs 3 seeds)"


def test_a_majority_whose_interval_touches_flat_is_neither_above_nor_below_it():
    starts_at_flat = majority_figures(_net(1.0, 0.0, 2.0), [0, 1, 2])
    ends_at_flat = majority_figures(_net(-1.0, -2.0, 0.0), [0, 1, 2])
    assert not starts_at_flat["above_flat"] and not ends_at_flat["below_flat"]
