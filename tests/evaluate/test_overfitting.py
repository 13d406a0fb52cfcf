"""Selection statistics: PBO by CSCV against a hand computation and on noise, an edge and a reversal;
the DSR's inputs from one population of trials; the plain readings.

Each test names the plausible mistake it catches.
"""

import math

import numpy as np
import pytest

# Four folds (rows) × three trials A, B, C (columns); with S = 4 each fold is a group.
from support.selection_cases import HAND  # noqa: E402

from foxhunt.evaluate import overfitting
from foxhunt.evaluate.overfitting import dsr_inputs, probability_of_overfitting


def test_pbo_of_a_hand_computed_example():
    # Totals A 13, B 8, C 10; in-sample → selected; out of sample (total − in-sample) → rank, ω = rank / 4:
    #   {0,1}: IS 5,4,4 → A; OOS 8,4,6 → rank 3, ω .75, λ = ln 3
    #   {0,2}: IS 6,5,3 → A; OOS 7,3,7 → A ties C: rank 1 + 1 + ½ = 2.5, ω .625, λ = ln(5/3)
    #   {0,3}: IS 10,1,7 → A; OOS 3,7,3 → rank 1.5, ω .375, λ = ln .6
    #   {1,2}: IS 3,7,3 → B; OOS 10,1,7 → rank 1, ω .25, λ = ln(1/3)
    #   {1,3}: IS 7,3,7 → A (tie: the first trial); OOS 6,5,3 → rank 3, λ = ln 3
    #   {2,3}: IS 8,4,6 → A; OOS 5,4,4 → rank 3, λ = ln 3
    # Two of six splits have λ ≤ 0: PBO = 1/3.
    # Catches: the last trial winning an in-sample tie (PBO 1/2); a tie out of sample ranked below (1/2);
    # ranking in-sample instead of out of sample (0).
    got = probability_of_overfitting(HAND)
    assert got.pbo == pytest.approx(1 / 3)
    assert got.splits == 6 and got.groups == 4 and got.trials == 3
    np.testing.assert_allclose(got.logits, np.log([3, 5 / 3, 0.6, 1 / 3, 3, 3]), rtol=1e-12)


def test_a_selected_trial_at_the_out_of_sample_median_counts_as_overfit():
    # Split {0}: A selected, out of sample 2 of (2, 1, 3): rank 2, ω = ½, λ = 0. Split {1}: C, rank 1.
    # Catches: counting λ < 0 only (PBO ½).
    assert probability_of_overfitting(np.array([[3, 2, 1], [2, 1, 3]], dtype=float)).pbo == 1.0


def test_the_earliest_folds_that_fill_no_group_are_left_out():
    # Five folds, S = 4: the first fold is dropped (catches: dropping the latest, or padding).
    rng = np.random.default_rng(1)
    m = rng.normal(size=(5, 6))
    m[0] = [100, -100, 0, 0, 0, 0]
    got = probability_of_overfitting(m)
    assert got.folds_used == 4 and got.logits == probability_of_overfitting(m[1:]).logits


def test_the_default_groups_are_the_largest_even_count_up_to_sixteen():
    assert [overfitting.default_groups(n) for n in (2, 3, 8, 9, 16, 17, 40)] == [2, 2, 8, 8, 16, 16, 16]


def test_pbo_of_trials_with_no_skill_is_about_one_half():
    # The in-sample winner is a coin flip out of sample. Catches: ranking in-sample (0), or λ of the
    # in-sample rank (0).
    rng = np.random.default_rng(2)
    got = np.mean([probability_of_overfitting(rng.normal(size=(8, 30))).pbo for _ in range(40)])
    assert 0.4 <= got <= 0.6


def test_pbo_of_a_planted_edge_is_near_zero():
    rng = np.random.default_rng(3)
    results = rng.normal(size=(16, 40))
    results[:, 7] += 1.5  # one trial's edge: 1.5 standard deviations a fold
    assert probability_of_overfitting(results).pbo < 0.15


