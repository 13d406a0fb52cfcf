"""The persistent DQN trainer: reset in place, zero copy, guard, validation rollout, learning.

Tests that can run on any device take `device` from DEVICES (CUDA only where present)."""

import math
from dataclasses import asdict, replace

import numpy as np
import pytest
import torch
from support.trainer_cases import DEVICES, FOLDS, SMALL, TOLERANCE, planted_arrays, run_fold, target_network

from foxhunt.config import DQNConfig, FoldConfig
from foxhunt.data.bars import generate_sample_bars
from foxhunt.data.features import compute_features
from foxhunt.data.folds import generate_walk_forward_indices
from foxhunt.train import (
    FLAT,
    DQNTrainer,
    TrainingDiverged,
    periods_per_year,
    policy_metrics,
    rollout_positions,
    rollout_positions_reference,
    to_device,
)

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def synthetic():
    return planted_arrays()


def _in_place_pointers(trainer: DQNTrainer) -> tuple:
    """Every buffer a captured graph reads, by address."""
    return (
        [p.data_ptr() for p in trainer.params],
        [
            v.data_ptr()
            for s in [{"m": m} for m in (*trainer.exp_avg, *trainer.exp_avg_sq, trainer.adam_step)]
            for v in s.values()
        ],
        [p.data_ptr() for p in trainer.target_params],
        trainer.window.mean.data_ptr(),
        trainer.replay.reward.data_ptr(),
        trainer.loss_sum.data_ptr(),
        trainer.settings.gamma.data_ptr(),
    )


@pytest.mark.parametrize("device", DEVICES)
def test_reset_for_fold_makes_a_reused_trainer_equal_a_fresh_one(synthetic, device):
    data = to_device(*synthetic, torch.device(device))
    persistent = DQNTrainer(data, SMALL, max_train_rows=8000, seed=3)
    for fold_range in FOLDS[:2]:
        run_fold(persistent, fold_range)
    reused_metrics = run_fold(persistent, FOLDS[2])
    fresh = DQNTrainer(data, SMALL, max_train_rows=8000, seed=3)
    fresh_metrics = run_fold(fresh, FOLDS[2])
    for name, tensor in fresh.networks[0].state_dict().items():
        assert torch.equal(tensor, persistent.networks[0].state_dict()[name]), name
    for name, tensor in target_network(fresh).state_dict().items():
        assert torch.equal(tensor, target_network(persistent).state_dict()[name]), name
    assert reused_metrics == fresh_metrics
    assert persistent.histories[0].loss == fresh.histories[0].loss


@pytest.mark.parametrize("device", DEVICES)
def test_reset_for_fold_keeps_modules_optimizer_and_buffers(synthetic, device):
    data = to_device(*synthetic, torch.device(device))
    trainer = DQNTrainer(data, SMALL, max_train_rows=8000)
    run_fold(trainer, FOLDS[0])
    kept = (
        trainer.networks[0],
        trainer.target_params[0].data_ptr(),
        id(trainer.exp_avg),
        trainer.replay.action.data_ptr(),
        [p.data_ptr() for p in trainer.params],
        [
            v.data_ptr()
            for s in [{"m": m} for m in (*trainer.exp_avg, *trainer.exp_avg_sq, trainer.adam_step)]
            for v in s.values()
        ],
    )
    pointers = _in_place_pointers(trainer)
    trainer.reset_for_fold(1)
    assert kept == (
        trainer.networks[0],
        trainer.target_params[0].data_ptr(),
        id(trainer.exp_avg),
        trainer.replay.action.data_ptr(),
        [p.data_ptr() for p in trainer.params],
        [
            v.data_ptr()
            for s in [{"m": m} for m in (*trainer.exp_avg, *trainer.exp_avg_sq, trainer.adam_step)]
            for v in s.values()
        ],
    )
    assert pointers == _in_place_pointers(trainer)


@pytest.mark.parametrize("device", DEVICES)
def test_reset_for_fold_clears_adam_moments_replay_and_counters(synthetic, device):
    data = to_device(*synthetic, torch.device(device))
    trainer = DQNTrainer(data, SMALL, max_train_rows=8000)
    run_fold(trainer, FOLDS[0])
    trainer.reset_for_fold(1)
    for state in [{"m": m} for m in (*trainer.exp_avg, *trainer.exp_avg_sq, trainer.adam_step)]:
        for value in state.values():
            assert not torch.any(value), "Adam state survived the reset"
    assert not torch.any(trainer.replay.reward)
    assert torch.all(trainer.replay.action == FLAT)
    assert trainer.histories[0].loss == [] and trainer.steps_done == 0
    assert float(trainer.loss_sum) == 0.0 and float(trainer.q_absmax) == 0.0
    assert float(trainer.q_abs_sum) == 0.0 and trainer.histories[0].action_shares == []


