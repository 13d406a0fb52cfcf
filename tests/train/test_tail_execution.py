"""The tail selection scores a policy with the evaluation's execution model: its tail Sharpe is the
evaluation's net Sharpe of the same positions on the same bars (spreads in points widened outside a
London session, slippage, next-open fills and financing), on real EURUSD bars."""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import pytest
import torch
from support.data_files import EURUSD
from support.trainer_cases import DEVICES

from foxhunt.config import DQNConfig, EvalConfig, FoldConfig
from foxhunt.data.bars import read_bars_file
from foxhunt.data.features import compute_features
from foxhunt.data.folds import generate_walk_forward_indices
from foxhunt.evaluate.evaluation import fold_record, score
from foxhunt.evaluate.run_scores import execution_rows, run_scoring
from foxhunt.train.device_data import to_device
from foxhunt.train.dqn import DQNTrainer
from foxhunt.train.policy import periods_per_year

EXECUTION = EvalConfig(
    cost=1e-4,
    spread=2e-4,
    spread_points=1e-4,  # a pip
    first_close=1.2005,
    session="08:00-17:00",
    session_zone="Europe/London",
    off_session_factor=3.0,
    slippage=2e-5,
    fill="next_open",
    financing=0.5,  # large, so that the nights weigh
)
# abstain_cost_multiple 0: the policy as kept is the greedy one, and it trades on the tail.
SMALL = DQNConfig(hidden=32, batch_size=512, steps_per_epoch=15, abstain_cost_multiple=0.0)


@functools.cache
def eurusd_fold():
    table = compute_features(read_bars_file(str(EURUSD))[0])
    fold = generate_walk_forward_indices(
        table.timestamp, FoldConfig(train_days=20, val_days=5, step_days=5, max_folds=1)
    )[0]
    return table, fold


@functools.cache
def tail_case(device: str):
    """A trainer one epoch into the fold on `device`, its greedy tail record, √(tail bars a year), the data."""
    table, fold = eurusd_fold()
    data = to_device(table.features, table.targets, table.timestamp, torch.device(device))
    trainer = DQNTrainer(
        data,
        SMALL,
        max_train_rows=fold.train_rows,
        seed=0,
        eval_cost=EXECUTION.cost,
        eval_spread=EXECUTION.spread,
        execution=execution_rows(EXECUTION, data),
    )
    trainer.set_fold_range(fold)
    trainer.reset_for_fold(fold.fold)
    trainer.window.compute_norm_stats()
    trainer.train_epoch(0, 1)
    start, end = trainer.window.learn_end, fold.train_end
    positions = trainer.policies.greedy_positions(start, end)
    record = fold_record(fold.fold, start, positions, data.timestamp, data.targets[:, 0])
    return trainer, record, math.sqrt(periods_per_year(data.timestamp[start:end])), data


def evaluation_sharpe(record, data, execution: bool, annualise: float) -> float:
    """The evaluation's net Sharpe of `record`, annualised as the tail gate is (the tail's own bars a year)."""
    scoring = replace(run_scoring(EXECUTION, 0, data), resamples=0, device=None)
    if not execution:
        scoring = replace(scoring, execution=None)
    return score(record, scoring).net.sharpe_per_period * annualise


@pytest.mark.parametrize("device", DEVICES)
def test_the_tail_policy_trades_and_holds_over_rollovers(device):
    _, record, _, _ = tail_case(device)
    assert record.position_changes.sum() > 20 and (record.positions != 0).mean() > 0.2


@pytest.mark.parametrize("device", DEVICES)
def test_the_tail_score_is_the_evaluations_net_sharpe_under_the_execution_model(device):
    # Catches: the tail scored with the flat cost alone (the simplified model), which differs here. On
    # CUDA the epoch's figure is replayed from a captured graph that reads the execution rows.
    trainer, record, annualise, data = tail_case(device)
    want = evaluation_sharpe(record, data, execution=True, annualise=annualise)
    simplified = evaluation_sharpe(record, data, execution=False, annualise=annualise)
    assert abs(want - simplified) > 0.5
    assert trainer.policies.tail_score(0) == pytest.approx(want, rel=1e-9)
    epoch = trainer.policies.epoch_figures(1, {0: None})[0]["tail_sharpe"]
    assert epoch == pytest.approx(want, rel=1e-9)
