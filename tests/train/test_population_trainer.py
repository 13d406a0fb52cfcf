"""Members side by side: a trainer of P members trains each as a trainer of one with its settings does,
bit for bit on the CPU, and each as a plain-torch Double DQN written apart from the trainer does
(support/reference_dqn.py: a check that does not compare the trainer with itself)."""

import math
from dataclasses import replace

import pytest
import torch
from support.reference_dqn import ReferenceDQN
from support.trainer_cases import DEVICES, FOLDS, SMALL, planted_arrays

from foxhunt.config.dqn import trainer_configs
from foxhunt.train import DQNTrainer, to_device
from foxhunt.train.dqn import fold_seed
from foxhunt.train.networks import build_qnet
from foxhunt.train.settings import check_population, padded
from foxhunt.train.stacked import adam_update, clip_grad_norm_per_member, exact_member_update

# Members that differ in every shape-free setting the step reads, and in the exploration schedule.
# Member 1's clip (0.1) binds on some steps of FOLDS[1] and not on others (gradient norms 0.05 to 0.3
# there), so a clip that is never applied changes what it learns.
MEMBERS = [
    replace(SMALL, lr=3e-4),
    replace(
        SMALL,
        lr=1e-3,
        gamma=0.5,
        tau=0.05,
        huber_delta=0.3,
        grad_clip=0.1,
        weight_decay=1e-3,
        reward_scale=300.0,
        cost=5e-4,
        eps_start=0.5,
        eps_end=0.2,
        eps_decay_fraction=1.0,
    ),
    replace(SMALL, lr=1e-3, gamma=0.99, tau=0.001, huber_delta=5.0, grad_clip=100.0, reward_scale=10.0),
]


@pytest.fixture(scope="module")
def data_cpu():
    return to_device(*planted_arrays(), torch.device("cpu"))


def train(trainer, fold_range, epochs=2):
    trainer.window.set_fold_range(fold_range)
    trainer.reset_for_fold(fold_range.fold)
    trainer.window.compute_norm_stats()
    return [trainer.train_epoch(epoch, epochs) for epoch in range(epochs)]


def test_each_member_learns_bit_for_bit_what_a_trainer_of_one_with_its_settings_learns(data_cpu):
    population = DQNTrainer(data_cpu, MEMBERS, max_train_rows=8000, seed=3)
    member_stats = train(population, FOLDS[1])
    for i, config in enumerate(MEMBERS):
        alone = DQNTrainer(data_cpu, config, max_train_rows=8000, seed=3)
        alone_stats = train(alone, FOLDS[1])
        for ours, theirs in zip(member_stats, alone_stats, strict=True):
            for figure in ("loss", "q_mean", "q_max", "epsilon", "val_sharpe", "action_shares"):
                assert getattr(ours[i], figure) == getattr(theirs[0], figure), figure
        for name, value in alone.policies.state_dict_cpu().items():
            assert torch.equal(population.policies.state_dict_cpu(i)[name], value), name
        assert torch.equal(population.policies.greedy_positions(member=i), alone.policies.greedy_positions())


def test_each_member_learns_what_a_plain_torch_double_dqn_with_its_settings_learns(data_cpu):
    # FOLDS[1] starts at row 4000: a step that reads states without the fold's offset pairs every reward
    # with another bar's state. The reference differs from the trainer in float32 rounding only (its
    # Huber, clip and Adam are torch's own): weights agree to 1e-5 after 30 steps, while the wrong
    # versions tried (offset dropped, clip skipped, Huber knee doubled, weight decay doubled) move
    # some weight by 1e-3 or more.
    members = [replace(m, select_tail_share=0.0) for m in MEMBERS]  # the reference learns on the whole slice
    fold = FOLDS[1]
    population = DQNTrainer(data_cpu, members, max_train_rows=8000, seed=3, diagnostics=False)
    population.set_fold_range(fold)
    population.reset_for_fold(fold.fold)
    population.window.compute_norm_stats()
    initial = [population.policies.state_dict_cpu(i) for i in range(len(members))]
    for epoch in range(2):
        population.train_epoch(epoch, 2)
    for i, config in enumerate(members):
        reference = ReferenceDQN(
            data_cpu.features, data_cpu.targets[:, 0], fold, config, initial[i], fold_seed(3, fold.fold)
        )
        reference.train(2)
        for name, value in reference.online.state_dict().items():
            torch.testing.assert_close(
                population.policies.state_dict_cpu(i)[name], value, rtol=0, atol=1e-5, msg=f"{i} {name}"
            )


def test_members_with_different_settings_end_with_different_weights(data_cpu):
    population = DQNTrainer(data_cpu, MEMBERS[:2], max_train_rows=8000)
    train(population, FOLDS[0])
    first, second = population.policies.state_dict_cpu(0), population.policies.state_dict_cpu(1)
    assert not torch.allclose(first["0.weight"], second["0.weight"])


