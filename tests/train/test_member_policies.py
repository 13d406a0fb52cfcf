"""The members' greedy policies (`trainer.policies`, member_policy.py): built by the trainer from what it
hands over, they follow the trainer's current settings and fold."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from support.trainer_cases import MINUTE_NS

from foxhunt.config import DQNConfig, trading_cost
from foxhunt.data.folds import FoldRange
from foxhunt.train import DQNTrainer, to_device
from foxhunt.train.member_policy import MemberPolicies
from foxhunt.train.policy import greedy_rollout

FIRST = FoldRange(0, 0, 2000, 2060, 2600, 1.0)
SECOND = FoldRange(1, 1000, 3000, 3060, 3900, 1.0)
SMALL = DQNConfig(hidden=8, batch_size=64, steps_per_epoch=2, compile=False, cost=1e-4)


def small_trainer(config: DQNConfig | list[DQNConfig], eval_cost: float | None = None) -> DQNTrainer:
    rng = np.random.default_rng(3)
    features = rng.standard_normal((4000, 5)).astype(np.float32)
    targets = (rng.standard_normal((4000, 4)) * 1e-4).astype(np.float32)
    data = to_device(features, targets, np.arange(4000, dtype=np.int64) * MINUTE_NS, torch.device("cpu"))
    trainer = DQNTrainer(data, config, max_train_rows=SECOND.train_rows, seed=0, eval_cost=eval_cost)
    trainer.set_fold_range(FIRST)
    trainer.window.compute_norm_stats()
    return trainer


def test_the_policies_score_at_the_settings_the_trainer_switched_to():
    trainer = small_trainer([SMALL, SMALL])  # eval_cost None: each member's own training cost
    assert trainer.policies.evaluation_cost(member=1) == pytest.approx(1e-4)
    switched = replace(SMALL, cost=7e-4, abstain_cost_multiple=3.0)
    trainer.apply_settings([SMALL, switched])
    assert trainer.policies.evaluation_cost(member=0) == pytest.approx(1e-4)
    assert trainer.policies.evaluation_cost(member=1) == pytest.approx(trading_cost(7e-4))
    assert trainer.policies.abstain_margin(1) == pytest.approx(3.0 * 7e-4 * SMALL.reward_scale)


def test_tail_selection_follows_the_share_the_trainer_switched_to():
    trainer = small_trainer(replace(SMALL, select_tail_share=0.0))
    assert not trainer.policies.selecting
    trainer.apply_settings(replace(SMALL, select_tail_share=0.2))
    assert trainer.policies.selecting


def test_the_policies_read_the_fold_the_trainer_points_at():
    trainer = small_trainer(SMALL, eval_cost=2e-4)
    trainer.set_fold_range(SECOND)
    trainer.window.compute_norm_stats()
    positions = trainer.policies.greedy_positions()
    window = trainer.window
    features = trainer.data.features[SECOND.val_start : SECOND.val_end]
    assert positions.shape == (SECOND.val_end - SECOND.val_start,)
    assert torch.equal(positions, greedy_rollout(trainer.networks[0], features, window.mean, window.std))
    learnt = trainer.data.features[SECOND.train_start : window.learn_end]  # the head: the tail is held back
    assert window.learn_end < SECOND.train_end
    assert torch.allclose(window.mean, learnt.mean(dim=0), atol=1e-6)


def test_the_policies_save_the_weights_the_trainer_trains():
    trainer = small_trainer(SMALL)
    before = trainer.policies.state_dict_cpu()
    trainer.train_epoch(0, 1)
    after = trainer.policies.state_dict_cpu()
    assert any(not torch.equal(before[name], after[name]) for name in before)
    for name, value in trainer.networks[0].state_dict().items():
        assert torch.equal(after[name], value)


def test_networks_and_settings_must_count_the_same_members():
    trainer = small_trainer(SMALL)
    with pytest.raises(ValueError, match="1 networks for 2 members"):
        MemberPolicies(
            networks=trainer.networks,
            configs=[SMALL, SMALL],
            window=trainer.window,
            data=trainer.data,
            selection=trainer.selection,
            eval_cost=None,
            eval_spread=0.0,
        )
