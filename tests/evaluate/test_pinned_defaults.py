"""Every default that moves a reported figure, pinned: each test fails when its default changes.

Newey–West's lag rule, the bootstrap's block length, the stitching tie rule, the ridge baseline's
threshold and penalty, and the annualisation and handover rules of the stitched record.
"""

import math

import numpy as np
import pytest
import torch
from test_evaluation import minutes, synthetic_run

from foxhunt.evaluate import baselines as base
from foxhunt.evaluate import sharpe as sr
from foxhunt.evaluate.evaluation import Scoring, fold_record, score_record, stitch


@pytest.mark.parametrize(("n_obs", "lags"), [(100, 4), (1000, 6), (10_000, 11), (30, 3), (1, 1)])
def test_newey_west_lags_are_floor_of_four_times_t_over_100_to_the_two_ninths(n_obs, lags):
    # 1000: 4 × 10^(2/9) = 6.68 → 6 (a quarter power gives 7; rounding gives 7).
    assert sr.newey_west_lags(n_obs) == lags


def test_the_hac_standard_error_uses_the_newey_west_lags_by_default():
    rng = np.random.default_rng(1)
    x = np.convolve(rng.normal(1e-4, 1e-3, 1003), [1.0, 0.5, 0.25], mode="valid")  # autocorrelated
    assert sr.hac_standard_error(x) == sr.hac_standard_error(x, lags=6)
    assert sr.hac_standard_error(x) != pytest.approx(sr.hac_standard_error(x, lags=7), rel=1e-6)


@pytest.mark.parametrize(("n_obs", "block"), [(1000, 10), (30, 3), (50, 4), (2, 1), (1, 1)])
def test_the_bootstrap_block_is_the_rounded_cube_root(n_obs, block):
    # 30: 3.107 → 3 (the ceiling gives 4; √T gives 5).
    assert sr.default_block(n_obs) == block


def test_the_bootstrap_interval_uses_the_default_block():
    x = np.random.default_rng(2).normal(1e-4, 1e-3, 1000)
    assert sr.bootstrap_interval(x, resamples=200) == sr.bootstrap_interval(x, resamples=200, block=10)
    assert sr.bootstrap_interval(x, resamples=200) != sr.bootstrap_interval(x, resamples=200, block=11)


def test_a_records_default_scoring_draws_a_thousand_bootstrap_resamples():
    # Catches: a smaller default resample count, which widens the run's reported intervals' noise.
    returns = np.random.default_rng(4).normal(1e-4, 1e-3, 300)
    record = fold_record(0, 0, np.ones(300), minutes(300), returns)
    assert score_record(record, Scoring()).net_draws.shape == (1000,)


def test_between_windows_that_start_on_the_same_bar_the_later_fold_trades():
    returns = np.full(50, 1e-3)
    earlier = fold_record(2, 0, np.ones(50), minutes(50), returns)
    later = fold_record(3, 0, -np.ones(50), minutes(50), returns)
    for order in ([earlier, later], [later, earlier]):
        stitched = stitch(order)
        assert stitched.fold.tolist() == [3] * 50 and stitched.positions.tolist() == [-1.0] * 50


def test_a_bar_goes_to_the_latest_started_window_whatever_the_fold_numbers():
    # Fold 5's window starts at row 0, fold 4's at row 20; rows 20-49 are in both. The later-started
    # window (fold 4) trades them, in either input order. Catches: the fold number ranked before the
    # window start (fold 5 would take rows 20-49), or the window start left out of the ordering.
    returns = np.full(50, 1e-3)
    early_start = fold_record(5, 0, np.ones(50), minutes(50), returns)
    late_start = fold_record(4, 20, -np.ones(30), minutes(50), returns)
    for order in ([early_start, late_start], [late_start, early_start]):
        stitched = stitch(order)
        assert stitched.fold.tolist() == [5] * 20 + [4] * 30
        assert stitched.positions.tolist() == [1.0] * 20 + [-1.0] * 30


