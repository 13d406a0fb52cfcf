"""The supervised baselines: the hold rule, fits on the training slice only, ridge by hand, a planted signal found."""

import numpy as np
import pytest
import torch
from support.signal_arrays import FOLDS, signal_arrays

from foxhunt.data.folds import FoldRange, generate_walk_forward_indices
from foxhunt.evaluate import mlp_fit
from foxhunt.evaluate import supervised as sv
from foxhunt.evaluate.baselines import BASELINE_NAMES, fold_baselines
from foxhunt.evaluate.evaluation import Scoring, evaluate_run

COST = 1e-4


def test_the_hold_rule_holds_a_cleared_signal_for_its_horizon_reverses_on_the_other_sign_and_restarts_on_the_same():
    # threshold 1: bars 1, 5, 6 and 9 clear (|ŷ| > 1); 2.0 at bar 1 is held for 3 bars (1, 2, 3),
    # −1.5 at bar 5 is held from 5, the same sign at 6 restarts the clock (6, 7, 8), 1.2 at 9 reverses.
    prediction = torch.tensor([0.5, 2.0, 0.9, -0.9, 0.0, -1.5, -1.1, 0.2, 0.0, 1.2, 0.0, 0.0, 0.0])
    got = sv.hold_positions(prediction, horizon=3, threshold=1.0)
    assert got.tolist() == [0, 1, 1, 1, 0, -1, -1, -1, -1, 1, 1, 1, 0]


def test_the_hold_rule_with_a_one_bar_horizon_trades_only_the_bars_that_clear():
    prediction = torch.tensor([2.0, 0.5, -3.0, -0.5])
    assert sv.hold_positions(prediction, horizon=1, threshold=1.0).tolist() == [1, 0, -1, 0]


def test_a_prediction_exactly_at_the_threshold_does_not_clear():
    assert sv.hold_positions(torch.tensor([1.0, -1.0]), horizon=5, threshold=1.0).tolist() == [0, 0]


def test_the_threshold_is_the_margin_times_a_round_trip():
    assert sv.hold_threshold(1e-4) == pytest.approx(1.5 * 2 * 1e-4)
    assert sv.hold_threshold(2e-4, margin=1.0) == pytest.approx(4e-4)


def test_defaults_are_pinned():
    assert sv.SUPERVISED_HORIZONS == (15, 60)
    assert sv.HOLD_MARGIN == 1.5
    assert (sv.MLP_HIDDEN, sv.MLP_STEPS, sv.MLP_BATCH, sv.MLP_LR) == (32, 300, 1024, 1e-3)
    assert (sv.TAIL_SHARE, sv.MLP_CHECK_EVERY, sv.MLP_CLIP, sv.SUPERVISED_SEED) == (0.2, 25, 5.0, 0)
    assert sv.RIDGE_LAMBDAS == (1e-2, 1e-1, 1.0, 10.0, 100.0)
    assert sv.MIN_SPLIT_ROWS == 100
    assert sv.SUPERVISED_NAMES == ("ridge_15", "ridge_60", "mlp_15", "mlp_60")
    assert BASELINE_NAMES[-4:] == sv.SUPERVISED_NAMES
    assert [sv.target_column(h) for h in sv.SUPERVISED_HORIZONS] == [2, 3]


def test_a_horizon_without_a_target_column_is_refused():
    with pytest.raises(ValueError, match="horizon 30"):
        sv.target_column(30)


@pytest.fixture(scope="module")
def arrays():
    return signal_arrays(6000, seed=3)


def small_fold() -> FoldRange:
    # 4,000 training rows, the 60-bar purge, 1,000 validation rows, then rows no fold uses.
    return FoldRange(0, 500, 4500, 4560, 5560, 0.0)


def closed_form_ridge(x: np.ndarray, y: np.ndarray, lam: float):
    """(Z'Z / n + λI) w = Z'(y − ȳ) / n on Z = (x − mean) / std of these rows: a predictor of new rows."""
    mean, std = x.mean(0), x.std(0)
    z = (x - mean) / std
    n, k = z.shape
    w = np.linalg.solve(z.T @ z / n + lam * np.eye(k), z.T @ (y - y.mean()) / n)
    return lambda new: ((new - mean) / std) @ w + y.mean()


