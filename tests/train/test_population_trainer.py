"""Trials side by side: a population of P trials trains each member as a lone trainer of its settings would."""

from dataclasses import replace

import pytest
import torch
from support.trainer_cases import DEVICES, FOLDS, SMALL, planted_arrays

from foxhunt.train import DQNTrainer, to_device
from foxhunt.train.networks import build_qnet
from foxhunt.train.population import (
    PopulationTrainer,
    adam_update,
    check_population,
    clip_grad_norm_per_member,
    padded,
)

# Members that differ in every shape-free setting the step reads, and in the exploration schedule.
# (Settings where Adam's first steps turn rounding-level gradients into ±lr moves, such as a clip of
# 0.05 with a Huber knee of 0.02, drift from the lone trainer by 1e-3 through bmm's other rounding.)
MEMBERS = [
    replace(SMALL, lr=3e-4),
    replace(
        SMALL,
        lr=1e-3,
        gamma=0.5,
        tau=0.05,
        huber_delta=0.3,
        grad_clip=0.5,
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
    trainer.set_fold_range(fold_range)
    trainer.reset_for_fold(fold_range.fold)
    trainer.compute_norm_stats()
    return [trainer.train_epoch(epoch, epochs) for epoch in range(epochs)]


def test_each_member_learns_what_a_lone_trainer_of_its_settings_learns(data_cpu):
    population = PopulationTrainer(data_cpu, MEMBERS, max_train_rows=8000, seed=3)
    member_stats = train(population, FOLDS[1])
    for i, config in enumerate(MEMBERS):
        lone = DQNTrainer(data_cpu, config, max_train_rows=8000, seed=3)
        lone_stats = train(lone, FOLDS[1])
        for ours, theirs in zip(member_stats, lone_stats, strict=True):
            assert ours[i]["loss"] == pytest.approx(theirs["loss"], rel=1e-4)
            assert ours[i]["q_max"] == pytest.approx(theirs["q_max"], rel=1e-4)
            assert ours[i]["epsilon"] == theirs["epsilon"]
        member = population.members[i]
        for name, value in lone.state_dict_cpu().items():
            torch.testing.assert_close(member.state_dict_cpu()[name], value, rtol=1e-4, atol=1e-5)
        assert torch.equal(member.greedy_positions(), lone.greedy_positions())


def test_members_with_different_settings_end_with_different_weights(data_cpu):
    population = PopulationTrainer(data_cpu, MEMBERS[:2], max_train_rows=8000)
    train(population, FOLDS[0])
    first, second = (m.state_dict_cpu() for m in population.members)
    assert not torch.allclose(first["0.weight"], second["0.weight"])


def test_a_member_weights_file_loads_into_a_lone_network(data_cpu):
    population = PopulationTrainer(data_cpu, MEMBERS[:2], max_train_rows=8000)
    train(population, FOLDS[0], epochs=1)
    net = build_qnet(42, SMALL.hidden)
    net.load_state_dict(population.members[1].state_dict_cpu())
    torch.testing.assert_close(net[0].weight, population.params[0][1].detach())


def test_reset_for_fold_forgets_every_member(data_cpu):
    population = PopulationTrainer(data_cpu, MEMBERS[:2], max_train_rows=8000, seed=1)
    before = [p.detach().clone() for p in population.params]
    train(population, FOLDS[0], epochs=1)
    population.reset_for_fold(0)
    for p, b in zip(population.params, before, strict=True):
        assert torch.equal(p.detach(), b)
    assert all(torch.count_nonzero(m) == 0 for m in (*population.exp_avg, *population.exp_avg_sq))
    assert population.adam_step.item() == 0 and population.steps_done == 0
    assert torch.count_nonzero(population.replay_reward) == 0


def test_a_diverging_member_is_stopped_alone(data_cpu):
    guarded = replace(MEMBERS[0], q_limit=1e-6)  # any Q-value trips the guard
    population = PopulationTrainer(data_cpu, [guarded, MEMBERS[2]], max_train_rows=8000)
    stats = train(population, FOLDS[0])
    assert population.members[0].failure is not None
    assert "limit" in str(population.members[0].failure)
    assert stats[-1][0] is None and stats[-1][1] is not None
    assert population.members[1].failure is None


def test_an_inactive_member_reports_nothing(data_cpu):
    population = PopulationTrainer(data_cpu, padded(MEMBERS[:1], 2), max_train_rows=8000, diagnostics=False)
    population.members[1].active = False
    stats = train(population, FOLDS[0], epochs=1)
    assert stats[0][0] is not None and stats[0][1] is None


def test_padded_fills_idle_slots_with_the_last_settings():
    assert padded(MEMBERS[:2], 4) == [MEMBERS[0], MEMBERS[1], MEMBERS[1], MEMBERS[1]]


def test_members_must_share_the_step_shapes_and_step_count():
    with pytest.raises(ValueError, match="member 1: hidden"):
        check_population([SMALL, replace(SMALL, hidden=64)])
    with pytest.raises(ValueError, match="steps_per_epoch"):
        check_population([SMALL, replace(SMALL, steps_per_epoch=3)])
    check_population([SMALL, replace(SMALL, lr=0.1, q_limit=5.0)])


def test_apply_settings_switches_every_member_in_place(data_cpu):
    population = PopulationTrainer(data_cpu, MEMBERS[:2], max_train_rows=8000)
    gamma = population.settings.gamma
    population.apply_settings([MEMBERS[2], MEMBERS[0]])
    assert population.settings.gamma is gamma
    assert gamma.tolist() == pytest.approx([MEMBERS[2].gamma, MEMBERS[0].gamma])
    assert population.members[0].config == MEMBERS[2]
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
def test_a_population_of_one_trains_as_the_lone_trainer(device):
    data = to_device(*planted_arrays(), torch.device(device))
    config = replace(SMALL, steps_per_epoch=8)
    population = PopulationTrainer(data, [config], max_train_rows=8000, seed=5)
    lone = DQNTrainer(data, config, max_train_rows=8000, seed=5)
    ours, theirs = train(population, FOLDS[0], epochs=1), train(lone, FOLDS[0], epochs=1)
    # The same draws on either device; on CUDA the products round differently (bmm against mm, TF32).
    # (TF32 products may flip the sign of a near-zero gradient, which Adam turns into a ±lr move.)
    rel, atol = (1e-4, 1e-5) if device == "cpu" else (5e-2, 1e-2)
    assert ours[0][0]["loss"] == pytest.approx(theirs[0]["loss"], rel=rel)
    for name, value in lone.state_dict_cpu().items():
        torch.testing.assert_close(population.members[0].state_dict_cpu()[name], value, rtol=rel, atol=atol)


@pytest.mark.parametrize("device", DEVICES)
def test_one_population_serves_every_fold_and_settings_with_one_capture(device):
    data = to_device(*planted_arrays(), torch.device(device))
    population = PopulationTrainer(data, MEMBERS[:2], max_train_rows=8000)
    train(population, FOLDS[0], epochs=1)
    population.apply_settings([MEMBERS[2], MEMBERS[0]])
    stats = train(population, FOLDS[1], epochs=1)
    assert population.graph_captures == (1 if device == "cuda" else 0)
    assert population.compiles == (1 if device == "cuda" and SMALL.compile else 0)
    losses = [s["loss"] for s in stats[0]]
    assert all(loss == loss and loss >= 0 for loss in losses)
    assert losses[0] != losses[1]
