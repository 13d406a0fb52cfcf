"""Out-of-sample evaluation: Sharpe statistics, the stitched record, baselines and the comparison.

Every formula is checked against an independent computation (a direct numpy formula, a number
worked out by hand, or a published example), and each test says which plausible mistake it catches.
"""

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from foxhunt import baselines as base
from foxhunt import sharpe as sr
from foxhunt.evaluation import (
    BUY_AND_HOLD,
    MODEL,
    Record,
    ScoreMemo,
    Scoring,
    compare,
    evaluate_run,
    evaluate_window,
    fold_record,
    score,
    stitch,
)
from foxhunt.features import FEATURE_NAMES
from foxhunt.trainer import periods_per_year, policy_metrics, policy_pnl
from foxhunt.walk_forward import FoldRange

MINUTE = 60_000_000_000
T0 = np.datetime64("2024-01-01T00:00", "ns").astype(np.int64)  # a Monday
NO_BOOTSTRAP = Scoring(resamples=0)
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


def minutes(n: int, every: int = 1) -> np.ndarray:
    return T0 + np.arange(n, dtype=np.int64) * every * MINUTE


def one_window(positions, returns, every: int = 1) -> Record:
    returns = np.asarray(returns, dtype=np.float64)
    return fold_record(0, 0, np.asarray(positions, dtype=np.float64), minutes(len(returns), every), returns)


# ---- Sharpe, its standard errors and its interval ---------------------------------------------
FIXED_RETURNS = np.array(
    [0.012, -0.004, 0.007, 0.001, -0.009, 0.015, 0.003, -0.002, 0.006, -0.011, 0.008, 0.004]
)


def test_sharpe_and_its_standard_error_equal_the_direct_formula():
    got = score(one_window(np.ones(12), FIXED_RETURNS, every=5), Scoring(cost=0.0, resamples=0)).gross
    periods = 11 / (11 * 5 / (365.25 * 1440))  # bars per year of 5-minute spacing
    per_bar = FIXED_RETURNS.mean() / FIXED_RETURNS.std(ddof=0)
    assert got.periods_per_year == pytest.approx(periods, rel=1e-12)
    assert got.sharpe == pytest.approx(per_bar * math.sqrt(periods), rel=1e-12)
    assert got.sharpe_se == pytest.approx(
        math.sqrt((1 + per_bar**2 / 2) / 12) * math.sqrt(periods), rel=1e-12
    )
    # The plausible mistakes are far outside that tolerance: ddof=1, trading-day annualisation.
    ddof1 = FIXED_RETURNS.mean() / FIXED_RETURNS.std(ddof=1) * math.sqrt(periods)
    assert abs(ddof1 / got.sharpe - 1) > 0.04
    assert abs(per_bar * math.sqrt(252) / got.sharpe - 1) > 0.9


def test_evaluation_agrees_with_the_trainers_policy_metrics():
    rng = np.random.default_rng(5)
    returns = rng.normal(0, 1e-3, 500)
    positions = rng.integers(-1, 2, 500).astype(float)
    record = one_window(positions, returns)
    net = score(record, Scoring(cost=2e-4, resamples=0)).net
    want = policy_metrics(
        torch.from_numpy(positions), torch.from_numpy(returns), 2e-4, periods_per_year(record.timestamp)
    )
    assert net.sharpe == pytest.approx(want["sharpe"], rel=1e-9)
    assert net.log_return == pytest.approx(want["total_return"], rel=1e-9)
    assert net.max_drawdown == pytest.approx(want["max_drawdown"], rel=1e-9)
    assert net.turnover == want["turnover"]
    assert net.hit_rate == pytest.approx(want["hit_rate"], rel=1e-6)  # the trainer divides in float32


def test_returns_drawdown_turnover_and_exposure_on_a_hand_built_record():
    record = one_window([1, 1, 0, -1], [0.01, -0.02, 0.03, 0.01])
    net = score(record, Scoring(cost=0.001, resamples=0)).net
    pnl = np.array([0.01 - 0.001, -0.02, -0.001, -0.01 - 0.001])  # entry, hold, exit, short
    assert net.log_return == pytest.approx(pnl.sum())
    assert net.total_return == pytest.approx(math.expm1(pnl.sum()))
    assert net.max_drawdown == pytest.approx(1 - math.exp(pnl.sum() - pnl[0]))  # peak after bar 0
    assert net.turnover == 3 and net.exposure == 0.75 and net.hit_rate == pytest.approx(1 / 3)
    assert net.annual_return == pytest.approx(math.expm1(pnl.mean() * net.periods_per_year))


