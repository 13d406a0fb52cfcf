"""Stitching the folds' records, the baselines, comparing the model with them, and the memo of scored records."""

import dataclasses
import json
import math

import numpy as np
import pytest
import torch
from support.record_cases import DEVICES, minutes, one_window

from foxhunt.data.features import FEATURE_NAMES
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate import baselines as base
from foxhunt.evaluate.evaluation import (
    BUY_AND_HOLD,
    MODEL,
    Record,
    Scoring,
    compare,
    evaluate_run,
    evaluate_window,
    fold_record,
    score,
    stitch,
)
from foxhunt.evaluate.score_memo import ScoreMemo
from foxhunt.train import periods_per_year, policy_pnl


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
    changes = stitched.position_changes
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


def test_threshold_trading_takes_the_position_of_a_first_bar_that_clears():
    prediction = torch.tensor([2.0, 0.5, -0.5], dtype=torch.float64)
    assert base.threshold_positions(prediction, 1.0).tolist() == [1, 1, 1]


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


def test_identical_records_are_stacked_once_with_or_without_a_memo(monkeypatch):
    # A device's reduction rounds by the stack's shape: a run (memo) and `foxhunt evaluate` (none) must
    # stack the same records for their figures to agree bit for bit.
    import foxhunt.evaluate.evaluation as evaluation

    stacks: list[int] = []
    real = evaluation.stacked_figures

    def counted(rows, *args, **kwargs):
        stacks.append(len(rows))
        return real(rows, *args, **kwargs)

    monkeypatch.setattr(evaluation, "stacked_figures", counted)
    window = memo_window()
    window["ridge_twin"] = dataclasses.replace(window["ridge"], positions=window["ridge"].positions.copy())
    plain = evaluate_window(window, MEMO_SCORING, 0)
    assert stacks == [2, 6]  # buy-and-hold alone; model, flat and ridge (its twin once), gross and net
    assert evaluate_window(window, MEMO_SCORING, 0, ScoreMemo()) == plain
    assert stacks == [2, 6, 2, 6]
    assert plain.policies["ridge_twin"] == plain.policies["ridge"]


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


def test_scored_figures_are_read_only_so_no_reader_changes_the_figures_a_memo_shares():
    window, memo = memo_window(), ScoreMemo()
    evaluate_window(window, MEMO_SCORING, 0, memo)
    shared = evaluate_window(window, MEMO_SCORING, 0, memo).policies["ridge"].net
    with pytest.raises(dataclasses.FrozenInstanceError):
        shared.sharpe = 0.0  # type: ignore[misc]


def test_the_annual_return_compounds_the_mean_bar_log_return_over_a_year_of_minutes():
    # Catches: the mean over n − 1 bars (a hand-built record of large returns saturates at −100% and hides it).
    returns = np.tile([2e-6, 0.0], 50)  # 1e-6 a bar on average, one bar a minute
    net = score(one_window(np.ones(100), returns), Scoring(cost=0.0, resamples=0)).net
    minutes_a_year = 365.25 * 24 * 60
    assert net.annual_return == pytest.approx(math.expm1(1e-6 * minutes_a_year), rel=1e-9)


def test_the_best_baseline_is_the_one_with_the_highest_sharpe_after_costs():
    # Catches: the lowest Sharpe named best, or the Sharpe before costs (the churning sign rule's).
    returns = 1e-4 + 1e-3 * np.tile([1.0, -1.0], 100)
    positions = {MODEL: np.zeros(200), BUY_AND_HOLD: np.ones(200), "flat": np.zeros(200)}
    positions["churn"] = np.sign(returns)  # earns every bar's move, pays 2 × 1e-3 a bar to switch
    records = {name: one_window(pos, returns) for name, pos in positions.items()}
    window = evaluate_window(records, Scoring(cost=1e-3, resamples=0))
    assert window.best_baseline == BUY_AND_HOLD
