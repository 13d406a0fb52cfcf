"""One net P&L (`foxhunt.data.pnl.net_pnl`): every place a position series becomes a net P&L agrees with it
bar for bar: the evaluation's record (`Record.pnl`), the trainer's tail score and diagnostics
(`policy.policy_pnl`), the greedy policy's figures (`policy.policy_metrics`) and the learner's reward
(`replay.transition_reward`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from foxhunt.data.pnl import net_pnl
from foxhunt.evaluate.records import fold_record
from foxhunt.train.policy import policy_metrics, policy_pnl
from foxhunt.train.replay import transition_reward

POSITIONS = np.array([0.0, 1.0, 1.0, -1.0, 0.0, 0.0, -1.0, 1.0, 1.0, 0.0, -1.0, -1.0])
RETURNS = np.random.default_rng(5).normal(1e-5, 4e-4, POSITIONS.size)
COST = 3e-4
TIMESTAMP = np.arange(POSITIONS.size, dtype=np.int64) * 60_000_000_000


def by_hand() -> np.ndarray:
    """Each bar: position × return − cost × |position − the bar before's| (flat before the first)."""
    previous, pnl = 0.0, []
    for p, r in zip(POSITIONS, RETURNS, strict=True):
        pnl.append(p * r - COST * abs(p - previous))
        previous = p
    return np.array(pnl)


def tensor(values: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(values.copy())  # float64: the same arithmetic as numpy's, bit for bit


def test_the_one_formula_charges_the_cost_on_each_change_of_position():
    previous = np.concatenate([[0.0], POSITIONS[:-1]])
    np.testing.assert_array_equal(net_pnl(POSITIONS, previous, RETURNS, COST), by_hand())
    on_holding = POSITIONS * RETURNS - COST * np.abs(POSITIONS)  # a plausible wrong formula: cost on |p|
    assert not np.allclose(on_holding, by_hand())


def test_the_evaluations_record_pays_the_one_pnl():
    record = fold_record(0, 0, POSITIONS, TIMESTAMP, RETURNS)
    np.testing.assert_array_equal(record.pnl(COST), by_hand())


def test_the_trainers_policy_pnl_pays_the_one_pnl():
    np.testing.assert_array_equal(policy_pnl(tensor(POSITIONS), tensor(RETURNS), COST).numpy(), by_hand())


def test_the_greedy_policys_figures_sum_the_one_pnl():
    figures = policy_metrics(tensor(POSITIONS), tensor(RETURNS), COST, 252.0)
    assert figures.total_return == pytest.approx(by_hand().sum(), rel=1e-12)
    assert figures.gross_return == pytest.approx((POSITIONS * RETURNS).sum(), rel=1e-12)


def test_the_learners_reward_is_each_bars_one_pnl_scaled():
    previous = tensor(np.concatenate([[0.0], POSITIONS[:-1]]))
    reward = transition_reward(previous, tensor(POSITIONS), tensor(RETURNS), COST, 1e4)
    np.testing.assert_allclose(reward.numpy(), by_hand() * 1e4, rtol=1e-15, atol=0.0)