def test_the_spread_costs_half_of_itself_per_unit_of_position_change():
    record = one_window([1, -1, -1, 0], [0.01, -0.02, 0.03, 0.01])
    with_spread = score(record, Scoring(cost=1e-4, spread=4e-4, resamples=0)).net
    as_cost = score(record, Scoring(cost=3e-4, resamples=0)).net
    assert with_spread.log_return == pytest.approx(as_cost.log_return, rel=1e-12)
    assert with_spread.log_return == pytest.approx(0.01 + 0.02 - 0.03 - 3e-4 * 4, rel=1e-12)


def test_skewness_and_kurtosis_are_the_population_standardised_third_and_fourth_moments():
    x = FIXED_RETURNS
    z = (x - x.mean()) / x.std(ddof=0)
    assert sr.skewness(x) == pytest.approx(sum(v**3 for v in z) / 12, rel=1e-12)
    assert sr.kurtosis(x) == pytest.approx(sum(v**4 for v in z) / 12, rel=1e-12)  # not excess: no − 3
    # ddof = 1 in the standardisation moves both by more than 10 %.
    z1 = (x - x.mean()) / x.std(ddof=1)
    assert abs(np.mean(z1**4) / sr.kurtosis(x) - 1) > 0.1
    assert sr.skewness(np.full(5, 0.01)) == 0.0 and sr.kurtosis(np.full(5, 0.01)) == 3.0


def test_hac_standard_error_equals_the_gmm_formula_with_bartlett_weights():
    x = np.array([0.5, -0.2, 0.9, 0.1, -0.7, 0.4, 0.3, -0.1])
    mu, var = x.mean(), x.var()
    m = np.stack([x - mu, (x - mu) ** 2 - var])  # Lo's moment conditions, by hand below
    cov = sum(np.outer(m[:, t], m[:, t]) for t in range(8)) / 8
    lag1 = sum(np.outer(m[:, t], m[:, t - 1]) for t in range(1, 8)) / 8
    cov = cov + 0.5 * (lag1 + lag1.T)  # Bartlett weight 1 − 1/2 for one lag
    grad = np.array([1 / math.sqrt(var), -mu / (2 * var**1.5)])
    assert sr.hac_standard_error(x, lags=1) == pytest.approx(math.sqrt(grad @ cov @ grad / 8), rel=1e-12)


def test_hac_standard_error_grows_with_autocorrelation_and_matches_lo_without_it():
    rng = np.random.default_rng(0)
    iid = rng.normal(0.01, 1.0, 20_000)
    assert sr.hac_standard_error(iid) == pytest.approx(
        sr.lo_standard_error(sr.sharpe_ratio(iid), iid.size), rel=0.1
    )
    ar = np.empty_like(iid)
    ar[0] = iid[0]
    for t in range(1, ar.size):
        ar[t] = 0.5 * ar[t - 1] + iid[t]
    ratio = sr.hac_standard_error(ar, lags=30) / sr.lo_standard_error(sr.sharpe_ratio(ar), ar.size)
    assert 1.5 < ratio < 1.9  # the mean's long-run sd grows by sqrt((1 + φ) / (1 − φ)) = 1.73


def test_bootstrap_resamples_are_circular_blocks_cut_to_the_series_length():
    rng = np.random.default_rng(1)
    x = rng.normal(0.1, 1.0, 23)
    got = sr.block_bootstrap_sharpes(x, resamples=5, block=4, seed=9)
    starts = np.random.default_rng(9).integers(0, 23, size=(5, 6))  # ceil(23 / 4) blocks each
    for i in range(5):
        rows = np.concatenate([(s + np.arange(4)) % 23 for s in starts[i]])[:23]
        assert got[i] == pytest.approx(x[rows].mean() / x[rows].std(), rel=1e-9)