def test_a_member_weights_file_loads_into_a_lone_network(data_cpu):
    population = DQNTrainer(data_cpu, MEMBERS[:2], max_train_rows=8000)
    train(population, FOLDS[0], epochs=1)
    net = build_qnet(42, SMALL.hidden)
    net.load_state_dict(population.policies.state_dict_cpu(1))
    torch.testing.assert_close(net[0].weight, population.params[0][1].detach())


def test_reset_for_fold_forgets_every_member(data_cpu):
    population = DQNTrainer(data_cpu, MEMBERS[:2], max_train_rows=8000, seed=1)
    before = [p.detach().clone() for p in population.params]
    train(population, FOLDS[0], epochs=1)
    population.reset_for_fold(0)
    for p, b in zip(population.params, before, strict=True):
        assert torch.equal(p.detach(), b)
    assert all(torch.count_nonzero(m) == 0 for m in (*population.exp_avg, *population.exp_avg_sq))
    assert population.adam_step.item() == 0 and population.steps_done == 0
    assert torch.count_nonzero(population.replay.reward) == 0


def test_a_diverging_member_is_stopped_alone(data_cpu):
    guarded = replace(MEMBERS[0], q_limit=1e-6)  # any Q-value trips the guard
    population = DQNTrainer(data_cpu, [guarded, MEMBERS[2]], max_train_rows=8000)
    stats = train(population, FOLDS[0])
    assert population.failures[0] is not None
    assert "limit" in str(population.failures[0])
    assert stats[-1][0] is None and stats[-1][1] is not None
    assert population.failures[1] is None


def test_a_member_outside_the_active_ones_reports_nothing(data_cpu):
    population = DQNTrainer(data_cpu, padded(MEMBERS[:1], 2), max_train_rows=8000, diagnostics=False)
    population.window.set_fold_range(FOLDS[0])
    population.reset_for_fold(0)
    population.window.compute_norm_stats()
    stats = population.train_epoch(0, 1, active=[0])
    assert stats[0] is not None and stats[1] is None


def test_padded_fills_idle_slots_with_the_last_settings():
    assert padded(MEMBERS[:2], 4) == [MEMBERS[0], MEMBERS[1], MEMBERS[1], MEMBERS[1]]


def test_members_must_share_the_step_shapes_and_step_count():
    with pytest.raises(ValueError, match="member 1: hidden"):
        check_population([SMALL, replace(SMALL, hidden=64)])
    with pytest.raises(ValueError, match="steps_per_epoch"):
        check_population([SMALL, replace(SMALL, steps_per_epoch=3)])
    check_population([SMALL, replace(SMALL, lr=0.1, q_limit=5.0)])


def test_apply_settings_switches_every_member_in_place(data_cpu):
    population = DQNTrainer(data_cpu, MEMBERS[:2], max_train_rows=8000)
    gamma = population.settings.gamma
    population.apply_settings([MEMBERS[2], MEMBERS[0]])
    assert population.settings.gamma is gamma
    assert gamma.tolist() == pytest.approx([MEMBERS[2].gamma, MEMBERS[0].gamma])
    assert population.configs[0] == trainer_configs(MEMBERS[2])[0]  # as given (an unchosen n_step as 1)
    with pytest.raises(ValueError, match="batch_size"):
        population.apply_settings([MEMBERS[0], replace(MEMBERS[0], batch_size=256)])