def test_pbo_of_wins_bought_with_losses_elsewhere_is_one():
    # Each trial's folds sum to zero (a directional bet that wins a sell-off and gives it back on the
    # rebound): the in-sample winner is the out-of-sample loser in every split.
    rng = np.random.default_rng(4)
    results = rng.normal(size=(8, 20))
    results -= results.mean(axis=0)
    assert probability_of_overfitting(results).pbo == 1.0


@pytest.mark.parametrize(
    ("shape", "groups", "message"),
    [((4, 1), 0, "two or more trials"), ((4, 3), 3, "even"), ((4, 3), 6, "even"), ((1, 3), 0, "even")],
)
def test_bad_shapes_and_group_counts_are_refused(shape, groups, message):
    with pytest.raises(ValueError, match=message):
        probability_of_overfitting(np.zeros(shape), groups)


def test_a_nan_result_is_refused():
    m = np.zeros((4, 3))
    m[2, 1] = math.nan
    with pytest.raises(ValueError, match="NaN"):
        probability_of_overfitting(m)


# ---- PBO's record: when it is read, and what it says it used ------------------------------------------
def test_pbo_of_trials_all_flat_in_every_fold_is_undefined():
    # Catches: CSCV on tied records, where every split ranks the selected trial at the median (PBO 1.0).
    got = overfitting.overfitting_record(np.zeros((4, 3)), [0, 1, 2, 3], [7, 8, 9])
    assert got["pbo"] is None and "reading" not in got
    assert "flat in every fold" in got["reason"] and "no ranking" in got["reason"]


def test_pbo_of_trials_with_one_and_the_same_record_is_undefined():
    tied = np.repeat(np.array([[0.5], [-1.0], [2.0], [0.1]]), 3, axis=1)
    got = overfitting.overfitting_record(tied, [0, 1, 2, 3], [0, 1, 2])
    assert got["pbo"] is None and "same per-fold record" in got["reason"]


def test_pbo_with_two_trials_tied_and_one_apart_is_read():
    results = HAND.copy()
    results[:, 1] = results[:, 0]
    got = overfitting.overfitting_record(results, [0, 1, 2, 3], [0, 1, 2])
    assert got["pbo"] is not None and "reason" not in got


@pytest.mark.parametrize("n_folds", [2, 3])
def test_pbo_is_not_read_below_the_minimum_of_folds(n_folds):
    # Catches: reading 2 mirror splits (PBO 0, ½ or 1) as a measurement.
    rng = np.random.default_rng(5)
    got = overfitting.overfitting_record(
        rng.normal(size=(n_folds, 10)), list(range(n_folds)), list(range(10))
    )
    assert got["pbo"] is None and got["min_folds"] == overfitting.MIN_PBO_FOLDS == 4
    assert "4 or more" in got["reason"] and "mirror" in got["reason"]


def test_pbo_states_its_trials_folds_and_splits():
    got = overfitting.overfitting_record(HAND, [0, 1, 2, 3], [0, 2, 3])
    assert (
        got["pbo"] == pytest.approx(1 / 3)
        and got["folds_used"] == [0, 1, 2, 3]
        and got["folds_left_out"] == []
    )
    assert "over 3 trials, folds 0–3; 6 splits of 4 groups, so PBO moves in steps of 1/6" in got["reading"]


def test_pbo_names_the_earliest_fold_it_leaves_out():
    # Five folds, 4 groups: fold 10 (the earliest) fills no group. Catches: dropping it silently.
    rng = np.random.default_rng(6)
    got = overfitting.overfitting_record(rng.normal(size=(5, 4)), [10, 11, 12, 13, 14], [0, 1, 2, 3])
    assert got["folds_used"] == [11, 12, 13, 14] and got["folds_left_out"] == [10]
    assert "folds 11–14 (fold 10 left out: 5 folds do not fill 4 groups evenly)" in got["reading"]