def test_the_bootstrap_interval_covers_a_known_sharpe_at_about_its_level():
    rng = np.random.default_rng(42)
    true_sharpe = 0.1
    covered = 0
    for i in range(200):
        x = rng.normal(true_sharpe, 1.0, 400)
        low, high = sr.bootstrap_interval(x, level=0.9, resamples=300, seed=i)
        covered += low <= true_sharpe <= high
    assert 160 <= covered <= 194, covered  # 80 % to 97 % of 200 intervals at level 90 %


def test_the_interval_is_reported_annualised_and_contains_the_estimate():
    rng = np.random.default_rng(3)
    record = one_window(np.ones(2000), rng.normal(2e-4, 1e-3, 2000))
    net = score(record, Scoring(cost=0.0, resamples=400)).net
    low, high = sr.bootstrap_interval(record.pnl(0.0), level=0.95, resamples=400, seed=0)
    root = math.sqrt(net.periods_per_year)
    assert (net.sharpe_ci_low, net.sharpe_ci_high) == pytest.approx((low * root, high * root), rel=1e-12)
    assert net.sharpe_ci_low < net.sharpe < net.sharpe_ci_high


def test_probabilistic_sharpe_ratio_equals_the_hand_computed_value():
    # SR 0.3 against 0.1 over 50 bars, skew −1, kurtosis 6:
    # 1 − (−1)(0.3) + (6 − 1)/4 · 0.09 = 1.4125; z = 0.2 · √49 / √1.4125 = 1.17797; Φ(z) = 0.88060.
    assert sr.probabilistic_sharpe_ratio(0.3, 0.1, 50, -1.0, 6.0) == pytest.approx(0.88060, abs=1e-4)
    # √T instead of √(T − 1) gives 0.88296, a + on the skew term 0.93981, excess kurtosis 0.88438.


def test_deflated_sharpe_ratio_reproduces_the_papers_example():
    # Bailey & López de Prado (2014), section 5: annual SR 2.5 and V[SR] 0.5 over 250-day years,
    # N = 100 trials, T = 1250 days, skew −3, kurtosis 10: SR0 = 0.1132 per day, DSR = 0.9004.
    assert sr.expected_max_sharpe(100, 0.5 / 250) == pytest.approx(0.1132, abs=5e-5)
    dsr = sr.deflated_sharpe_ratio(2.5 / math.sqrt(250), 100, 0.5 / 250, 1250, -3.0, 10.0)
    assert dsr == pytest.approx(0.9004, abs=5e-5)  # with √T in place of √(T − 1): 0.90049


def test_a_single_trial_is_not_deflated():
    assert sr.deflated_sharpe_ratio(0.05, 1, 1e-4, 500) == sr.probabilistic_sharpe_ratio(0.05, 0.0, 500)


def test_psr_against_buy_and_hold_uses_its_sharpe_on_the_same_bars():
    rng = np.random.default_rng(8)
    returns = rng.normal(1e-4, 1e-3, 3000)
    record = one_window(np.sign(rng.normal(size=3000)), returns)
    bench = score(one_window(np.ones(3000), returns), NO_BOOTSTRAP)
    net = score(record, NO_BOOTSTRAP, bench).net
    pnl = record.pnl(NO_BOOTSTRAP.cost_per_unit)
    want = sr.probabilistic_sharpe_ratio(
        sr.sharpe_ratio(pnl), bench.net.sharpe_per_period, 3000, sr.skewness(pnl), sr.kurtosis(pnl)
    )
    assert net.psr_benchmark == pytest.approx(want, rel=1e-12)
    assert net.benchmark_sharpe == pytest.approx(bench.net.sharpe, rel=1e-12)


# ---- the stitched record -------------------------------------------------------------------------
def test_the_stitched_record_is_the_folds_records_joined_when_windows_do_not_overlap():
    rng = np.random.default_rng(11)
    n = 400
    timestamp, returns = minutes(n), rng.normal(0, 1e-3, n)
    windows = [(0, 100, 120), (1, 120, 250), (2, 250, 400)]
    positions = {f: rng.integers(-1, 2, e - s).astype(float) for f, s, e in windows}
    records = [fold_record(f, s, positions[f], timestamp, returns) for f, s, e in windows[::-1]]  # any order
    stitched = stitch(records)
    joined = np.concatenate(
        [
            policy_pnl(torch.from_numpy(positions[f]), torch.from_numpy(returns[s:e]), 3e-4).numpy()
            for f, s, e in windows
        ]
    )
    # Each handover pays the actual change from the last position before it, not an entry from flat.
    for f, s, _end in windows[1:]:
        handover = abs(positions[f][0] - positions[f - 1][-1]) - abs(positions[f][0])
        joined[s - 100] -= 3e-4 * handover
    np.testing.assert_allclose(stitched.pnl(3e-4), joined, rtol=1e-12)
    np.testing.assert_array_equal(stitched.timestamp, timestamp[100:400])
    assert stitched.periods_per_year() == pytest.approx(periods_per_year(timestamp[100:400]), rel=1e-12)