def test_the_ridge_baseline_trades_on_the_cost_per_unit_as_its_threshold():
    features, targets, _, folds = synthetic_run()
    fold, cost = folds[1], 2e-4
    train = slice(fold.train_start, fold.train_end)
    prediction = base.predict_ridge(
        base.fit_ridge(features[train], targets[train, 0], 1e-2), features[fold.val_slice]
    )
    got = base.fold_baselines(features, targets, fold, cost)["ridge"]
    assert torch.equal(got, base.threshold_positions(prediction, cost))
    # The test can tell: half or twice the threshold trade differently on these bars.
    assert not torch.equal(got, base.threshold_positions(prediction, cost / 2))
    assert not torch.equal(got, base.threshold_positions(prediction, cost * 2))


def test_the_ridge_penalty_is_one_hundredth_per_row():
    features, targets, _, folds = synthetic_run()
    train = slice(folds[0].train_start, folds[0].train_end)
    default = base.fold_baselines(features, targets, folds[0], 1e-5)["ridge"]
    assert torch.equal(
        default, base.fold_baselines(features, targets, folds[0], 1e-5, ridge_lambda=1e-2)["ridge"]
    )
    weights = base.fit_ridge(features[train], targets[train, 0])
    stronger = base.fit_ridge(features[train], targets[train, 0], 1e-1)
    assert not torch.allclose(
        base.predict_ridge(weights, features[:10]), base.predict_ridge(stronger, features[:10])
    )


def test_annualisation_is_the_whole_datas_bars_per_year_wherever_a_window_falls():
    # Minute bars Monday to Friday only; a window from Friday 23:00 over the weekend to Monday and one
    # inside a week have the same periods per year (the whole data's), where the old per-window span
    # made the weekend window's 2 days 1 hour of 120 bars count.
    minute = 60_000_000_000
    monday = np.datetime64("2024-01-01", "ns").astype(np.int64)
    weekdays = [d for d in range(14) if d % 7 < 5]  # 2024-01-01 is a Monday
    timestamp = np.concatenate([monday + d * 1440 * minute + np.arange(1440) * minute for d in weekdays])
    returns = np.zeros(timestamp.size)
    friday_night = int(np.searchsorted(timestamp, np.datetime64("2024-01-05T23:00", "ns").astype(np.int64)))
    midweek = int(np.searchsorted(timestamp, np.datetime64("2024-01-03T12:00", "ns").astype(np.int64)))
    whole = (timestamp.size - 1) / ((timestamp[-1] - timestamp[0]) / (365.25 * 86_400e9))
    for start in (friday_night, midweek):
        record = fold_record(0, start, np.ones(120), timestamp, returns)
        assert record.periods_per_year() == pytest.approx(whole, rel=1e-12)
    assert not math.isclose(whole, 365.25 * 1440, rel_tol=1e-3)  # the data's weekends count


def test_a_handover_pays_the_actual_change_and_a_segment_after_a_gap_enters_from_flat():
    # Rows 0-2 long (fold 0), rows 3-4 long (fold 1, adjacent: no change), rows 5-6 short (fold 2,
    # adjacent: 2 units), rows 9-10 short (fold 3, after a gap: 1 unit from flat).
    # Catches: every segment entered from flat (changes 1, 1, 1, 1), or the gap handed over (0).
    ts, returns = minutes(11), np.zeros(11)
    parts = [(0, 0, [1, 1, 1]), (1, 3, [1, 1]), (2, 5, [-1, -1]), (3, 9, [-1, -1])]
    stitched = stitch([fold_record(f, s, np.array(p, float), ts, returns) for f, s, p in parts])
    assert stitched.position_changes.tolist() == [1, 0, 0, 0, 0, 2, 0, 1, 0]
    assert stitched.pnl(1e-3).sum() == pytest.approx(-4e-3)