def test_ridge_of_the_15_bar_return_is_the_closed_form_with_the_penalty_the_held_back_tail_picks(arrays):
    fold = small_fold()
    x = arrays.features[fold.train_slice].astype(np.float64)
    y = arrays.targets[fold.train_slice, 2].astype(np.float64)  # the 15-bar forward return
    tail = 4000 - 800  # the last 20% of the 4,000 training rows; the 15 rows before it are not fitted
    errors = [
        np.mean((closed_form_ridge(x[: tail - 15], y[: tail - 15], lam)(x[tail:]) - y[tail:]) ** 2)
        for lam in sv.RIDGE_LAMBDAS
    ]
    lam = sv.RIDGE_LAMBDAS[int(np.argmin(errors))]
    assert lam == sv.ridge_penalty(torch.from_numpy(x), torch.from_numpy(y), 15)
    expected = closed_form_ridge(x, y, lam)(arrays.features[fold.val_slice].astype(np.float64))
    got = sv.supervised_predictions(torch.from_numpy(arrays.features), torch.from_numpy(arrays.targets), fold)
    np.testing.assert_allclose(got["ridge_15"].numpy(), expected, rtol=1e-6, atol=1e-12)


def test_on_noise_the_held_back_tail_picks_a_strong_penalty_and_on_a_clear_signal_the_weakest():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((600, 42))  # few rows for 42 features: a weak penalty fits the noise
    noise = rng.standard_normal(600)
    assert sv.ridge_penalty(torch.from_numpy(x), torch.from_numpy(noise), 15) >= 10.0
    clear = x[:, 3] + 0.1 * noise
    assert sv.ridge_penalty(torch.from_numpy(x), torch.from_numpy(clear), 15) == 1e-2


def poisoned(arrays, fold: FoldRange) -> tuple[torch.Tensor, torch.Tensor]:
    """The arrays with every row outside the training slice changed, except the validation features."""
    features, targets = arrays.features.copy(), arrays.targets.copy()
    outside = np.r_[0 : fold.train_start, fold.train_end : len(features)]
    targets[outside] = 1.0  # a 100% return: any fit that reads these rows changes
    not_traded = np.r_[0 : fold.train_start, fold.train_end : fold.val_start, fold.val_end : len(features)]
    features[not_traded] = 50.0
    return torch.from_numpy(features), torch.from_numpy(targets)


def test_every_model_is_fitted_on_the_training_slice_only(arrays):
    fold = small_fold()
    clean = sv.supervised_predictions(
        torch.from_numpy(arrays.features), torch.from_numpy(arrays.targets), fold
    )
    dirty = sv.supervised_predictions(*poisoned(arrays, fold), fold)
    assert set(clean) == set(sv.SUPERVISED_NAMES)
    for name in sv.SUPERVISED_NAMES:
        torch.testing.assert_close(dirty[name], clean[name], rtol=0, atol=0, msg=name)


def test_the_mlp_is_deterministic_by_seed_and_the_seed_matters(arrays):
    x, y = torch.from_numpy(arrays.features[:4000]), torch.from_numpy(arrays.targets[:4000, 2])
    val = torch.from_numpy(arrays.features[4100:4600])
    a = sv.fit_mlp(x, y, 15, seed=1, steps=50).predict(val)
    b = sv.fit_mlp(x, y, 15, seed=1, steps=50).predict(val)
    c = sv.fit_mlp(x, y, 15, seed=2, steps=50).predict(val)
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert not torch.equal(a, c)


def test_the_mlp_keeps_the_checkpoint_that_best_predicts_the_held_back_tail():
    # Pure noise: nothing to learn, so the tail prefers step 0 (the training mean, predicted everywhere).
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((3000, 42)).astype(np.float32))
    y = torch.from_numpy(rng.standard_normal(3000).astype(np.float32))
    fit = sv.fit_mlp(x, y, 15, steps=200)
    got = fit.predict(x[:100])
    fitted = y[: 3000 - 600 - 15].double()
    torch.testing.assert_close(got, torch.full_like(got, float(fitted.mean())), rtol=0, atol=1e-12)