def test_every_fold_reads_the_same_device_storage_without_copies(synthetic):
    features, targets, timestamp = synthetic
    data = to_device(features, targets, timestamp, CPU)
    assert data.features.data_ptr() == features.__array_interface__["data"][0], "CPU load must be zero-copy"
    assert data.uploaded_bytes == 0
    trainer = DQNTrainer(data, SMALL, max_train_rows=8000)
    pointers = set()
    for fold_range in FOLDS:
        run_fold(trainer, fold_range, epochs=1)
        pointers.add(
            (
                trainer.data.features.untyped_storage().data_ptr(),
                trainer.data.targets.untyped_storage().data_ptr(),
            )
        )
    assert pointers == {(features.__array_interface__["data"][0], targets.__array_interface__["data"][0])}


@pytest.mark.parametrize("device", DEVICES)
def test_norm_stats_are_the_training_slice_mean_and_std(synthetic, device):
    features, targets, timestamp = synthetic
    trainer = DQNTrainer(
        to_device(features, targets, timestamp, torch.device(device)), SMALL, max_train_rows=8000
    )
    trainer.window.set_fold_range(FOLDS[1])
    mean, std = trainer.window.compute_norm_stats()
    train = features[4000:12_000].astype(np.float64)
    np.testing.assert_allclose(mean.cpu().numpy(), train.mean(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(std.cpu().numpy(), train.std(axis=0), rtol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_constant_feature_gets_unit_std(synthetic, device):
    features, targets, timestamp = synthetic
    features = features.copy()
    features[:, 5] = 0.0
    trainer = DQNTrainer(
        to_device(features, targets, timestamp, torch.device(device)), SMALL, max_train_rows=8000
    )
    trainer.window.set_fold_range(FOLDS[0])
    _, std = trainer.window.compute_norm_stats()
    assert float(std[5]) == 1.0


@pytest.mark.parametrize("device", DEVICES)
def test_with_a_held_back_tail_the_norm_stats_are_the_heads_alone(synthetic, device):
    features, targets, timestamp = synthetic
    features = features.copy()
    features[9000:12_000] += 50.0  # the tail of fold 1's slice: a norm over the whole slice would see it
    trainer = DQNTrainer(
        to_device(features, targets, timestamp, torch.device(device)),
        replace(SMALL, select_tail_share=0.25),
        max_train_rows=8000,
    )
    trainer.set_fold_range(FOLDS[1])
    assert trainer.window.learn_end == 10_000
    mean, std = trainer.window.compute_norm_stats()
    head = features[4000:10_000].astype(np.float64)
    np.testing.assert_allclose(mean.cpu().numpy(), head.mean(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(std.cpu().numpy(), head.std(axis=0), rtol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_guard_stops_the_fold_on_a_non_finite_loss(synthetic, device):
    features, targets, timestamp = synthetic
    targets = targets.copy()
    targets[100:200, 0] = np.nan
    trainer = DQNTrainer(
        to_device(features, targets, timestamp, torch.device(device)), SMALL, max_train_rows=8000
    )
    with pytest.raises(TrainingDiverged, match="fold 0 epoch 0: loss is nan"):
        run_fold(trainer, FOLDS[0], epochs=1)


@pytest.mark.parametrize("device", DEVICES)
def test_guard_stops_the_fold_on_exploding_q_values(synthetic, device):
    config = DQNConfig(hidden=32, batch_size=512, steps_per_epoch=5, q_limit=1e-3)
    trainer = DQNTrainer(to_device(*synthetic, torch.device(device)), config, max_train_rows=8000)
    with pytest.raises(TrainingDiverged, match=r"\|Q\| reached"):
        run_fold(trainer, FOLDS[0], epochs=1)


@pytest.mark.parametrize("device", DEVICES)
def test_scan_rollout_equals_the_sequential_reference_loop(device):
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 7, 64, 1000, 4097, 100_003):
        maps = rng.integers(0, 3, size=(n, 3))
        for start in range(3):
            scanned = rollout_positions(torch.from_numpy(maps).to(device), start).cpu().numpy()
            np.testing.assert_array_equal(scanned, rollout_positions_reference(maps, start))


@pytest.mark.parametrize("device", DEVICES)
def test_validation_equals_a_sequential_greedy_loop(synthetic, device):
    """Per bar: look at Q for the position held, take the argmax, pay costs — one bar at a time."""
    features, targets, timestamp = synthetic
    dev = torch.device(device)
    trainer = DQNTrainer(to_device(features, targets, timestamp, dev), SMALL, max_train_rows=8000)
    run_fold(trainer, FOLDS[0], epochs=1)
    start, end = 9000, 9300
    position = 0.0
    pnl = []
    with torch.no_grad():
        for t in range(start, end):
            x = (torch.from_numpy(features[t]).to(dev) - trainer.window.mean) / trainer.window.std
            q = trainer.networks[0](torch.cat([x, torch.tensor([position], device=dev)]).unsqueeze(0))
            new = float(q.argmax()) - 1.0
            pnl.append(new * float(targets[t, 0]) - SMALL.cost * abs(new - position))
            position = new
    pnl = np.array(pnl)
    got = trainer.policies.validate(start, end)
    assert got.total_return == pytest.approx(pnl.sum(), **TOLERANCE[device])
    expected_sharpe = pnl.mean() / pnl.std() * math.sqrt(periods_per_year(timestamp[start:end]))
    assert got.sharpe == pytest.approx(expected_sharpe, rel=TOLERANCE[device]["rel"])


def test_policy_metrics_of_flat_and_known_series():
    returns = torch.tensor([0.01, -0.02, 0.03, 0.0])
    flat = policy_metrics(torch.zeros(4), returns, 0.001, 100.0)
    assert asdict(flat) == {
        "sharpe": 0.0,
        "total_return": 0.0,
        "max_drawdown": 0.0,
        "turnover": 0.0,
        "hit_rate": 0.0,
        "gross_sharpe": 0.0,
        "gross_return": 0.0,
        "exposure": 0.0,
    }
    long = policy_metrics(torch.tensor([1.0, 1.0, 0.0, -1.0]), returns, 0.001, 100.0)
    pnl = np.array([0.01 - 0.001, -0.02, 0.0 - 0.001, 0.0 - 0.001])
    assert long.total_return == pytest.approx(pnl.sum())
    assert long.turnover == 3.0
    assert long.hit_rate == pytest.approx(1 / 3)
    equity = np.cumsum(pnl)
    assert long.max_drawdown == pytest.approx(
        1 - math.exp(-(np.maximum.accumulate(np.r_[0, equity])[1:] - equity).max())
    )
    assert long.sharpe == pytest.approx(pnl.mean() / pnl.std() * 10.0)


def test_policy_metrics_report_gross_figures_and_exposure_before_costs():
    returns = torch.tensor([0.01, -0.02, 0.03, 0.0])
    got = policy_metrics(torch.tensor([1.0, 1.0, 0.0, -1.0]), returns, 0.001, 100.0)
    gross = np.array([0.01, -0.02, 0.0, 0.0])
    assert got.gross_return == pytest.approx(gross.sum())
    assert got.gross_return - got.total_return == pytest.approx(0.001 * got.turnover)
    assert got.gross_sharpe == pytest.approx(gross.mean() / gross.std() * 10.0)
    assert got.exposure == pytest.approx(0.75)


@pytest.mark.parametrize("device", DEVICES)
def test_policy_metrics_on_the_device_equal_a_float64_reference(device):
    rng = np.random.default_rng(1)
    positions = rng.integers(-1, 2, 50_000).astype(np.float32)
    returns = (rng.standard_normal(50_000) * 1e-3).astype(np.float32)
    got = policy_metrics(
        torch.from_numpy(positions).to(device), torch.from_numpy(returns).to(device), 1e-4, 525_960.0
    )
    p, r = positions.astype(np.float64), returns.astype(np.float64)
    changes = np.abs(np.diff(p, prepend=0.0))
    pnl = p * r - 1e-4 * changes
    assert got.total_return == pytest.approx(pnl.sum(), rel=1e-5)
    assert got.sharpe == pytest.approx(pnl.mean() / pnl.std() * math.sqrt(525_960.0), rel=1e-5)
    assert got.turnover == changes.sum()
    assert got.hit_rate == pytest.approx(((pnl > 0) & (p != 0)).sum() / (p != 0).sum(), rel=1e-6)
    assert got.exposure == pytest.approx(np.abs(p).mean(), rel=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_it_learns_a_planted_signal_from_generated_bars(device):
    """AR(1) returns: DQN beats flat and random clearly and reaches half the model-oracle's Sharpe."""
    ar = 0.3
    bars = generate_sample_bars(150_000, seed=11, ar_coef=ar, sigma=1e-3)
    table = compute_features(bars)
    folds = generate_walk_forward_indices(
        table.timestamp,
        FoldConfig(train_days=60, val_days=15, step_days=15, max_folds=1),
        close_returns=table.targets[:, 0],
    )
    fold = folds[0]
    config = DQNConfig(hidden=64, batch_size=2048, steps_per_epoch=150)
    trainer = DQNTrainer(
        to_device(table.features, table.targets, table.timestamp, torch.device(device)),
        config,
        max_train_rows=fold.train_rows,
        seed=0,
    )
    got = run_fold(trainer, fold, epochs=4)

    returns = torch.from_numpy(table.targets[fold.val_start : fold.val_end, 0].copy())
    last_return = torch.from_numpy(table.features[fold.val_start : fold.val_end, 0].astype(np.float32))
    expected = ar * last_return  # what the planted model predicts for the next bar
    oracle = torch.where(expected.abs() > config.cost, torch.sign(expected), torch.zeros_like(expected))
    periods = periods_per_year(table.timestamp[fold.val_start : fold.val_end])
    oracle_sharpe = policy_metrics(oracle, returns, config.cost, periods).sharpe
    rng = torch.Generator().manual_seed(0)
    random_positions = torch.randint(-1, 2, returns.shape, generator=rng).float()
    random_sharpe = policy_metrics(random_positions, returns, config.cost, periods).sharpe

    assert oracle_sharpe > 0
    assert got.sharpe > got.flat.sharpe + 1.0
    assert got.sharpe > random_sharpe + 1.0
    assert got.sharpe >= 0.5 * oracle_sharpe, (got.sharpe, oracle_sharpe)
