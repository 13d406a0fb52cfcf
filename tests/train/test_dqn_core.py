"""The Double-DQN core pinned against tiny hand-built networks and hand-set data.

Each test pins one piece (target, γ, next state, reward, replay, epsilon, Polyak, settings as device
values) so that a plausible wrong version fails; the last one shows that only a correct DQN learns a
signal that needs both the next-state term and the costs.
"""

from dataclasses import replace

import numpy as np
import pytest
import torch
from support.dqn_cases import (
    COST,
    OFFSET,
    TINY,
    constant_layers,
    draw_for,
    fill_replay,
    member_q_and_target,
    readout_net,
    set_layers,
    sign_net,
    tiny_trainer,
)
from support.trainer_cases import DEVICES, MINUTE_NS, target_network

from foxhunt.config import DQNConfig
from foxhunt.data.folds import FoldRange
from foxhunt.train import SHAPE_FIELDS, DQNTrainer, periods_per_year, policy_metrics, td_target, to_device
from foxhunt.train.dqn import epsilon_schedule, huber_loss
from foxhunt.train.replay import transition_reward
from foxhunt.train.stacked import polyak_update


# ---- the TD target ---------------------------------------------------------------------------------
def test_double_dqn_target_lets_the_online_network_choose_and_the_target_network_value():
    q_next_online = torch.tensor([[1.0, 3.0, 2.0], [5.0, 0.0, 1.0]])
    q_next_target = torch.tensor([[10.0, 4.0, 7.0], [2.0, 9.0, 3.0]])
    y = td_target(torch.tensor([0.5, -1.0]), q_next_online, q_next_target, 0.5)
    torch.testing.assert_close(y, torch.tensor([0.5 + 0.5 * 4.0, -1.0 + 0.5 * 2.0]))
    vanilla = torch.tensor([0.5, -1.0]) + 0.5 * q_next_target.max(dim=1).values
    assert not torch.allclose(y, vanilla)


@pytest.mark.parametrize("device", DEVICES)
def test_the_step_uses_the_double_dqn_target_not_the_vanilla_one(device):
    trainer = tiny_trainer(np.arange(12) % 3 - 1.0, np.zeros(12), device)
    set_layers(trainer.networks[0], *constant_layers([0.0, 0.0, 1.0]))  # online argmax: long
    set_layers(target_network(trainer), *constant_layers([5.0, 1.0, 2.0]))  # target's own max: short
    fill_replay(trainer, [0.0], [2], [0.25])
    _, y, _ = member_q_and_target(trainer, draw_for(trainer, [0]))
    assert float(y[0]) == pytest.approx(0.25 + 0.9 * 2.0)  # vanilla would be 0.25 + 0.9 · 5


@pytest.mark.parametrize("device", DEVICES)
def test_gamma_scales_the_next_state_value_exactly(device):
    trainer = tiny_trainer(np.array([1, 2, 3, -1, -2, -3, 0, 1, 2, 3, 1, 1.0]), np.zeros(12), device)
    readout_net(trainer.networks[0], 1.0, 16.0, [0.0, 0.0, 1.0])
    readout_net(target_network(trainer), 1.0, 16.0, [0.0, 0.0, 1.0])
    fill_replay(trainer, [1.0, -1.0, 0.0], [0, 2, 1], [0.5, -0.25, 2.0])
    u = draw_for(trainer, [0, 1, 2])
    _, y_discounted, _ = member_q_and_target(trainer, u)
    trainer.apply_settings(replace(TINY, gamma=0.0))
    _, y_myopic, _ = member_q_and_target(trainer, u)
    with torch.no_grad():
        q_next = target_network(trainer)(_next_states(trainer, [1, 2, 3], [-1.0, 1.0, 0.0])).max(dim=1).values
    torch.testing.assert_close(y_myopic, torch.tensor([0.5, -0.25, 2.0], device=device))
    torch.testing.assert_close(y_discounted - y_myopic, 0.9 * q_next)


def _next_states(trainer: DQNTrainer, rows: list[int], positions: list[float]) -> torch.Tensor:
    features = trainer.data.features[rows]
    return torch.cat([features, torch.tensor(positions, device=trainer.device).unsqueeze(1)], dim=1)