@pytest.mark.parametrize("lrs", [[1e-3], [1e-3, 3e-2]])
def test_adam_update_is_torch_adam_with_a_learning_rate_per_member(lrs):
    gen = torch.Generator().manual_seed(0)
    stacked = torch.randn(len(lrs), 4, 3, generator=gen)
    grads = [torch.randn(len(lrs), 4, 3, generator=gen) for _ in range(5)]
    params, moments = [stacked.clone()], ([torch.zeros_like(stacked)], [torch.zeros_like(stacked)])
    step = torch.zeros(())
    for g in grads:
        adam_update(params, [g], *moments, step, torch.tensor(lrs))
    for i, lr in enumerate(lrs):
        lone = torch.nn.Parameter(stacked[i].clone())
        adam = torch.optim.Adam([lone], lr=lr)
        for g in grads:
            lone.grad = g[i].clone()
            adam.step()
        torch.testing.assert_close(params[0][i], lone.detach(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lrs", [[1e-3], [1e-3, 3e-2]])
def test_the_cpu_update_is_torch_adam_bit_for_bit_for_every_member(lrs):
    gen = torch.Generator().manual_seed(0)
    stacked = torch.randn(len(lrs), 4, 3, generator=gen)
    grads = [torch.randn(len(lrs), 4, 3, generator=gen) for _ in range(5)]
    params, moments = [stacked.clone()], ([torch.zeros_like(stacked)], [torch.zeros_like(stacked)])
    no_clip, no_decay = torch.tensor(1e9), torch.tensor(0.0)
    for step, g in enumerate(grads, start=1):
        for i, lr in enumerate(lrs):
            exact_member_update(params, [g.clone()], *moments, step, i, lr, no_clip, no_decay)
    for i, lr in enumerate(lrs):
        alone = torch.nn.Parameter(stacked[i].clone())
        adam = torch.optim.Adam([alone], lr=lr, foreach=True)
        for g in grads:
            alone.grad = g[i].clone()
            adam.step()
        assert torch.equal(params[0][i], alone.detach())


def test_the_cpu_update_clips_the_gradient_before_adam():
    # One weight, clip 1, lr 0.1: gradient 4 is clipped to 1, then 0.5 passes. Adam's first step is
    # lr · sign, the second lr · m̂ / (√v̂ + eps) with m = 0.9 · 0.1 · 1 + 0.1 · 0.5 = 0.14 and
    # v = 0.999 · 0.001 · 1 + 0.001 · 0.25 = 0.001249: 0.1 · (0.14 / 0.19) / √(0.001249 / 0.001999).
    # Catches: the CPU path without the clip (m = 0.41, v = 0.016234: a second step of 0.0757, not 0.0932).
    weight, clip, no_decay = [torch.zeros(1, 1)], torch.tensor(1.0), torch.tensor(0.0)
    moments = ([torch.zeros(1, 1)], [torch.zeros(1, 1)])
    for step, g in enumerate((4.0, 0.5), start=1):
        exact_member_update(weight, [torch.tensor([[g]])], *moments, step, 0, 0.1, clip, no_decay)
    second = 0.1 * (0.14 / 0.19) / (math.sqrt(0.001249 / 0.001999) + 1e-8)
    assert weight[0].item() == pytest.approx(-(0.1 + second), rel=1e-5)


def test_the_cpu_update_adds_the_weight_decay_once_as_torch_adam_does():
    # torch.optim.Adam(weight_decay=λ) adds λ · w to the gradient once before its moments.
    # Catches: the decay doubled (or applied again as a decoupled AdamW step), or left out.
    gen = torch.Generator().manual_seed(1)
    start = torch.randn(1, 4, 3, generator=gen)
    grads = [torch.randn(1, 4, 3, generator=gen) for _ in range(5)]
    params, moments = [start.clone()], ([torch.zeros_like(start)], [torch.zeros_like(start)])
    no_clip, decay = torch.tensor(1e9), torch.tensor(0.5)
    for step, g in enumerate(grads, start=1):
        exact_member_update(params, [g.clone()], *moments, step, 0, 1e-2, no_clip, decay)
    alone = torch.nn.Parameter(start[0].clone())
    adam = torch.optim.Adam([alone], lr=1e-2, weight_decay=0.5, foreach=True)
    for g in grads:
        alone.grad = g[0].clone()
        adam.step()
    torch.testing.assert_close(params[0][0], alone.detach(), rtol=0, atol=1e-7)


def test_gradient_clip_reads_each_members_own_norm():
    grads = [torch.tensor([[3.0, 4.0], [0.3, 0.4]]), torch.tensor([[0.0], [0.0]])]  # norms 5 and 0.5
    clip_grad_norm_per_member(grads, torch.tensor([1.0, 1.0]))
    assert grads[0][0].norm().item() == pytest.approx(1.0, rel=1e-5)
    assert grads[0][1].tolist() == pytest.approx([0.3, 0.4])


def test_gradient_clip_reads_each_members_own_limit():
    grads = [torch.tensor([[3.0, 4.0], [3.0, 4.0]])]
    clip_grad_norm_per_member(grads, torch.tensor([2.5, 10.0]))
    assert grads[0][0].tolist() == pytest.approx([1.5, 2.0], rel=1e-5)
    assert grads[0][1].tolist() == pytest.approx([3.0, 4.0])


@pytest.mark.parametrize("device", DEVICES)
def test_one_population_serves_every_fold_and_settings_with_one_capture(device):
    data = to_device(*planted_arrays(), torch.device(device))
    population = DQNTrainer(data, MEMBERS[:2], max_train_rows=8000)
    train(population, FOLDS[0], epochs=1)
    population.apply_settings([MEMBERS[2], MEMBERS[0]])
    stats = train(population, FOLDS[1], epochs=1)
    assert population.graph_captures == (1 if device == "cuda" else 0)
    assert population.compiles == (1 if device == "cuda" and SMALL.compile else 0)
    losses = [s.loss for s in stats[0]]
    assert all(loss == loss and loss >= 0 for loss in losses)
    assert losses[0] != losses[1]
