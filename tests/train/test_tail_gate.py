"""The significance gate of the tail selection (select_min_t): a fold trades only where its best tail
Sharpe clears select_min_sharpe plus select_min_t standard errors of a zero Sharpe over the tail."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from support.trainer_cases import MINUTE_NS
from test_tail_selection import FOLD, SMALL, small_trainer

from foxhunt.config import DQNConfig
from foxhunt.train.policy import periods_per_year
from foxhunt.train.selection import tail_gate


def test_the_gate_is_t_standard_errors_of_a_zero_sharpe_over_the_tail():
    config = replace(SMALL, select_min_t=2.0)
    assert tail_gate(config, 10_000, 250_000.0) == pytest.approx(2.0 * math.sqrt(25.0))


def test_the_gate_adds_the_minimum_sharpe():
    config = replace(SMALL, select_min_t=3.0, select_min_sharpe=1.5)
    assert tail_gate(config, 40_000, 360_000.0) == pytest.approx(1.5 + 3.0 * 3.0)


def test_a_longer_tail_lowers_the_gate_with_its_square_root():
    config = replace(SMALL, select_min_t=2.0)
    assert tail_gate(config, 4 * 9_000, 90_000.0) == pytest.approx(tail_gate(config, 9_000, 90_000.0) / 2)


def test_without_t_the_gate_is_the_minimum_sharpe_alone():
    assert tail_gate(replace(SMALL, select_min_sharpe=0.7, select_min_t=0.0), 50, 1e6) == 0.7


def test_the_run_ships_a_quarter_tail_and_a_three_error_gate():
    # Measured (README, learner section): the driftless sample and the real bars stay flat, the planted
    # signal is still found; the learning tests in test_learning_signal.py run these defaults.
    assert (DQNConfig().select_tail_share, DQNConfig().select_min_t) == (0.25, 3.0)


def test_the_trainer_gates_on_its_own_tail_length_and_bar_frequency():
    trainer = small_trainer("cpu", replace(SMALL, select_tail_share=0.25, select_min_t=2.0))
    tail = FOLD.train_end - trainer.window.learn_end
    bars_per_year = periods_per_year(np.arange(tail, dtype=np.int64) * MINUTE_NS)
    assert tail == 1000
    assert trainer.policies.tail_gate() == pytest.approx(2.0 * math.sqrt(bars_per_year / tail))


def test_the_gate_reads_the_tails_bar_frequency_not_the_whole_datas():
    # Minute bars, except the held-back tail (rows 4000-4999 of FOLD) at five-minute spacing: the tail
    # has 365.25 · 1440 / 5 = 105,192 bars a year; the whole data, mostly minutes, about 315,700.
    # Catches: the gate annualised with the whole data's bars a year (equal only for regular bars).
    steps = np.ones(6000, dtype=np.int64)
    steps[4001:5000] = 5
    timestamp = np.cumsum(steps) * MINUTE_NS
    trainer = small_trainer("cpu", replace(SMALL, select_tail_share=0.25, select_min_t=2.0), timestamp)
    assert (trainer.window.learn_end, FOLD.train_end) == (4000, 5000)
    assert trainer.policies.tail_gate() == pytest.approx(2.0 * math.sqrt(365.25 * 1440 / 5 / 1000))


def test_a_fold_whose_best_tail_sharpe_is_below_the_gate_is_flat_and_says_its_gate():
    trainer = small_trainer(
        "cpu", replace(SMALL, select_tail_share=0.25, select_min_t=2.0, select_pool="fold")
    )
    trainer.train_epoch(0, 1)
    gate = trainer.policies.tail_gate()
    best = trainer.selection.best_sharpe[0]
    assert best < gate  # noise targets: one epoch's tail Sharpe is far below 2 standard errors (~46)
    choice = trainer.policies.choose_policies()[0]
    assert choice.flat and choice.gate == pytest.approx(gate)
    assert torch.all(trainer.policies.greedy_positions() == 0)


def test_a_fold_clearing_the_gate_keeps_its_best_epoch():
    trainer = small_trainer(
        "cpu", replace(SMALL, select_tail_share=0.25, select_min_t=1e-9, select_pool="fold")
    )
    trainer.train_epoch(0, 1)
    trainer.selection.best_sharpe[0] = 1.0  # a best tail epoch just above a gate of ~2e-8
    assert not trainer.policies.choose_policies()[0].flat


def test_the_gate_is_a_checked_setting():
    from foxhunt.errors import ConfigError

    with pytest.raises(ConfigError, match="select_min_t"):
        DQNConfig(select_min_t=-1.0)