@pytest.mark.parametrize("device", DEVICES)
def test_the_next_state_is_the_next_row_with_the_action_taken_as_position(device):
    x0 = np.array([0, 1, -1, 2, -2, 3, -3, 1, 0, 2, 1, 0.0])
    trainer = tiny_trainer(x0, np.zeros(12), device)
    readout_net(trainer.networks[0], 1.0, 16.0, [0.0, 0.0, 0.0])
    readout_net(target_network(trainer), 1.0, 16.0, [0.0, 0.0, 0.0])
    # Transitions at bars 2, 4, 5 (incoming short, flat, long) taking long, short, flat.
    trainer.replay.position[0, :6] = torch.tensor([0, 0, -1, 0, 0, 1.0])
    trainer.replay.action[0, :6] = torch.tensor([1, 1, 2, 1, 0, 1])
    trainer.replay.reward[0, :6] = 0.0
    _, y, _ = member_q_and_target(trainer, draw_for(trainer, [2, 4, 5]))
    expected = [
        0.9 * ((x0[t + 1] + OFFSET) + 16.0 * (p + OFFSET)) for t, p in ((2, 1.0), (4, -1.0), (5, 0.0))
    ]
    torch.testing.assert_close(y, torch.tensor(expected, dtype=torch.float32, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_the_step_reads_the_states_of_the_folds_own_rows_from_its_train_start(device):
    # A fold whose training slice starts at row 5: replay index i is bar 5 + i, its next state bar 6 + i.
    # Q_a = (x0 + 8) + 16 · (position + 8) + bias_a tells the row read. Catches: rows read from 0 (every
    # fold after the first pairs its rewards with another bar's states).
    x0 = np.array([0, 1, -1, 2, -2, 3, -3, 1, 0, 2, 1, 0.0])
    trainer = tiny_trainer(x0, np.zeros(12), device)
    trainer.window.set_fold_range(FoldRange(1, 5, 9, 9, 12, 1.0))
    readout_net(trainer.networks[0], 1.0, 16.0, [0.0, 0.0, 0.0])
    readout_net(target_network(trainer), 1.0, 16.0, [0.0, 0.0, 0.0])
    fill_replay(trainer, [1.0, 0.0, -1.0], [1, 2, 0], [0.0, 0.0, 0.0])
    q, y, _ = member_q_and_target(trainer, draw_for(trainer, [0, 1, 2]))
    states = [(x0[5 + i] + OFFSET) + 16.0 * (p + OFFSET) for i, p in enumerate([1.0, 0.0, -1.0])]
    next_states = [0.9 * ((x0[6 + i] + OFFSET) + 16.0 * (p + OFFSET)) for i, p in enumerate([0.0, 1.0, -1.0])]
    torch.testing.assert_close(q, torch.tensor(states, dtype=torch.float32, device=device))
    torch.testing.assert_close(y, torch.tensor(next_states, dtype=torch.float32, device=device))


# ---- reward and replay -----------------------------------------------------------------------------
def test_reward_is_new_position_times_return_less_cost_on_the_change_then_scaled():
    position = torch.tensor([-1.0, 0.0, 1.0, 1.0, 0.0])
    new = torch.tensor([1.0, 1.0, 1.0, -1.0, 0.0])
    reward = transition_reward(position, new, torch.tensor([0.002, 0.002, 0.002, 0.002, 0.002]), 1e-4, 1e4)
    torch.testing.assert_close(reward, torch.tensor([18.0, 19.0, 20.0, -22.0, 0.0]))


def _expected_rewards(trainer: DQNTrainer, n: int, config: DQNConfig) -> np.ndarray:
    position = trainer.replay.position[0, :n].cpu().double().numpy()
    new = trainer.replay.action[0, :n].cpu().double().numpy() - 1.0
    returns = trainer.data.targets[:n, 0].cpu().double().numpy()
    return (new * returns - config.cost * np.abs(new - position)) * config.reward_scale


@pytest.mark.parametrize("device", DEVICES)
def test_greedy_collection_fills_one_transition_per_training_bar(device):
    rng = np.random.default_rng(0)
    x0 = rng.choice([-2.0, -1.0, 1.0, 2.0], size=3000)
    trainer = tiny_trainer(x0, rng.standard_normal(3000) * 1e-3, device)
    sign_net(trainer.networks[0])
    n = trainer.collect(epsilon=0.0)
    assert n == 1999  # 2000 training bars; the last has no next state in the fold
    actions = trainer.replay.action[0, :n].cpu().numpy()
    np.testing.assert_array_equal(actions, np.where(x0[:n] > 0, 2, 0))
    positions = trainer.replay.position[0, :n].cpu().numpy()
    assert set(np.unique(positions)) == {-1.0, 0.0, 1.0}
    assert all(abs((positions == p).mean() - 1 / 3) < 0.05 for p in (-1.0, 0.0, 1.0))
    np.testing.assert_allclose(
        trainer.replay.reward[0, :n].cpu().numpy(), _expected_rewards(trainer, n, TINY), rtol=1e-5, atol=1e-6
    )
    assert not torch.any(trainer.replay.reward[0, n:])


@pytest.mark.parametrize("device", DEVICES)
def test_collection_reads_the_states_and_returns_of_the_folds_own_rows(device):
    # A fold training on rows 5..8: transitions at bars 5, 6, 7 (x0 3, −3, 1: long, short, long).
    x0 = np.array([0, 1, -1, 2, -2, 3, -3, 1, 0, 2, 1, 0.0])
    returns = np.arange(1, 13) * 1e-3
    trainer = tiny_trainer(x0, returns, device)
    trainer.window.set_fold_range(FoldRange(1, 5, 9, 9, 12, 1.0))
    sign_net(trainer.networks[0])
    assert trainer.collect(epsilon=0.0) == 3
    assert trainer.replay.action[0, :3].tolist() == [2, 0, 2]
    position = trainer.replay.position[0, :3].cpu().double().numpy()
    new = np.array([1.0, -1.0, 1.0])
    expected = (new * returns[5:8] - COST * np.abs(new - position)) * 1e4
    np.testing.assert_allclose(trainer.replay.reward[0, :3].cpu().double().numpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_exploring_collection_takes_uniform_random_actions(device):
    rng = np.random.default_rng(1)
    x0 = rng.choice([-2.0, -1.0, 1.0, 2.0], size=3000)
    trainer = tiny_trainer(x0, rng.standard_normal(3000) * 1e-3, device)
    sign_net(trainer.networks[0])
    n = trainer.collect(epsilon=1.0)
    actions = trainer.replay.action[0, :n].cpu().numpy()
    assert all(abs((actions == a).mean() - 1 / 3) < 0.05 for a in range(3))
    assert abs((actions == np.where(x0[:n] > 0, 2, 0)).mean() - 1 / 3) < 0.05  # greedy only by chance
    np.testing.assert_allclose(
        trainer.replay.reward[0, :n].cpu().numpy(), _expected_rewards(trainer, n, TINY), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize(("epoch", "expected"), [(0, 1.0), (1, 0.82), (4, 0.28), (5, 0.1), (9, 0.1)])
def test_epsilon_decays_linearly_over_the_decay_fraction_then_stays(epoch, expected):
    config = DQNConfig(eps_start=1.0, eps_end=0.1, eps_decay_fraction=0.5)
    assert epsilon_schedule(epoch, 10, config) == pytest.approx(expected)


def test_epsilon_with_one_epoch_starts_at_eps_start():
    assert epsilon_schedule(0, 1, DQNConfig(eps_start=0.7, eps_end=0.1)) == 0.7


# ---- the update --------------------------------------------------------------------------------------
def test_polyak_step_moves_the_target_a_fraction_tau_toward_the_online_network():
    target = [torch.tensor([0.0, 4.0]), torch.tensor([[8.0]])]
    polyak_update(target, [torch.tensor([2.0, 0.0]), torch.tensor([[0.0]])], torch.tensor(0.25))
    torch.testing.assert_close(target, [torch.tensor([0.5, 3.0]), torch.tensor([[6.0]])])


@pytest.mark.parametrize("device", DEVICES)
def test_each_training_step_ends_with_the_polyak_step_of_the_target(device):
    rng = np.random.default_rng(2)
    trainer = tiny_trainer(
        rng.choice([-1.0, 1.0], 300), rng.standard_normal(300) * 1e-3, device, replace(TINY, tau=0.25)
    )
    with torch.no_grad():
        for p in trainer.target_params:
            p.add_(1.0)  # target and online differ before the step
    trainer.collect(epsilon=1.0)
    before = [p.detach().clone() for p in trainer.target_params]
    trainer.step.run()
    after_online = [p.detach() for p in trainer.params]
    for old, new, online in zip(before, trainer.target_params, after_online, strict=True):
        torch.testing.assert_close(new, 0.75 * old + 0.25 * online, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("delta", "errors", "losses"),
    [
        (1.0, [0.5, 0.9, 1.5, 3.0], [0.125, 0.405, 1.0, 2.5]),
        (0.5, [0.25, 0.45, 0.75, 3.0], [0.0625, 0.2025, 0.5, 2.75]),
    ],
)
def test_the_huber_loss_is_quadratic_inside_its_knee_and_linear_outside(delta, errors, losses):
    # 0.5 · e² / δ for |e| < δ, |e| − δ / 2 beyond: errors either side of the knee, both signs.
    # Catches: the knee moved to 2δ or δ / 2 (0.9 at δ = 1 gives 0.2025 or 0.775), plain L2 or L1.
    e = torch.tensor(errors)
    for sign in (1.0, -1.0):
        got = huber_loss(sign * e.unsqueeze(1), torch.zeros(4, 1), torch.tensor([delta]))
        torch.testing.assert_close(got, torch.tensor(losses))


def test_the_huber_knee_defaults_to_one_reward_unit():
    # With the default reward_scale 1e4 a reward unit is 1 bp: TD errors beyond a basis point pull linearly.
    # Catches: a default knee moved (2.0 or 0.5) that every trainer test, reading the config, lets through.
    assert DQNConfig().huber_delta == 1.0
    assert DQNConfig().reward_scale == 1e4


# ---- settings as device values ---------------------------------------------------------------------------
SHAPE_FREE = replace(
    TINY,
    lr=3e-3,
    gamma=0.5,
    tau=0.05,
    huber_delta=0.5,
    grad_clip=0.5,
    weight_decay=1e-3,
    reward_scale=3e3,
    cost=3e-4,
    eps_start=0.5,
    eps_end=0.2,
)


@pytest.mark.parametrize("device", DEVICES)
def test_apply_settings_trains_like_a_fresh_trainer_with_those_settings(device):
    rng = np.random.default_rng(3)
    x0, returns = rng.standard_normal(600), rng.standard_normal(600) * 1e-3
    switched = tiny_trainer(x0, returns, device, replace(TINY, steps_per_epoch=5))
    modules = (
        switched.networks[0],
        switched.target_params[0].data_ptr(),
        id(switched.exp_avg),
        switched.step,
    )
    pointers = [p.data_ptr() for p in switched.params]
    switched.apply_settings(replace(SHAPE_FREE, steps_per_epoch=5))
    fresh = tiny_trainer(x0, returns, device, replace(SHAPE_FREE, steps_per_epoch=5))
    for trainer in (switched, fresh):
        trainer.reset_for_fold(0)
        for epoch in range(2):
            trainer.train_epoch(epoch, 2)
    assert modules == (
        switched.networks[0],
        switched.target_params[0].data_ptr(),
        id(switched.exp_avg),
        switched.step,
    )
    assert pointers == [p.data_ptr() for p in switched.params]
    assert switched.histories[0].loss == pytest.approx(fresh.histories[0].loss, rel=1e-5)
    for name, tensor in fresh.networks[0].state_dict().items():
        torch.testing.assert_close(switched.networks[0].state_dict()[name], tensor, rtol=1e-5, atol=1e-6)
    assert (switched.graph_captures, switched.compiles) == (fresh.graph_captures, fresh.compiles)


@pytest.mark.parametrize("device", DEVICES)
def test_apply_settings_changes_what_the_next_step_does(device):
    rng = np.random.default_rng(4)
    x0, returns = rng.standard_normal(300), rng.standard_normal(300) * 1e-3
    trainer = tiny_trainer(x0, returns, device)
    trainer.collect(epsilon=1.0)
    u = torch.rand(1, 8, generator=torch.Generator().manual_seed(0)).to(device)
    loss_before = float(trainer.td_loss(u)[0].detach())
    trainer.apply_settings(replace(TINY, gamma=0.0))
    assert float(trainer.td_loss(u)[0].detach()) != loss_before
    stepped = {}
    for lr in (1e-3, 1e-1):
        trainer.apply_settings(replace(TINY, lr=lr))
        trainer.reset_for_fold(0)
        trainer.collect(epsilon=1.0)
        trainer.step.run()
        stepped[lr] = torch.cat([p.detach().flatten() for p in trainer.params])
    assert not torch.allclose(stepped[1e-3], stepped[1e-1]), "the new learning rate must change the step"


@pytest.mark.parametrize(
    ("name", "value"),
    [("batch_size", 16), ("hidden", 8), ("steps_per_graph", 2), ("compile", True), ("bf16", False)],
)
def test_apply_settings_refuses_a_setting_that_changes_shapes(name, value):
    assert name in SHAPE_FIELDS
    trainer = tiny_trainer(np.ones(30), np.zeros(30), "cpu")
    with pytest.raises(ValueError, match=f"^{name}: .*new trainer"):
        trainer.apply_settings(replace(TINY, **{name: value}))
    assert trainer.config == replace(TINY, n_step=1)  # unchanged (an n_step 0 no run chose trains as 1)


# ---- learning: only a correct DQN clears the bar ----------------------------------------------------------
def regime_arrays(n: int = 30_000, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bars whose next return is 0.25·cost·regime + 0.45·cost·flicker + noise (0.5·cost).

    The regime (±1) persists for 50 bars on average; the flicker (±1) is new every bar. Both are
    features (with two noise columns). No single bar pays the cost of entering (0.25 + 0.45 < 1),
    so a learner without the next-state term stays flat; trading the stronger flicker ignores costs
    and flips every other bar; only holding the regime through the costs makes money.
    """
    rng = np.random.default_rng(seed)
    regime = np.where(np.cumsum(rng.random(n) < 0.02) % 2 == 0, 1.0, -1.0)
    flicker = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    features = np.zeros((n, 4), np.float32)
    features[:, 0], features[:, 1] = regime, flicker
    features[:, 2:] = rng.standard_normal((n, 2))
    targets = np.zeros((n, 4), np.float32)
    targets[:, 0] = COST * (0.25 * regime + 0.45 * flicker + 0.5 * rng.standard_normal(n))
    return features, targets, np.arange(n, dtype=np.int64) * MINUTE_NS


@pytest.mark.parametrize("device", DEVICES)
def test_only_a_correct_dqn_holds_a_persistent_signal_through_costs(device):
    features, targets, timestamp = regime_arrays()
    fold = FoldRange(0, 0, 24_000, 24_000, 30_000, 1.0)
    config = DQNConfig(hidden=32, batch_size=1024, steps_per_epoch=150, lr=1e-3, gamma=0.9, cost=COST)
    data = to_device(features, targets, timestamp, torch.device(device))
    trainer = DQNTrainer(data, config, max_train_rows=fold.train_rows, seed=0, eval_cost=COST)

    def validation_sharpe(settings: DQNConfig) -> float:
        trainer.apply_settings(settings)
        trainer.window.set_fold_range(fold)
        trainer.reset_for_fold(0)
        trainer.window.compute_norm_stats()
        for epoch in range(4):
            trainer.train_epoch(epoch, 4)
        return trainer.policies.validate().sharpe  # always at the evaluation cost

    dqn = validation_sharpe(config)
    myopic = validation_sharpe(replace(config, gamma=0.0))
    cost_blind = validation_sharpe(replace(config, cost=0.0))
    returns = torch.from_numpy(targets[24_000:, 0].copy())
    periods = periods_per_year(timestamp[24_000:])
    hold_regime = policy_metrics(torch.from_numpy(features[24_000:, 0].copy()), returns, COST, periods).sharpe
    last_sign = torch.sign(torch.from_numpy(targets[23_999:29_999, 0].copy()))  # the return known at bar t
    sign_rule = policy_metrics(last_sign, returns, COST, periods).sharpe

    bar = 0.5 * hold_regime
    assert hold_regime > 0
    assert dqn >= bar, (dqn, hold_regime)
    for name, sharpe in {"sign rule": sign_rule, "gamma 0": myopic, "cost 0": cost_blind}.items():
        assert sharpe < 0.5 * bar, (name, sharpe, bar)
