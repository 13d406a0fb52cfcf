"""The fast scoring against straightforward reference implementations, on real EURUSD bars, to 1e-9.

The scoring shares work (one bootstrap draw matrix per length and seed, each series' draws reused by
the paired tests, the HAC error in O(T), one Gram matrix per training slice); each test here computes
the same figure the plain way (explicit lag matrices, materialised resamples, a textbook ridge) and
asks for the same number.
"""

import math

import numpy as np
import pytest
import torch
from support.data_files import EURUSD

from foxhunt.data.bars import read_bars
from foxhunt.data.features import FEATURE_NAMES, compute_features
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate import paired
from foxhunt.evaluate import sharpe as sr
from foxhunt.evaluate.baselines import fold_baselines
from foxhunt.evaluate.evaluation import MODEL, Scoring, evaluate_window, score
from foxhunt.evaluate.records import fold_record
from foxhunt.evaluate.ridge import fit_ridge, predict_ridge
from foxhunt.evaluate.score_memo import ScoreMemo
from foxhunt.evaluate.supervised import ridge_predictions

COST = 1e-4
TRAIN, VAL = 20_000, 6_000  # rows of the EURUSD slice: a training slice and the window after it


@pytest.fixture(scope="module")
def eurusd():
    table = compute_features(read_bars([str(EURUSD)]))
    return table.timestamp, table.features, table.targets


@pytest.fixture(scope="module")
def real_pnl(eurusd):
    """Net P&L of trading the sign of the last 1-bar return on real bars: autocorrelated and fat-tailed."""
    timestamp, features, targets = eurusd
    positions = np.sign(features[TRAIN : TRAIN + VAL, FEATURE_NAMES.index("log_return_1")]).astype(np.float64)
    record = fold_record(0, TRAIN, positions, timestamp, targets[:, 0])
    return record.pnl(COST)


def newey_west_reference(x: np.ndarray, lags: int) -> float:
    """Lo's GMM standard error with explicit 2 × 2 autocovariance matrices of the moments per lag."""
    n, mean, std = x.size, x.mean(), x.std()
    moments = np.stack([x - mean, (x - mean) ** 2 - std**2])  # 2 × T
    omega = np.zeros((2, 2))
    for lag in range(lags + 1):
        gamma = moments[:, lag:] @ moments[:, : n - lag].T / n
        omega += gamma if lag == 0 else (1 - lag / (lags + 1)) * (gamma + gamma.T)
    grad = np.array([1 / std, -mean / (2 * std**3)])
    return math.sqrt(grad @ omega @ grad / n)


@pytest.mark.parametrize("lags", [0, 1, 7, None, 400])
def test_the_hac_error_equals_the_sum_of_weighted_lag_matrices_on_real_pnl(real_pnl, lags):
    want = newey_west_reference(real_pnl, sr.newey_west_lags(real_pnl.size) if lags is None else lags)
    assert sr.hac_standard_error(real_pnl, lags) == pytest.approx(want, rel=1e-9)


def test_the_hac_error_keeps_its_precision_on_a_series_far_from_zero(real_pnl):
    shifted = real_pnl + 0.05  # a large mean beside per-bar moves of a few bp
    assert sr.hac_standard_error(shifted) == pytest.approx(
        newey_west_reference(shifted, sr.newey_west_lags(shifted.size)), rel=1e-9
    )