def supervised_run(signal: bool):
    data = signal_arrays(seed=5, signal=signal)
    folds = generate_walk_forward_indices(data.timestamp, FOLDS, close_returns=data.targets[:, 0])
    scoring = Scoring(cost=COST, resamples=0)
    baselines = {f.fold: fold_baselines(data.features, data.targets, f, COST) for f in folds}
    flat = {f.fold: np.zeros(f.val_rows) for f in folds}
    run = evaluate_run(data.features, data.targets, data.timestamp, folds, flat, scoring, baselines=baselines)
    return run.stitched.policies


def test_on_a_planted_signal_every_supervised_baseline_beats_flat_after_costs():
    policies = supervised_run(signal=True)
    for name in sv.SUPERVISED_NAMES:
        assert policies[name].net.sharpe > 10.0, (name, policies[name].net.sharpe)
    assert policies["flat"].net.sharpe == 0.0


def test_on_the_driftless_twin_the_supervised_baselines_earn_nothing_clear():
    policies = supervised_run(signal=False)
    for name in sv.SUPERVISED_NAMES:
        net = policies[name].net
        assert net.sharpe <= 2 * net.sharpe_se, (name, net.sharpe, net.sharpe_se)
        assert net.exposure < 0.5, (name, net.exposure)


def test_the_feature_oracle_is_the_best_supervised_model_and_ignores_the_others():
    sharpes = {"model": 9.0, "ridge": 8.0, "ridge_15": 1.0, "mlp_60": 3.0, "buy_and_hold": 7.0}
    assert sv.feature_oracle(sharpes) == ("mlp_60", 3.0)
    assert sv.feature_oracle({"model": 1.0}) is None


def test_a_training_slice_too_short_for_a_tail_gets_the_default_penalty_and_a_mean_predicting_mlp():
    rng = np.random.default_rng(2)
    x = torch.from_numpy(rng.standard_normal((200, 42)))
    y = torch.from_numpy(rng.standard_normal(200))
    assert sv.split_for_tail(200, 60) is None and sv.split_for_tail(1000, 60) == (740, 800)
    assert sv.ridge_penalty(x, y, 60) == 1e-2
    got = sv.fit_mlp(x.float(), y.float(), 60).predict(x[:5].float())
    torch.testing.assert_close(got, torch.full_like(got, float(y.mean())), rtol=0, atol=1e-6)


def test_the_stitched_report_names_the_feature_oracle_and_the_models_share_of_it():
    from support.evaluation_cases import MINUTE, T0

    from foxhunt.evaluate.evaluation import MODEL, evaluate_window, fold_record
    from foxhunt.evaluate.stitched_report import stitched_report

    rng = np.random.default_rng(0)
    returns = rng.normal(0.0, 4e-4, 2000)
    timestamp = T0 + np.arange(2000, dtype=np.int64) * MINUTE
    oracle = np.sign(returns)  # a perfect foresight record: the best by far
    half = oracle * (rng.random(2000) < 0.5)  # the model trades half of the oracle's bars
    positions = {MODEL: half, "buy_and_hold": np.ones(2000), "ridge_15": oracle, "mlp_60": -oracle}
    records = {name: fold_record(-1, 0, pos, timestamp, returns) for name, pos in positions.items()}
    stitched = evaluate_window(records, Scoring(cost=0.0, resamples=0))
    sharpe = stitched.policies["ridge_15"].net.sharpe
    share = stitched.policies[MODEL].net.sharpe / sharpe
    line = next(x for x in stitched_report(stitched, 1) if "feature oracle" in x)
    assert f"ridge_15): Sharpe {sharpe:.2f}" in line and f"earns {share:.0%} of it" in line


