"""Model selection on a held-back tail of the training slice (select_tail_share, select_min_sharpe)."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from support.trainer_cases import DEVICES, MINUTE_NS

from foxhunt.config import DQNConfig
from foxhunt.data.folds import FoldRange
from foxhunt.errors import ConfigError
from foxhunt.train import DQNTrainer, member_policy, to_device
from foxhunt.train.networks import build_qnet
from foxhunt.train.policy import greedy_rollout
from foxhunt.train.selection import (
    MIN_TAIL_ROWS,
    TailSelection,
    abstain_,
    head_end,
    make_flat_,
    tail_gate,
)

FOLD = FoldRange(0, 1000, 5000, 5060, 6000, 1.0)
SMALL = DQNConfig(hidden=8, batch_size=64, steps_per_epoch=3, compile=False)


def small_trainer(device: str, config: DQNConfig, timestamp: np.ndarray | None = None) -> DQNTrainer:
    """A trainer on FOLD of 6000 bars of noise; `timestamp` defaults to regular minutes."""
    rng = np.random.default_rng(0)
    features = rng.standard_normal((6000, 5)).astype(np.float32)
    targets = (rng.standard_normal((6000, 4)) * 1e-4).astype(np.float32)
    timestamp = np.arange(6000, dtype=np.int64) * MINUTE_NS if timestamp is None else timestamp
    data = to_device(features, targets, timestamp, torch.device(device))
    trainer = DQNTrainer(data, config, max_train_rows=FOLD.train_rows, seed=0, eval_cost=1e-4)
    trainer.set_fold_range(FOLD)
    trainer.reset_for_fold(0)
    trainer.window.compute_norm_stats()
    return trainer


def test_the_tail_is_the_last_share_of_the_training_rows():
    assert head_end(FOLD, 0.25) == 5000 - 1000
    assert head_end(FOLD, 0.1) == 5000 - 400
    assert head_end(FOLD, 0.0) == FOLD.train_end  # off: the learner reads the whole slice


def test_a_share_that_splits_a_row_rounds_the_tail_up():
    # 4,000 training rows × 0.0333 = 133.2: the tail holds 134 rows, never fewer than the share asks
    assert head_end(FOLD, 0.0333) == 5000 - 134


def test_a_tiny_tail_is_widened_to_the_smallest_one_worth_scoring():
    assert head_end(FOLD, 0.001) == 5000 - MIN_TAIL_ROWS


def test_a_tail_that_leaves_nothing_to_learn_on_is_an_error():
    with pytest.raises(ValueError, match="select_tail_share"):
        head_end(FoldRange(0, 0, 65, 65, 100, 1.0), 0.5)


def test_the_share_is_a_checked_setting():
    with pytest.raises(ConfigError, match="select_tail_share"):
        DQNConfig(select_tail_share=0.6)


@pytest.mark.parametrize("device", DEVICES)
def test_collection_and_the_learning_step_read_only_the_head(device):
    trainer = small_trainer(device, replace(SMALL, select_tail_share=0.25))
    assert trainer.collect(0.5) == 3000 - 1  # the head's transitions, none from the held-back tail
    assert int(trainer.window.n_valid) == 3000 - 1
    assert int(trainer.window.rows[0]) == FOLD.train_start  # the first transition is the fold's first row


def test_epochs_are_scored_on_the_tail_not_on_validation(monkeypatch):
    trainer = small_trainer("cpu", replace(SMALL, select_tail_share=0.25))
    ranges, tensor = [], member_policy.epoch_policy_tensor

    def spy(*args, tails, **kwargs):
        # the rows whose greedy maps are scored
        ranges.extend((start, start + maps.shape[0]) for start, maps in tails)
        return tensor(*args, tails=tails, **kwargs)

    monkeypatch.setattr(member_policy, "epoch_policy_tensor", spy)
    figures = trainer.train_epoch(0, 2)
    assert ranges == [(4000, 5000)]
    assert figures[0] is not None
    assert figures[0].tail_sharpe == trainer.policies.tail_score(0)  # its per-call specification


def test_without_selection_the_last_epoch_stays_and_no_tail_is_scored():
    trainer = small_trainer("cpu", replace(SMALL, select_tail_share=0.0))
    figures = trainer.train_epoch(0, 1)
    assert figures[0] is not None and figures[0].tail_sharpe is None
    assert trainer.policies.choose_policies() == {0: None}
    assert trainer.window.learn_end == FOLD.train_end


def _net(seed: int) -> torch.nn.Sequential:
    torch.manual_seed(seed)
    return build_qnet(5, 8)


def test_the_best_epochs_weights_are_kept_not_the_last():
    selection, net = TailSelection(1), _net(0)
    snapshots = []
    for epoch, sharpe in enumerate([1.0, 3.0, 2.0]):
        with torch.no_grad():
            for p in net.parameters():
                p.add_(1.0)
        snapshots.append([p.detach().clone() for p in net.parameters()])
        selection.observe(0, epoch, sharpe, net)
    choice = selection.choose(0, net, gate=0.0)
    assert (choice.epoch, choice.tail_sharpe, choice.flat) == (1, 3.0, False)
    for p, kept in zip(net.parameters(), snapshots[1], strict=True):
        assert torch.equal(p, kept)


def test_a_tie_keeps_the_earlier_epoch():
    selection, net = TailSelection(1), _net(0)
    selection.observe(0, 0, 2.0, net)
    selection.observe(0, 1, 2.0, net)
    assert selection.choose(0, net, 0.0).epoch == 0


def test_a_best_tail_sharpe_at_the_margin_goes_flat():
    selection, net = TailSelection(1), _net(0)
    selection.observe(0, 0, 0.5, net)
    assert selection.choose(0, net, gate=0.5).flat
    selection.reset()
    selection.observe(0, 0, 0.5001, net)
    assert not selection.choose(0, net, gate=0.5).flat


def test_the_folds_own_gate_counts_select_min_t_errors_not_the_pooled_decisions():
    # 2 errors of a zero Sharpe over 30,000 bars of 362,880 a year, plus the minimum: not select_pool_t's 3.
    config = replace(DQNConfig(), select_min_sharpe=0.5, select_min_t=2.0, select_pool_t=3.0)
    assert tail_gate(config, 30_000, 362_880.0) == pytest.approx(0.5 + 2.0 * np.sqrt(362_880.0 / 30_000))


def test_a_negative_best_goes_flat_at_the_default_margin():
    selection, net = TailSelection(1), _net(0)
    selection.observe(0, 0, -0.1, net)
    assert selection.choose(0, net, gate=DQNConfig().select_min_sharpe).flat


def test_a_flat_network_chooses_flat_from_every_position_and_state():
    net = _net(3)
    make_flat_(net)
    features = torch.randn(500, 5) * 10
    positions = greedy_rollout(net, features, torch.zeros(5), torch.ones(5))
    assert torch.all(positions == 0)
    q = net(torch.cat([features, torch.ones(500, 1)], dim=1))
    assert torch.all(q.argmax(dim=1) == 1)


@pytest.mark.parametrize("device", DEVICES)
def test_a_fold_that_finds_nothing_on_the_tail_is_flat_in_its_own_weights(device):
    trainer = small_trainer(device, replace(SMALL, select_tail_share=0.25, select_min_sharpe=1e3))
    for epoch in range(2):
        trainer.train_epoch(epoch, 2)
    choice = trainer.policies.choose_policies()[0]
    assert choice.flat and choice.epoch is not None
    assert torch.all(trainer.policies.greedy_positions() == 0)
    saved = build_qnet(5, 8)
    saved.load_state_dict(trainer.policies.state_dict_cpu())  # the checkpoint reproduces the flat policy
    assert torch.all(greedy_rollout(saved, torch.randn(100, 5), torch.zeros(5), torch.ones(5)) == 0)


def test_a_new_fold_forgets_the_last_folds_best():
    trainer = small_trainer("cpu", replace(SMALL, select_tail_share=0.25))
    trainer.train_epoch(0, 1)
    trainer.reset_for_fold(1)
    assert trainer.selection.best_epoch == [None] and trainer.selection.tail_sharpes == [[]]


@pytest.mark.parametrize("share_of_largest_gap", [0.0, 0.3, 0.7])
def test_abstention_leaves_flat_only_where_the_q_gap_clears_the_margin(share_of_largest_gap):
    net = _net(5)
    states = torch.cat([torch.randn(2000, 5) * 3, torch.randint(-1, 2, (2000, 1)).float()], dim=1)
    q = net(states).detach()
    gap = torch.maximum(q[:, 0], q[:, 2]) - q[:, 1]
    margin = share_of_largest_gap * float(gap.max())
    expected = torch.where(gap > margin, torch.where(q[:, 0] > q[:, 2], 0, 2), 1)
    abstain_(net, margin)
    assert torch.equal(net(states).argmax(dim=1), expected)
    if margin:  # the case is not vacuous: some states clear the margin, some plain argmax moves do not
        assert (expected == 1).any() and (expected != 1).any() and ((gap > 0) & (gap <= margin)).any()


def test_the_abstention_margin_is_multiples_of_the_evaluation_cost_in_q_units():
    config = replace(SMALL, abstain_cost_multiple=2.0, cost=3e-4, reward_scale=1e4)
    trainer = small_trainer("cpu", config)  # evaluated at 1 bp: the margin ignores the training cost
    assert trainer.policies.abstain_margin() == pytest.approx(2.0 * 1e-4 * 1e4)


def test_the_fold_checkpoint_holds_the_abstaining_policy():
    trainer = small_trainer("cpu", replace(SMALL, abstain_cost_multiple=3.0))
    trainer.train_epoch(0, 1)
    states = torch.cat([torch.randn(500, 5), torch.zeros(500, 1)], dim=1)
    q = trainer.networks[0](states).detach()
    trainer.policies.choose_policies()
    saved = build_qnet(5, 8)
    saved.load_state_dict(trainer.policies.state_dict_cpu())
    shifted = q.clone()
    shifted[:, 1] += trainer.policies.abstain_margin()
    assert torch.equal(saved(states).argmax(dim=1), shifted.argmax(dim=1))


def test_tail_scoring_scores_the_abstaining_policy_and_leaves_the_weights_unchanged(monkeypatch):
    trainer = small_trainer("cpu", replace(SMALL, select_tail_share=0.25, abstain_cost_multiple=100.0))
    before = [p.clone() for p in trainer.networks[0].parameters()]
    assert trainer.policies.tail_score(0) == 0.0  # an enormous margin: flat on the tail, Sharpe 0
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.networks[0].parameters(), strict=True))


def test_the_fold_report_says_which_epoch_was_chosen_and_every_tail_figure():
    selection, net = TailSelection(1), _net(0)
    for epoch, sharpe in enumerate([0.5, 2.0, -1.0]):
        selection.observe(0, epoch, sharpe, net)
    assert selection.choose(0, net, 1.5).to_dict() == {
        "selected_epoch": 1,
        "tail_sharpe": 2.0,
        "went_flat": False,
        "tail_sharpes": [0.5, 2.0, -1.0],
        "gate_sharpe": 1.5,
    }
