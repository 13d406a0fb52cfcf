"""Held-action (n-step) TD targets: hold the action n bars, pay the cost once, bootstrap γ^m at t + m.

The target of every drawn transition is checked against a float64 hand computation from the replay's own
positions and actions, for n = 1, 2, 3, including the transitions whose hold is cut at the end of the
learning rows; a wrong discount power or a cost paid per held bar fails it.
"""

from dataclasses import replace

import numpy as np
import pytest
import torch
from support.dqn_cases import OFFSET, TINY, draw_for, member_q_and_target, readout_net, tiny_trainer
from support.trainer_cases import DEVICES, FOLDS, SMALL, planted_arrays, run_fold, target_network

from foxhunt.config import DQNConfig
from foxhunt.errors import ConfigError
from foxhunt.train import DQNTrainer, to_device
from foxhunt.train.held_returns import bootstrap_bars, discount_table_, held_returns_, new_discount_table

RETURNS = np.array([2, -1, 3, 1, -2, 4, -3, 1, 2, -1, 0, 1], dtype=np.float64) * 1e-3
X0 = np.array([0, 1, -1, 2, -2, 3, -3, 1, 0, 2, 1, 0.0])
GAMMA = 0.9
N_TRANSITIONS = 7  # tiny_trainer: 8 training rows, the last one only a next state


def hand_targets(trainer, n: int, indices: list[int], *, power_offset: int = 0, cost_per_bar: bool = False):
    """y = scale·(a·Σ_{k<m} γ^k r_{t+k} − cost·|a − p|) + γ^m · Q_target(x_{t+m}, a) with m = min(n, N − t),
    from the replay's positions and actions; both networks are `readout_net`s preferring long."""
    position = trainer.replay.position[0].cpu().double().numpy()
    action = trainer.replay.action[0].cpu().numpy() - 1.0
    targets = []
    for t in indices:
        m = min(n, N_TRANSITIONS - t)
        held = sum(GAMMA**k * RETURNS[t + k] for k in range(m))
        cost = TINY.cost * abs(action[t] - position[t]) * (m if cost_per_bar else 1)
        q_long = (X0[t + m] + OFFSET) + 16.0 * (action[t] + OFFSET) + 1.0  # the online net's pick, valued
        discount = GAMMA ** (m + power_offset)
        targets.append(TINY.reward_scale * (action[t] * held - cost) + discount * q_long)
    return np.array(targets)


def collected(device: str, n: int):
    """A tiny trainer with `n_step` n after one exploring collection, both networks reading row and position."""
    trainer = tiny_trainer(X0, RETURNS, device, replace(TINY, n_step=n))
    trainer.collect(epsilon=1.0)
    readout_net(trainer.networks[0], 1.0, 16.0, [0.0, 0.0, 1.0])
    readout_net(target_network(trainer), 1.0, 16.0, [0.0, 0.0, 1.0])
    return trainer


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_the_target_holds_the_action_n_bars_pays_the_cost_once_and_bootstraps_at_t_plus_m(device, n):
    trainer = collected(device, n)
    indices = list(range(N_TRANSITIONS))  # the last n − 1 are cut short by the end of the learning rows
    _, y, _ = member_q_and_target(trainer, draw_for(trainer, indices))
    np.testing.assert_allclose(
        y.cpu().double().numpy(), hand_targets(trainer, n, indices), rtol=1e-5, atol=1e-4
    )


@pytest.mark.parametrize("n", [2, 3])
def test_a_discount_one_power_short_or_a_cost_per_held_bar_is_not_the_target(n):
    trainer = collected("cpu", n)
    indices = list(range(N_TRANSITIONS))
    y = member_q_and_target(trainer, draw_for(trainer, indices))[1].double().numpy()
    moved = trainer.replay.action[0, :N_TRANSITIONS] - 1 != trainer.replay.position[0, :N_TRANSITIONS]
    assert bool(moved[: N_TRANSITIONS - 1].any())  # some transition holds > 1 bar after a change: non-vacuous
    for wrong in (
        hand_targets(trainer, n, indices, power_offset=-1),
        hand_targets(trainer, n, indices, cost_per_bar=True),
    ):
        assert not np.allclose(y, wrong, rtol=1e-5, atol=1e-4)