def test_in_overlapping_windows_the_most_recently_trained_fold_trades():
    returns = np.full(160, 1e-3)
    early = fold_record(0, 0, np.ones(100), minutes(160), returns)
    late = fold_record(1, 60, -np.ones(100), minutes(160), returns)
    stitched = stitch([late, early])
    np.testing.assert_array_equal(stitched.fold, [0] * 60 + [1] * 100)
    np.testing.assert_array_equal(stitched.positions, [1.0] * 60 + [-1.0] * 100)
    changes = stitched.position_changes()
    assert changes[0] == 1 and changes[60] == 2  # the handover from long to short
    assert changes.sum() == 3


def test_gaps_between_windows_do_not_dilute_the_annualisation():
    timestamp = minutes(3000)
    records = [fold_record(f, s, np.ones(500), timestamp, np.zeros(3000)) for f, s in ((0, 0), (1, 2500))]
    assert stitch(records).periods_per_year() == pytest.approx(365.25 * 1440, rel=1e-12)


# ---- baselines -------------------------------------------------------------------------------------
def hand_built_bars(close: list[float]):
    """Features with column 0 = the bar's own log return, targets = the next bar's (as features.py builds them)."""
    log_close = np.log(np.asarray(close))
    n = len(close) - 1  # the last close only serves as the previous bar's target
    features = np.zeros((n, len(FEATURE_NAMES)), dtype=np.float32)
    features[1:, 0] = np.diff(log_close[:n])
    targets = np.zeros((n, 4), dtype=np.float32)
    targets[:, 0] = np.diff(log_close)
    return torch.from_numpy(features), torch.from_numpy(targets)


def test_the_last_return_sign_rule_reads_the_bars_own_return_never_the_target():
    features, targets = hand_built_bars([100, 101, 100, 100, 102, 103, 101, 100])
    got = base.last_return_sign_positions(features, 1, 7).tolist()
    assert got == [1.0, -1.0, 0.0, 1.0, 1.0, -1.0]  # signs of 101/100, 100/101, 100/100, 102/100, ...
    assert got != torch.sign(targets[1:7, 0]).tolist()  # the look-ahead rule would hold these


@pytest.mark.parametrize("device", DEVICES)
def test_threshold_trading_holds_until_a_prediction_pays_for_the_switch(device):
    prediction = torch.tensor([0.5, 2.0, 0.5, -0.5, -3.0, 0.2, 1.5, -1.0], dtype=torch.float64, device=device)
    assert base.threshold_positions(prediction, 1.0).tolist() == [0, 1, 1, 1, -1, -1, 1, 1]
    # Going flat below the threshold would give [0, 1, 0, 0, -1, 0, 1, 0].


def ridge_by_lstsq(x: np.ndarray, y: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """The reference: standardise, then least squares on [Z; √(nλ) I] w = [y − ȳ; 0]."""
    mean, std = x.mean(0), x.std(0)
    z = (x - mean) / std
    n, k = x.shape
    a = np.vstack([z, math.sqrt(n * lam) * np.eye(k)])
    b = np.concatenate([y - y.mean(), np.zeros(k)])
    w = np.linalg.lstsq(a, b, rcond=None)[0]
    return w, z @ w + y.mean()


@pytest.mark.parametrize("device", DEVICES)
def test_ridge_on_the_device_equals_numpys_least_squares_solution(device):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3000, 42)) * rng.uniform(0.1, 50, 42) + rng.uniform(-100, 100, 42)
    x[:, 5] = x[:, 4] + rng.normal(size=3000) * 1e-3  # a nearly collinear pair: the penalty matters
    y = x @ rng.normal(size=42) * 1e-3 + rng.normal(size=3000)
    features = torch.from_numpy(x).to(device)
    fit = base.fit_ridge(features, torch.from_numpy(y).to(device), lam=0.05)
    w, prediction = ridge_by_lstsq(x, y, 0.05)
    np.testing.assert_allclose(fit.weights.cpu().numpy(), w, rtol=1e-7, atol=1e-10)
    got = base.predict_ridge(fit, features).cpu().numpy()
    np.testing.assert_allclose(got, prediction, rtol=1e-7, atol=1e-10)


