"""The greedy policy's evaluation and the per-epoch diagnostics, against per-bar loops and hand-built networks."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from support.dqn_cases import TINY, constant_layers, readout_net, set_layers, sign_net, tiny_trainer
from support.trainer_cases import DEVICES, TOLERANCE, target_network

from foxhunt.config import trading_cost
from foxhunt.train import (
    FLAT,
    DQNTrainer,
    feature_agreement,
    periods_per_year,
    policy_collapse,
    rollout_positions,
    rollout_positions_reference,
    score_positions,
)
from foxhunt.train.diagnostics import evenly_spaced_blocks
from foxhunt.train.networks import build_qnet
from foxhunt.train.policy import CPU_MAP_ROWS, greedy_maps, policy_state


# ---- the greedy rollout and its metrics ---------------------------------------------------------------
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("device", DEVICES)
def test_greedy_maps_are_each_positions_argmax_over_its_normalised_state(device, fused):
    torch.manual_seed(3)
    net = build_qnet(5, 16).to(device)
    features = torch.randn(2000, 5, device=device) * 3 + 1
    mean, std = features.mean(0), features.std(0)
    maps = greedy_maps(net, features, mean, std, chunk=700, fused=fused)  # chunks of 700, 700, 600
    for p in range(3):
        position = torch.full((2000,), float(p - 1), device=device)
        with torch.no_grad():
            want = net(policy_state(features, position, mean, std)).argmax(1)
        assert torch.equal(maps[:, p], want), p


def test_the_cpus_maps_in_cache_sized_passes_equal_one_pass_over_every_row():
    # The run's shapes (42 features, hidden 64) and more rows than a CPU pass takes: a capped chunk must give
    # the maps of one pass over all rows, the products' bits unchanged by the rows beside them.
    torch.manual_seed(4)
    net = build_qnet(42, 64)
    n = 2 * CPU_MAP_ROWS + 1_000
    features = torch.randn(n, 42) * 2
    mean, std = features.mean(0), features.std(0)
    maps = greedy_maps(net, features, mean, std, chunk=1 << 18)  # three passes, not one
    with torch.no_grad():
        for p in range(3):
            q = net(policy_state(features, torch.full((n,), float(p - 1)), mean, std))
            assert torch.equal(maps[:, p], q.argmax(1))


@pytest.mark.parametrize("device", DEVICES)
def test_batched_rollout_runs_each_block_like_the_sequential_loop(device):
    maps = np.random.default_rng(5).integers(0, 3, size=(4, 333, 3))
    got = rollout_positions(torch.from_numpy(maps).to(device), FLAT).cpu().numpy()
    for block in range(4):
        np.testing.assert_array_equal(got[block], rollout_positions_reference(maps[block], FLAT))


def _sequential_metrics(trainer: DQNTrainer, start: int, end: int, cost: float) -> dict:
    """The greedy policy and its metrics, one bar at a time in Python floats."""
    position, pnl, gross, changes = 0.0, [], [], []
    with torch.no_grad():
        for t in range(start, end):
            state = torch.cat([trainer.data.features[t], torch.tensor([position], device=trainer.device)])
            new = float(trainer.networks[0](state.unsqueeze(0)).argmax()) - 1.0
            r = float(trainer.data.targets[t, 0])
            gross.append(new * r)
            changes.append(abs(new - position))
            pnl.append(new * r - cost * abs(new - position))
            position = new
    pnl, gross = np.array(pnl), np.array(gross)
    held = np.array([g != 0 or c != 0 for g, c in zip(gross, changes, strict=True)])
    equity = np.cumsum(pnl)
    periods = periods_per_year(trainer.data.timestamp[start:end])
    return {
        "total_return": pnl.sum(),
        "sharpe": pnl.mean() / pnl.std() * math.sqrt(periods),
        "turnover": sum(changes),
        "gross_return": gross.sum(),
        "gross_sharpe": gross.mean() / gross.std() * math.sqrt(periods),
        "max_drawdown": 1 - math.exp(-(np.maximum.accumulate(np.r_[0, equity])[1:] - equity).max()),
        "held": held,
        "pnl": pnl,
    }


@pytest.mark.parametrize("device", DEVICES)
def test_validation_metrics_equal_a_per_bar_loop_at_the_evaluation_cost(device):
    rng = np.random.default_rng(6)
    x0 = rng.choice([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0], size=900)
    trainer = tiny_trainer(
        x0, rng.standard_normal(900) * 1e-3, device, replace(TINY, cost=0.0), eval_cost=2e-4, eval_spread=2e-4
    )
    sign_net(
        trainer.networks[0], hold=3.0, flat_value=1.5
    )  # hysteresis: the rollout depends on the position held
    got = trainer.policies.validate()
    loop = _sequential_metrics(trainer, 600, 900, cost=3e-4)  # fee + half the spread
    assert 0 < got.turnover < 300, "the case must trade, and not on every bar"
    for key in ("total_return", "sharpe", "gross_return", "gross_sharpe", "max_drawdown"):
        assert getattr(got, key) == pytest.approx(loop[key], rel=TOLERANCE[device]["rel"] * 10, abs=1e-9), key
    assert got.turnover == loop["turnover"]


@pytest.mark.parametrize("device", DEVICES)
def test_evaluation_cost_is_apart_from_the_training_cost(device):
    rng = np.random.default_rng(7)
    trainer = tiny_trainer(
        rng.choice([-1.0, 1.0], 900),
        rng.standard_normal(900) * 1e-3,
        device,
        replace(TINY, cost=5e-4),
        eval_cost=1e-4,
    )
    sign_net(trainer.networks[0])
    positions = trainer.policies.greedy_positions()
    start = trainer.window.fold.val_start
    default = score_positions(trainer.data, positions, start, trainer.policies.evaluation_cost())
    explicit = score_positions(trainer.data, positions, start, trading_cost(2e-4, 2e-4))
    assert default.turnover > 0
    assert default.gross_return - default.total_return == pytest.approx(1e-4 * default.turnover)
    assert explicit.gross_return - explicit.total_return == pytest.approx(3e-4 * explicit.turnover)
    legacy = tiny_trainer(rng.choice([-1.0, 1.0], 900), np.zeros(900), device, replace(TINY, cost=5e-4))
    sign_net(legacy.networks[0])
    legacy_metrics = legacy.policies.validate()
    assert legacy_metrics.total_return == pytest.approx(-5e-4 * legacy_metrics.turnover)


# ---- per-epoch diagnostics --------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_epoch_q_statistics_are_mean_and_max_of_abs_q_over_the_batches(device):
    frozen = replace(TINY, lr=1e-12, steps_per_epoch=3)  # weights move by ~1e-12: Q stays as built
    trainer = tiny_trainer(np.ones(60), np.zeros(60), device, frozen)
    set_layers(trainer.networks[0], *constant_layers([1.0, -3.0, 2.0]))
    set_layers(target_network(trainer), *constant_layers([1.0, -3.0, 2.0]))
    stats = trainer.train_epoch(0, 1)[0]
    assert stats.q_mean == pytest.approx(2.0, rel=1e-6)  # mean of |1|, |−3|, |2|
    assert stats.q_max == pytest.approx(3.0, rel=1e-6)
    assert trainer.histories[0].q_mean == [stats.q_mean] and trainer.histories[0].q_max == [stats.q_max]


@pytest.mark.parametrize("device", DEVICES)
def test_epoch_diagnostics_read_the_greedy_policy_in_and_out_of_sample(device):
    rng = np.random.default_rng(8)
    trainer = tiny_trainer(
        rng.choice([-2.0, 2.0], 900),
        rng.standard_normal(900) * 1e-3,
        device,
        replace(TINY, lr=1e-12),
        eval_cost=1e-4,
    )
    sign_net(trainer.networks[0], flat_value=0.5)
    stats = trainer.train_epoch(0, 1)[0]
    validation = trainer.policies.validate()
    in_sample = trainer.policies.validate(0, 600)
    assert stats.val_sharpe == pytest.approx(validation.sharpe, rel=1e-9)
    assert stats.train_sharpe == pytest.approx(in_sample.sharpe, rel=1e-9)  # 600 rows: one whole block
    positions = trainer.policies.greedy_positions().cpu().numpy()
    assert stats.action_shares == pytest.approx([(positions == p).mean() for p in (-1.0, 0.0, 1.0)])
    assert stats.feature_agreement == 0.0 and not stats.features_ignored and not stats.collapsed
    assert trainer.histories[0].val_sharpe == [stats.val_sharpe]


@pytest.mark.parametrize("device", DEVICES)
def test_a_policy_that_always_goes_long_is_flagged_collapsed_and_blind_to_features(device):
    rng = np.random.default_rng(9)
    trainer = tiny_trainer(
        rng.choice([-2.0, 2.0], 900), rng.standard_normal(900) * 1e-3, device, replace(TINY, lr=1e-12)
    )
    set_layers(trainer.networks[0], *constant_layers([0.0, 0.0, 1.0]))
    stats = trainer.train_epoch(0, 1)[0]
    assert stats.action_shares == [0.0, 0.0, 1.0]
    assert stats.collapsed and trainer.histories[0].collapsed
    assert stats.feature_agreement == 1.0 and trainer.histories[0].features_ignored


def test_diagnostics_off_leave_only_the_training_figures():
    trainer = tiny_trainer(np.ones(60), np.zeros(60), "cpu", diagnostics=False)
    stats = trainer.train_epoch(0, 1)[0]
    assert (
        stats.val_sharpe is None
        and stats.action_shares is None
        and trainer.histories[0].val_sharpe == []
        and trainer.histories[0].loss
    )


@pytest.mark.parametrize("device", DEVICES)
def test_the_sharpe_of_no_bars_is_zero_without_a_warning(device):
    import warnings

    from foxhunt.train.policy import annualised_sharpe

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = annualised_sharpe(torch.zeros(0, device=device), 525_600.0)
    assert got.shape == () and got.item() == 0.0


def test_policy_collapse_flags_one_action_on_most_bars():
    assert policy_collapse([0.96, 0.02, 0.02])
    assert policy_collapse([0.0, 0.0, 1.0])
    assert not policy_collapse([0.5, 0.3, 0.2])
    assert not policy_collapse([0.9, 0.05, 0.05])
    assert policy_collapse([0.9, 0.05, 0.05], threshold=0.85)


@pytest.mark.parametrize("device", DEVICES)
def test_feature_agreement_is_one_for_a_policy_that_ignores_the_features(device):
    trainer = tiny_trainer(np.array([-2.0, -1.0, 1.0, 2.0] * 10), np.zeros(40), device)
    features = trainer.data.features
    readout_net(trainer.networks[0], 0.0, 16.0, [0.0, 1.0, 2.0])  # Q depends on the position only
    assert (
        float(feature_agreement(trainer.networks[0], features, trainer.window.mean, trainer.window.std))
        == 1.0
    )
    sign_net(trainer.networks[0], flat_value=0.5)  # at the mean (x0 = 0) flat; on every row short or long
    assert (
        float(feature_agreement(trainer.networks[0], features, trainer.window.mean, trainer.window.std))
        == 0.0
    )


def test_evenly_spaced_blocks_cover_the_range_within_the_row_budget():
    rows = evenly_spaced_blocks(100, 10_100, max_rows=1000, blocks=8)
    assert rows.shape == (8, 125)
    assert int(rows[0, 0]) == 100 and int(rows[-1, -1]) == 10_099
    assert torch.all(rows[:, 1:] - rows[:, :-1] == 1)
    assert torch.all(rows[1:, 0] > rows[:-1, -1])
    torch.testing.assert_close(
        evenly_spaced_blocks(5, 50, max_rows=1000, blocks=8), torch.arange(5, 50).unsqueeze(0)
    )