def materialised_bootstrap(x: np.ndarray, resamples: int, block: int, seed: int) -> np.ndarray:
    """Each resample built bar by bar from circular blocks, then its Sharpe ratio."""
    n = x.size
    starts = np.random.default_rng(seed).integers(0, n, size=(resamples, -(-n // block)))
    out = []
    for row in starts:
        bars = np.concatenate([(s + np.arange(block)) % n for s in row])[:n]
        out.append(x[bars].mean() / x[bars].std())
    return np.array(out)


@pytest.mark.parametrize("block", [0, 1, 7, 64])
def test_bootstrap_sharpes_equal_resamples_built_bar_by_bar_on_real_pnl(real_pnl, block):
    got = sr.block_bootstrap_sharpes(real_pnl, resamples=40, block=block, seed=5)
    want = materialised_bootstrap(real_pnl, 40, block or sr.default_block(real_pnl.size), 5)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=0)


def test_a_paired_test_from_each_streams_own_draws_equals_one_drawn_afresh(real_pnl):
    other = np.roll(real_pnl, 3)
    own = {"resamples": 300, "seed": 2}
    draws = (sr.block_bootstrap_sharpes(real_pnl, **own), sr.block_bootstrap_sharpes(other, **own))
    reused = paired.sharpe_difference(real_pnl, other, draws=draws, **own)
    sr.bootstrap_starts.cache_clear()  # afresh: the blocks drawn again, not the kept ones
    assert paired.sharpe_difference(real_pnl, other, **own) == reused


def test_paired_differences_resample_the_same_bars_in_both_streams(real_pnl):
    other = 0.5 * np.roll(real_pnl, 11)
    got = paired.paired_bootstrap_differences(real_pnl, other, resamples=30, block=9, seed=4)
    want = materialised_bootstrap(real_pnl, 30, 9, 4) - materialised_bootstrap(other, 30, 9, 4)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_a_window_scores_each_policy_as_if_it_were_scored_alone(eurusd):
    timestamp, features, targets = eurusd
    fold = FoldRange(0, 0, TRAIN - 60, TRAIN, TRAIN + VAL, 0.0)
    scoring = Scoring(cost=COST, resamples=200, seed=1)
    positions = {
        MODEL: -np.sign(features[TRAIN : TRAIN + VAL, 0]).astype(np.float64),
        **fold_baselines(torch.from_numpy(features), torch.from_numpy(targets), fold, COST),
    }
    records = {n: fold_record(0, TRAIN, p, timestamp, targets[:, 0]) for n, p in positions.items()}
    window = evaluate_window(records, scoring, 0)
    hold = score(records["buy_and_hold"], scoring)
    for name, record in records.items():
        alone = hold if name == "buy_and_hold" else score(record, scoring, hold)
        assert window.policies[name] == alone, name
    model_pnl = records[MODEL].pnl(COST)
    for name, standing in window.standings.items():
        test = paired.sharpe_difference(model_pnl, records[name].pnl(COST), resamples=200, seed=1)
        assert (standing.p_value, standing.verdict) == (test.p_value, test.verdict), name
        root = math.sqrt(records[MODEL].periods_per_year())
        assert standing.difference_ci_low == test.ci_low * root, name


def textbook_ridge(x: np.ndarray, y: np.ndarray, lam: float, new_x: np.ndarray) -> np.ndarray:
    """Standardise with the training rows' population stats, solve (Z'Z / n + λI) w = Z'(y − ȳ) / n."""
    x, new_x = x.astype(np.float64), new_x.astype(np.float64)
    mean, std = x.mean(0), x.std(0)
    std = np.where(std > 1e-8, std, 1.0)
    z = (x - mean) / std
    w = np.linalg.solve(z.T @ z / len(x) + lam * np.eye(x.shape[1]), z.T @ (y - y.mean()) / len(x))
    return (new_x - mean) / std @ w + y.mean()


def test_ridges_sharing_one_gram_matrix_predict_what_separate_textbook_fits_do(eurusd):
    _, features, targets = eurusd
    fold = FoldRange(0, 0, TRAIN - 60, TRAIN, TRAIN + VAL, 0.0)
    got = ridge_predictions(torch.from_numpy(features), torch.from_numpy(targets), fold, one_bar_lambda=0.05)
    assert list(got) == ["ridge", "ridge_15", "ridge_60"]
    x, val = features[: TRAIN - 60], features[TRAIN : TRAIN + VAL]
    want = textbook_ridge(x, targets[: TRAIN - 60, 0].astype(np.float64), 0.05, val)
    np.testing.assert_allclose(got["ridge"].numpy(), want, rtol=1e-9, atol=1e-15)
    alone = fit_ridge(torch.from_numpy(x), torch.from_numpy(targets[: TRAIN - 60, 0]), 0.05)
    assert torch.equal(got["ridge"], predict_ridge(alone, torch.from_numpy(val)))


def test_a_window_scored_again_from_the_memo_keeps_every_figure_and_standing(eurusd):
    timestamp, features, targets = eurusd
    last_sign = np.sign(features[TRAIN : TRAIN + VAL, FEATURE_NAMES.index("log_return_1")]).astype(np.float64)
    positions = {
        MODEL: -last_sign,
        "buy_and_hold": np.ones(VAL),
        "flat": np.zeros(VAL),
        "last_return_sign": last_sign,
    }
    records = {n: fold_record(0, TRAIN, p, timestamp, targets[:, 0]) for n, p in positions.items()}
    scoring = Scoring(cost=COST, resamples=200, seed=1)
    memo = ScoreMemo()
    first = evaluate_window(records, scoring, 0, memo)
    sr.bootstrap_starts.cache_clear()
    again = evaluate_window(records, scoring, 0, memo)  # every record a hit: the kept draws, the P&L again
    assert (memo.hits, memo.misses) == (len(records), len(records))
    assert again == first == evaluate_window(records, scoring, 0)