def test_held_returns_are_discounted_sums_cut_at_the_end_per_member():
    returns = torch.tensor([1.0, 2.0, 4.0, 8.0, 16.0])
    out = torch.zeros(2, 6)
    held_returns_(out, returns, [0.5, 0.25], [3, 1])
    expected_n3 = [
        1 + 0.5 * 2 + 0.25 * 4,
        2 + 0.5 * 4 + 0.25 * 8,
        4 + 0.5 * 8 + 0.25 * 16,
        8 + 0.5 * 16,
        16.0,
    ]
    torch.testing.assert_close(out[0, :5], torch.tensor(expected_n3))
    assert torch.equal(out[1, :5], returns)  # n = 1: the one-bar return, bit for bit
    assert out[:, 5].eq(0).all()  # past the fold's transitions nothing is written


def test_the_bootstrap_is_n_bars_ahead_until_the_last_learning_row():
    idx = torch.tensor([[0, 4, 5, 6], [0, 4, 5, 6]])
    m = bootstrap_bars(idx, torch.tensor(7), torch.tensor([3.0, 1.0]))
    assert m.tolist() == [[3, 3, 2, 1], [1, 1, 1, 1]]


def test_one_step_reads_the_one_bar_return_and_keeps_no_held_buffer():
    trainer = collected("cpu", 1)
    assert trainer.replay.held is None
    position = trainer.replay.position[0, :N_TRANSITIONS]
    new = (trainer.replay.action[0, :N_TRANSITIONS] - 1).float()
    one_bar = trainer.data.targets[:N_TRANSITIONS, 0]
    expected = (new * one_bar - TINY.cost * (new - position).abs()) * TINY.reward_scale
    assert torch.equal(trainer.replay.reward[0, :N_TRANSITIONS], expected)


def test_new_gamma_or_n_recomputes_the_held_returns_and_the_discounts():
    trainer = collected("cpu", 3)
    trainer.apply_settings(replace(TINY, n_step=2, gamma=0.5))
    trainer.collect(epsilon=1.0)
    readout_net(trainer.networks[0], 1.0, 16.0, [0.0, 0.0, 1.0])
    readout_net(target_network(trainer), 1.0, 16.0, [0.0, 0.0, 1.0])
    y = member_q_and_target(trainer, draw_for(trainer, [0, 5, 6]))[1].double().numpy()
    position = trainer.replay.position[0].double().numpy()
    action = trainer.replay.action[0].numpy() - 1.0
    expected = [
        1e4
        * (
            action[t] * sum(0.5**k * RETURNS[t + k] for k in range(m))
            - TINY.cost * abs(action[t] - position[t])
        )
        + 0.5**m * ((X0[t + m] + OFFSET) + 16.0 * (action[t] + OFFSET) + 1.0)
        for t, m in ((0, 2), (5, 2), (6, 1))
    ]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-4)


def test_a_new_gamma_alone_recomputes_the_held_rewards():
    trainer = collected("cpu", 2)  # held returns at γ = 0.9 for this fold
    trainer.apply_settings(replace(TINY, n_step=2, gamma=0.5))  # the same fold and n, another γ
    trainer.collect(epsilon=1.0)
    position = trainer.replay.position[0, :N_TRANSITIONS].double().numpy()
    action = trainer.replay.action[0, :N_TRANSITIONS].numpy() - 1.0
    held = RETURNS[:N_TRANSITIONS].copy()
    held[:-1] += 0.5 * RETURNS[1:N_TRANSITIONS]  # r_t + 0.5 r_{t+1}, the last hold cut to one bar
    expected = (action * held - TINY.cost * np.abs(action - position)) * TINY.reward_scale
    np.testing.assert_allclose(trainer.replay.reward[0, :N_TRANSITIONS].double().numpy(), expected, rtol=1e-5)


