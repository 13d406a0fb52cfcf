"""The stacked scoring (every policy's gross and net P&L of a window bootstrapped together, both moments of
a block gathered at once) against a plain one-series-at-a-time scoring with materialised resamples, on real
EURUSD bars: every figure of the window's and the stitched run's evaluation to 1e-9."""

import numpy as np
import pytest
from support.eurusd_windows import (
    COST,
    START,
    STITCHED_FOLDS,
    VAL,
    eurusd_arrays,
    stitched_plans,
    window_records,
)
from support.plain_scoring import differences, materialised_bootstrap, plain_window

from foxhunt.evaluate import sharpe as sr
from foxhunt.evaluate.evaluation import MODEL, Scoring, evaluate_run, evaluate_window
from foxhunt.evaluate.records import fold_record
from foxhunt.evaluate.score_memo import ScoreMemo


@pytest.fixture(scope="module")
def eurusd():
    return eurusd_arrays()


@pytest.fixture(scope="module")
def real_series(eurusd):
    """Gross and net P&L of each policy on the window, one row each (the flat ones constant)."""
    records = window_records(eurusd)
    return np.stack([p for r in records.values() for p in (r.gross_pnl(), r.pnl(COST))])


@pytest.mark.parametrize("block", [0, 1, 7, 64])
def test_stacked_bootstrap_rows_equal_resamples_built_bar_by_bar(real_series, block):
    got = sr.stacked_bootstrap_sharpes(real_series, resamples=60, block=block, seed=3)
    want = np.stack([materialised_bootstrap(x, 60, block, 3) for x in real_series])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_a_series_far_from_zero_keeps_its_precision_when_stacked(real_series):
    shifted = real_series[:2] + 0.05  # a large mean beside per-bar moves of a few bp
    got = sr.stacked_bootstrap_sharpes(shifted, resamples=40, seed=1)
    want = np.stack([materialised_bootstrap(x, 40, 0, 1) for x in shifted])
    np.testing.assert_allclose(got, want, rtol=1e-9)


def test_each_stacked_row_is_the_series_bootstrapped_alone_bit_for_bit(real_series, monkeypatch):
    alone = np.stack([sr.block_bootstrap_sharpes(x, resamples=50, seed=2) for x in real_series])
    assert np.array_equal(sr.stacked_bootstrap_sharpes(real_series, resamples=50, seed=2), alone)
    monkeypatch.setattr(sr, "_STACKED_CELLS", 3 * VAL)  # groups of 2 rows: the rows split across groups
    monkeypatch.setattr(sr, "_BOOTSTRAP_CELLS", 7 * 100)  # batches of 2 resamples and a last short one
    assert np.array_equal(sr.stacked_bootstrap_sharpes(real_series, resamples=50, seed=2), alone)


def test_a_window_equals_the_plain_scoring_in_every_figure(eurusd):
    records = window_records(eurusd)
    scoring = Scoring(cost=COST, spread=2e-5, resamples=150, seed=4)
    got = evaluate_window(records, scoring, 0)
    assert got.policies["flat"].net.sharpe_ci_low == 0.0  # a constant series stays exactly 0
    assert not differences(got, plain_window(records, scoring, 0))


def test_a_window_with_a_set_block_equals_the_plain_scoring(eurusd):
    records = window_records(eurusd, START + 3_000, 2_500, fold=3)
    scoring = Scoring(cost=3 * COST, resamples=80, block=25, seed=9, level=0.9)
    assert not differences(evaluate_window(records, scoring, 3), plain_window(records, scoring, 3))


def test_a_window_without_resamples_equals_the_plain_scoring(eurusd):
    records = window_records(eurusd, START, 1_500)
    scoring = Scoring(cost=COST, resamples=0)  # a search's scoring: no interval, no paired test
    got = evaluate_window(records, scoring, 0)
    assert np.isnan(got.policies[MODEL].net.sharpe_ci_low)
    assert not differences(got, plain_window(records, scoring, 0))


def test_the_stitched_run_and_its_folds_equal_the_plain_scoring(eurusd):
    timestamp, features, targets = eurusd
    folds = STITCHED_FOLDS
    model, plans = stitched_plans(features)
    scoring = Scoring(cost=COST, resamples=100, seed=6)
    run = evaluate_run(features, targets, timestamp, folds, model, scoring, baselines=plans, memo=ScoreMemo())
    assert not differences(run.stitched, plain_window(run.records, scoring))
    for f, window in zip(folds, run.folds, strict=True):
        records = {
            name: fold_record(f.fold, f.val_start, pos, timestamp, targets[:, 0])
            for name, pos in {MODEL: model[f.fold], **plans[f.fold]}.items()
        }
        assert not differences(window, plain_window(records, scoring, f.fold)), f.fold


def test_the_memo_scores_a_repeated_record_once_within_a_window(eurusd):
    records = window_records(eurusd)
    records["model_again"] = records[MODEL]
    memo = ScoreMemo()
    scoring = Scoring(cost=COST, resamples=50, seed=1)
    window = evaluate_window(records, scoring, 0, memo)
    assert (memo.hits, memo.misses) == (1, len(records) - 1)
    assert window == evaluate_window(records, scoring, 0)


def test_the_shared_pass_statistics_equal_each_function_alone_bit_for_bit(real_series):
    series = [
        *real_series,
        real_series[0] + 0.05,
        np.zeros(5),
        np.array([1e-4]),
        np.array([]),
        np.array([1.0, np.nan]),
    ]
    for x in series:
        alone = (sr.sharpe_ratio(x), sr.skewness(x), sr.kurtosis(x), sr.hac_standard_error(x))
        np.testing.assert_array_equal(sr.series_statistics(x), alone)