def test_a_constant_feature_gets_no_weight_and_no_nan():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(200, 3))
    x[:, 1] = 7.0
    fit = base.fit_ridge(torch.from_numpy(x), torch.from_numpy(rng.normal(size=200)), lam=0.1)
    assert fit.weights[1] == 0.0 and torch.isfinite(fit.weights).all()


def synthetic_run(n: int = 3000, seed: int = 6, device: str = "cpu"):
    rng = np.random.default_rng(seed)
    close = 100 * np.exp(np.cumsum(rng.normal(0, 1e-3, n + 1)))
    features, targets = hand_built_bars(list(close))
    features[:, 1:] = torch.from_numpy(rng.normal(size=(n, len(FEATURE_NAMES) - 1)).astype(np.float32))
    folds = [FoldRange(k, 0 + 500 * k, 1000 + 500 * k, 1000 + 500 * k, 1500 + 500 * k, 0.0) for k in range(3)]
    return features.to(device), targets.to(device), minutes(n), folds


def test_the_ridge_baseline_is_fitted_on_the_training_slice_only():
    features, targets, _, folds = synthetic_run()
    before = base.fold_baselines(features, targets, folds[0], 1e-5)["ridge"]
    targets[folds[0].val_slice, 0] *= -3.0  # the future changes; what was learnt from the past must not
    assert torch.equal(base.fold_baselines(features, targets, folds[0], 1e-5)["ridge"], before)


@pytest.mark.parametrize("device", DEVICES)
def test_baselines_hold_their_rules_over_the_validation_window(device):
    features, targets, _, folds = synthetic_run(device=device)
    got = base.fold_baselines(features, targets, folds[1], 1e-4)
    assert list(got) == list(base.BASELINE_NAMES)
    assert all(p.shape == (folds[1].val_rows,) and p.device == features.device for p in got.values())
    assert got["buy_and_hold"].eq(1).all() and got["flat"].eq(0).all()
    assert torch.equal(got["last_return_sign"], torch.sign(features[folds[1].val_slice, 0]))
    assert set(got["ridge"].unique().tolist()) <= {-1.0, 0.0, 1.0}


# ---- the model against the baselines ---------------------------------------------------------------
def test_a_flat_policy_has_a_sharpe_of_zero_known_exactly():
    net = score(one_window(np.zeros(50), np.linspace(-1e-3, 1e-3, 50)), Scoring(resamples=50)).net
    assert (net.sharpe, net.sharpe_se, net.sharpe_se_hac, net.sharpe_ci_low, net.sharpe_ci_high) == (
        0,
        0,
        0,
        0,
        0,
    )
    assert net.psr_zero == 0.0 and net.turnover == 0 and net.hit_rate == 0


def test_scoring_refuses_a_negative_spread_naming_it():
    with pytest.raises(ValueError, match="spread"):
        Scoring(spread=-1e-4)


def test_compare_gives_each_baseline_the_paired_tests_verdict_and_difference():
    rng = np.random.default_rng(9)
    returns = rng.normal(1e-4, 1e-3, 1000)
    records = {
        MODEL: one_window(np.ones(1000), returns),
        "flat": one_window(np.zeros(1000), returns),
        "short": one_window(-np.ones(1000), returns),
    }
    scoring = Scoring(cost=0.0, resamples=200)
    scored = {name: score(rec, scoring) for name, rec in records.items()}
    got = compare(scored[MODEL], {k: v for k, v in scored.items() if k != MODEL}, records, scoring)
    assert got["short"].verdict == "above" and got["short"].difference_ci_low > 0
    assert got["short"].difference == pytest.approx(2 * scored[MODEL].net.sharpe)
    assert got["short"].beta == pytest.approx(-1.0)
    assert got["flat"].difference == pytest.approx(scored[MODEL].net.sharpe)


