"""--seeds K: a population of K members of one setting, member i trained from its own seed."""

import pytest
import torch
from support.trainer_cases import FOLDS, SMALL, planted_arrays, run_fold

from foxhunt.config import ConfigError, RunConfig
from foxhunt.train import DQNTrainer, to_device


def _data():
    features, targets, timestamp = planted_arrays(16_000)
    return to_device(features, targets, timestamp, torch.device("cpu"))


def _weights(trainer, member):
    return [p.clone() for p in trainer.policies.state_dict_cpu(member).values()]


def test_each_member_learns_bit_for_bit_what_a_run_of_its_seed_learns():
    data = _data()
    population = DQNTrainer(data, [SMALL, SMALL], max_train_rows=8000, seed=5, member_seeds=[5, 6])
    run_fold(population, FOLDS[0])
    for member, seed in enumerate((5, 6)):
        alone = DQNTrainer(data, SMALL, max_train_rows=8000, seed=seed)
        run_fold(alone, FOLDS[0])
        for a, b in zip(_weights(population, member), _weights(alone, 0), strict=True):
            assert torch.equal(a, b)


def test_members_of_different_seeds_start_apart():
    trainer = DQNTrainer(_data(), [SMALL, SMALL], max_train_rows=8000, seed=0, member_seeds=[0, 1])
    trainer.window.set_fold_range(FOLDS[0])
    trainer.reset_for_fold(0)
    assert not torch.equal(_weights(trainer, 0)[0], _weights(trainer, 1)[0])


def test_each_fold_starts_from_its_own_initialisation_and_the_same_fold_from_the_same_one():
    trainer = DQNTrainer(_data(), SMALL, max_train_rows=8000, seed=0)
    trainer.window.set_fold_range(FOLDS[0])
    starts = {}
    for fold in (0, 1, 0):
        trainer.reset_for_fold(fold)
        weights = _weights(trainer, 0)[0]
        assert fold not in starts or torch.equal(starts[fold], weights)  # a fold repeats alone
        starts[fold] = weights
    assert not torch.equal(starts[0], starts[1])  # folds do not share one initialisation


def test_without_member_seeds_every_member_takes_the_run_seed():
    trainer = DQNTrainer(_data(), [SMALL, SMALL], max_train_rows=8000, seed=3)
    assert trainer.member_seeds == [3, 3]


def test_a_seed_per_member_is_required():
    with pytest.raises(ValueError, match="member seeds"):
        DQNTrainer(_data(), [SMALL, SMALL], max_train_rows=8000, seed=0, member_seeds=[0])


def test_seeds_side_by_side_are_refused_in_a_search():
    with pytest.raises(ConfigError, match="seeds"):
        RunConfig(seeds=2, trials=4)