@pytest.mark.parametrize("fit_rows", [40, 900])  # fewer fitted rows than the steps draw (160), and more
# All steps' rows at once (what a graphed fit copies), and gathered as each step asks (an eager fit).
@pytest.mark.parametrize("step_rows", [sv._step_rows_standardised, mlp_fit._StepRows])
def test_the_steps_rows_are_standardised_as_each_row_on_its_own_whichever_comes_first(fit_rows, step_rows):
    g = torch.Generator().manual_seed(5)
    features = torch.randn(1000, 42, generator=g) * 4
    mean, std = features[:fit_rows].mean(0), features[:fit_rows].std(0)
    rows = torch.randint(0, fit_rows, (8, 20), generator=g)
    got = step_rows(features, rows, fit_rows, mean, std)
    assert got.device == features.device
    for step in range(8):
        assert got[step].shape == (20, 42)
        for j, row in enumerate(rows[step].tolist()):
            want = ((features[row] - mean) / std).clamp(-sv.MLP_CLIP, sv.MLP_CLIP)
            assert torch.equal(got[step, j], want)


def test_a_slice_with_exactly_the_minimum_rows_to_fit_and_to_hold_back_gets_a_tail():
    # 500 rows: the last 100 held back, the 300 before them purged for a 300-bar horizon, 100 fitted.
    assert sv.split_for_tail(500, 300) == (100, 400)
    assert sv.split_for_tail(500, 301) is None


def test_the_supervised_baselines_open_only_on_predictions_beyond_one_and_a_half_round_trips():
    # cost 1e-4 per unit: a round trip costs 2e-4, the threshold is 3e-4; 2.5e-4 pays one trip but not 1.5.
    prediction = torch.tensor([2.5e-4, -3.5e-4] + [0.0] * 18, dtype=torch.float64)
    got = sv.supervised_baselines(None, None, None, 1e-4, {name: prediction for name in sv.SUPERVISED_NAMES})
    assert got["ridge_15"].tolist() == [0] + [-1] * 15 + [0] * 4
    assert got["mlp_60"].tolist() == [0] + [-1] * 19


def test_the_oracle_record_counts_only_the_supervised_models_it_was_picked_from():
    sharpes = {"model": 9.0, "ridge": 8.0, "ridge_15": 1.0, "mlp_60": 3.0, "buy_and_hold": 7.0}
    record = sv.oracle_record(sharpes)
    assert (record["name"], record["net_sharpe"], record["models"]) == ("mlp_60", 3.0, 2)
    assert record["label"].startswith("best of 2 models")


def test_each_folds_mlps_are_seeded_with_the_supervised_seed_plus_the_fold_number(arrays):
    x, y = torch.from_numpy(arrays.features[:1700]), torch.from_numpy(arrays.targets[:1700])

    def predictions(fold: int, seed: int) -> dict:
        return sv.mlp_predictions(x, y, FoldRange(fold, 0, 1000, 1060, 1700, 0.0), seed=seed)

    third_fold, seed_three = predictions(3, 0), predictions(0, 3)
    first_fold = predictions(0, 0)
    for name in ("mlp_15", "mlp_60"):
        assert torch.equal(third_fold[name], seed_three[name])
        assert not torch.equal(third_fold[name], first_fold[name])


def test_the_folds_mlps_are_fitted_with_the_pinned_settings(arrays, monkeypatch):
    from foxhunt.evaluate import mlp_fit

    calls = []

    def spy(jobs, **settings):
        calls.append(settings)
        return [mlp_fit.MLPFit(lambda z: z[:, :1], 0.0, 1.0, 0.0, 1.0) for _ in jobs]

    monkeypatch.setattr(mlp_fit, "fit_mlps", spy)
    x, y = torch.from_numpy(arrays.features[:1700]), torch.from_numpy(arrays.targets[:1700])
    sv.mlp_predictions(x, y, FoldRange(2, 0, 1000, 1060, 1700, 0.0), seed=5)
    assert calls == [{"seed": 7, "hidden": 32, "steps": 300, "batch": 1024, "lr": 1e-3, "graphs": True}]