@pytest.mark.parametrize("device", DEVICES)
def test_evaluate_run_scores_every_fold_and_the_stitched_record_beside_the_baselines(device):
    features, targets, timestamp, folds = synthetic_run(device=device)
    model = {f.fold: torch.sign(features[f.val_slice, 0]) for f in folds}  # the model is the sign rule
    run = evaluate_run(features, targets, timestamp, folds, model, Scoring(resamples=100))
    assert [w.fold for w in run.folds] == [0, 1, 2] and run.stitched.fold == -1
    assert run.stitched.n_bars == 1500 and run.stitched.start_ns == timestamp[1000]
    assert list(run.stitched.policies) == [MODEL, *base.BASELINE_NAMES]
    for window in [*run.folds, run.stitched]:
        standing = window.standings["last_return_sign"]
        assert standing.difference == 0.0 and standing.verdict == "no clear difference"
    stitched_pnl = run.records[MODEL].pnl(1e-4)
    assert run.stitched.policies[MODEL].net.sharpe == pytest.approx(
        stitched_pnl.mean() / stitched_pnl.std() * math.sqrt(periods_per_year(timestamp[1000:2500])), rel=1e-6
    )
    json.dumps(dataclasses.asdict(run.stitched))  # reports serialise it as it is


# ---- the score memo ------------------------------------------------------------------------------
MEMO_SCORING = Scoring(cost=1e-4, resamples=40)  # a bootstrap, so no figure is NaN and equality is exact


def memo_window(seed: int = 3, n: int = 400) -> dict[str, Record]:
    rng = np.random.default_rng(seed)
    returns = rng.normal(0, 1e-3, n)
    names = (MODEL, BUY_AND_HOLD, "flat", "ridge")
    positions = {MODEL: rng.integers(-1, 2, n), BUY_AND_HOLD: np.ones(n), "flat": np.zeros(n),
                 "ridge": rng.integers(-1, 2, n)}  # fmt: skip
    return {name: one_window(positions[name].astype(np.float64), returns) for name in names}


def test_a_memo_gives_what_scoring_gives_and_scores_each_record_once():
    window, memo = memo_window(), ScoreMemo()
    plain = evaluate_window(window, MEMO_SCORING, 0)
    assert evaluate_window(window, MEMO_SCORING, 0, memo) == plain
    assert (memo.misses, memo.hits) == (4, 0)
    assert evaluate_window(window, MEMO_SCORING, 0, memo) == plain
    assert (memo.misses, memo.hits) == (4, 4)


def test_a_memo_scores_again_a_record_whose_positions_changed():
    window, memo = memo_window(), ScoreMemo()
    evaluate_window(window, MEMO_SCORING, 0, memo)
    positions = window[MODEL].positions.copy()
    positions[7] = -positions[7] if positions[7] else 1.0  # one bar traded differently
    window[MODEL] = dataclasses.replace(window[MODEL], positions=positions)
    again = evaluate_window(window, MEMO_SCORING, 0, memo)
    assert (memo.misses, memo.hits) == (5, 3)  # the new model only; the baselines are looked up
    assert again == evaluate_window(window, MEMO_SCORING, 0)


def test_a_memo_keys_on_the_scoring_the_benchmark_and_the_folds():
    window, memo = memo_window(), ScoreMemo()
    model, bench = window[MODEL], score(window[BUY_AND_HOLD], MEMO_SCORING)
    memo.score(model, MEMO_SCORING, bench)
    other_cost = Scoring(cost=3e-4, resamples=40)
    assert memo.score(model, other_cost, bench) == score(model, other_cost, bench)
    other_bench = score(window["ridge"], MEMO_SCORING)
    assert memo.score(model, MEMO_SCORING, other_bench) == score(model, MEMO_SCORING, other_bench)
    # The same rows and positions cut into two folds' segments pay a second entry from flat.
    fold = np.where(np.arange(len(model)) < 200, 0, 1)
    two_segments = dataclasses.replace(model, fold=fold)
    assert memo.score(two_segments, MEMO_SCORING, bench) == score(two_segments, MEMO_SCORING, bench)
    assert (memo.misses, memo.hits) == (4, 0)