# ---- the DSR's inputs ---------------------------------------------------------------------------------
def test_the_dsr_counts_every_trial_tried_and_spreads_those_with_a_sharpe():
    # Five trials tried, two pruned (no Sharpe): N = 5, variance (ddof 1) of .1, .2, .6 = .07.
    # Catches: N counting only the trials with a Sharpe (3); ddof 0 (.0467).
    got = dsr_inputs([0.1, None, 0.2, None, 0.6])
    assert got.n_trials == 5 and got.n_with_sharpe == 3
    assert got.sharpe_variance == pytest.approx(0.07)


def test_a_non_finite_sharpe_counts_as_tried_but_not_in_the_variance():
    got = dsr_inputs([0.1, math.nan, 0.3])
    assert got.n_trials == 3 and got.n_with_sharpe == 2 and got.sharpe_variance == pytest.approx(0.02)


def test_the_dsr_needs_two_trials_with_a_sharpe():
    with pytest.raises(ValueError, match="two or more"):
        dsr_inputs([0.1, None])


@pytest.mark.parametrize(
    ("best", "sharpes", "words"),
    [
        (0.0, [0.0, 0.0, None], "every trial that completed was flat"),
        (0.0, [0.0, -0.02, None], "best trial's Sharpe is 0"),
    ],
)
def test_the_dsr_of_a_flat_best_trial_is_undefined(best, sharpes, words):
    # Catches: reading PSR(0 against 0) = 0.50 as a DSR.
    assert words in overfitting.dsr_undefined_reason(best, sharpes)


@pytest.mark.parametrize(("best", "sharpes"), [(0.01, [0.01, 0.0]), (-0.01, [-0.01, -0.02])])
def test_the_dsr_of_a_best_trial_that_traded_is_defined(best, sharpes):
    assert overfitting.dsr_undefined_reason(best, sharpes) is None


# ---- readings ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pbo", "words"),
    [(0.5, "selection explains"), (0.49, "caution"), (0.2, "caution"), (0.19, "holds up")],
)
def test_pbo_readings_at_their_thresholds(pbo, words):
    assert words in overfitting.pbo_reading(pbo)


@pytest.mark.parametrize(
    ("dsr", "words"),
    [
        (0.95, "survives"),
        (0.94, "not significant"),
        (0.5, "not significant"),
        (0.49, "selection explains most"),
    ],
)
def test_dsr_readings_at_their_thresholds(dsr, words):
    got = overfitting.dsr_reading(dsr, 12, 0.8)
    assert words in got and "best of 12 trials tried with no skill would reach 80% of this Sharpe" in got


def test_a_dsr_with_a_negative_sharpe_reads_as_nothing_to_deflate():
    assert "negative; there is nothing to deflate" in overfitting.dsr_reading(0.1, 5, None)
    assert "undefined" in overfitting.dsr_reading(None, 5, 0.5)


def _split_by_split_logits(group_sums: np.ndarray) -> list[float]:
    """CSCV's λ one split at a time, as the paper states it (the reference for `split_logits`)."""
    from itertools import combinations

    s, n_trials = group_sums.shape
    total = group_sums.sum(axis=0)
    logits = []
    for chosen in combinations(range(s), s // 2):
        in_sample = group_sums[list(chosen)].sum(axis=0)
        out_sample = total - in_sample
        value = out_sample[int(np.argmax(in_sample))]
        rank = 1.0 + np.sum(out_sample < value) + 0.5 * (np.sum(out_sample == value) - 1)
        omega = rank / (n_trials + 1.0)
        logits.append(math.log(omega / (1.0 - omega)))
    return logits


@pytest.mark.parametrize(
    "groups, trials, ties", [(4, 3, False), (8, 20, True), (16, 64, False), (16, 9, True)]
)
def test_all_splits_at_once_give_the_split_by_split_logits_bit_for_bit(groups, trials, ties):
    # Catches, in the vectorised CSCV: a split's best trial taken in the wrong row or by the last of tied
    # maxima, a rank off by the ties' half, splits in another order than itertools.combinations'.
    rng = np.random.default_rng(groups * 100 + trials)
    sums = (
        rng.integers(-3, 4, size=(groups, trials)).astype(float)
        if ties
        else rng.normal(size=(groups, trials))
    )
    assert overfitting.split_logits(sums) == _split_by_split_logits(sums)