def test_members_of_a_population_hold_for_their_own_n():
    configs = [replace(TINY, n_step=1), replace(TINY, n_step=3)]
    trainer = tiny_trainer(X0, RETURNS, "cpu", configs)
    trainer.collect(epsilon=1.0)
    for i in range(2):
        new = (trainer.replay.action[i, :N_TRANSITIONS] - 1).double().numpy()
        position = trainer.replay.position[i, :N_TRANSITIONS].double().numpy()
        n = configs[i].n_step
        held = [sum(GAMMA**k * RETURNS[t + k] for k in range(min(n, N_TRANSITIONS - t))) for t in range(7)]
        expected = 1e4 * (new * np.array(held) - TINY.cost * np.abs(new - position))
        np.testing.assert_allclose(
            trainer.replay.reward[i, :N_TRANSITIONS].double().numpy(), expected, atol=1e-4
        )


@pytest.mark.parametrize("value", [241, -1])
def test_n_step_outside_zero_to_240_bars_is_refused_naming_it(value):
    with pytest.raises(ConfigError, match=r"dqn config: n_step must be an integer in \[0, 240\] \(bars\)"):
        DQNConfig(n_step=value)


def test_a_fractional_n_step_is_refused():
    with pytest.raises(ConfigError, match="n_step must be an integer"):
        DQNConfig(n_step=2.5)


@pytest.mark.parametrize("device", DEVICES)
def test_a_population_of_one_and_five_bar_holds_learns_each_member_as_alone_in_one_capture(device):
    data = to_device(*planted_arrays(), torch.device(device))
    configs = [replace(SMALL, n_step=1), replace(SMALL, n_step=5)]
    population = DQNTrainer(data, configs, max_train_rows=8000, seed=3)
    run_fold(population, FOLDS[0], epochs=1)
    if device == "cpu":  # on CUDA the members draw from one generator: a lone run draws differently
        held = DQNTrainer(data, configs[1], max_train_rows=8000, seed=3)
        run_fold(held, FOLDS[0], epochs=1)
        for name, value in held.policies.state_dict_cpu().items():
            assert torch.equal(population.policies.state_dict_cpu(1)[name], value), name
    population.apply_settings([configs[1], configs[0]])  # the members swap their n: no new capture
    run_fold(population, FOLDS[1], epochs=1)
    assert population.graph_captures == (1 if device == "cuda" else 0)


def test_held_returns_are_computed_once_per_fold_not_per_epoch(monkeypatch):
    import foxhunt.train.replay as replay_module

    calls = []
    original = replay_module.held_returns_
    monkeypatch.setattr(replay_module, "held_returns_", lambda *a: calls.append(1) or original(*a))
    trainer = DQNTrainer(
        to_device(*planted_arrays(), torch.device("cpu")), replace(SMALL, n_step=3), max_train_rows=8000
    )
    run_fold(trainer, FOLDS[0], epochs=2)
    assert len(calls) == 1
    run_fold(trainer, FOLDS[1], epochs=2)  # as many rows, another start
    assert len(calls) == 2


def test_the_discount_table_holds_each_members_powers_up_to_the_longest_hold_and_zero_beyond():
    configs = [replace(TINY, gamma=0.5, n_step=3), replace(TINY, gamma=0.9, n_step=1)]
    table = new_discount_table(configs, torch.device("cpu"))
    expected = np.zeros(table.shape)
    expected[0, :4] = [0.5**k for k in range(4)]
    expected[1, :4] = [0.9**k for k in range(4)]
    np.testing.assert_array_equal(table.numpy(), expected.astype(np.float32))
    discount_table_(table, [replace(c, n_step=1) for c in configs])  # a shorter hold clears the rest
    assert not table[:, 2:].any() and table[0, 1] == np.float32(0.5)
