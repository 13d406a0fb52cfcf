"""One fold of the signal fixture (support/signal_arrays.py) trained on the CPU and scored on its validation
window: the harness of the learning tests, with the bootstrap readings they assert."""

from __future__ import annotations

from functools import cache

import numpy as np
import torch

from foxhunt.config import DQNConfig
from foxhunt.data.folds import generate_walk_forward_indices
from foxhunt.evaluate.sharpe import bootstrap_interval
from foxhunt.train import DQNTrainer, to_device
from foxhunt.train.policy import policy_pnl
from support.signal_arrays import DRIFT, FOLDS, signal_arrays

EPOCHS = 15


@cache
def fixture_data(signal: bool, drift: float = DRIFT):
    """The fixture on the CPU and its one fold (`signal=False`: the driftless twin; `drift`: the regime's)."""
    arrays = signal_arrays(seed=0, signal=signal, drift=drift)
    fold = generate_walk_forward_indices(arrays.timestamp, FOLDS, close_returns=arrays.targets[:, 0])[0]
    return to_device(arrays.features, arrays.targets, arrays.timestamp, torch.device("cpu")), fold


def trained_fold(
    config: DQNConfig, seed: int, signal: bool, eval_cost: float, epochs: int = EPOCHS, drift: float = DRIFT
) -> tuple[DQNTrainer, object]:
    """A trainer of `config` after `epochs` epochs of the fixture's fold (one thread; the regime's `drift`),
    and the policy it chose (its member 0's selection: None, or flat or an epoch kept)."""
    torch.set_num_threads(1)
    data, fold = fixture_data(signal, drift)
    trainer = DQNTrainer(
        data, config, max_train_rows=fold.train_rows, seed=seed, eval_cost=eval_cost, diagnostics=False
    )
    trainer.set_fold_range(fold)
    trainer.reset_for_fold(fold.fold)
    trainer.window.compute_norm_stats()
    for epoch in range(epochs):
        trainer.train_epoch(epoch, epochs)
    return trainer, trainer.policies.choose_policies()[0]


def validation_pnl(
    config: DQNConfig, seed: int, signal: bool = True, eval_cost: float = 1e-4
) -> tuple[np.ndarray, np.ndarray, object]:
    """Per-bar net returns of the fold's policy and of buy-and-hold over validation at `eval_cost`, and the
    policy's figures, after `EPOCHS` epochs."""
    trainer, _ = trained_fold(config, seed, signal, eval_cost)
    data, fold = fixture_data(signal)
    positions = trainer.policies.greedy_positions()
    returns = data.targets[fold.val_slice, 0]
    pnl = policy_pnl(positions, returns, eval_cost).double().numpy()
    hold = policy_pnl(torch.ones_like(returns), returns, eval_cost).double().numpy()
    return pnl, hold, trainer.policies.validate()


def above_flat(pnl: np.ndarray) -> bool:
    """The bootstrap interval of the Sharpe lies above flat's 0."""
    return bootstrap_interval(pnl, resamples=500, seed=0)[0] > 0.0


def below_flat(pnl: np.ndarray) -> bool:
    """The bootstrap interval of the Sharpe lies below flat's 0."""
    return bootstrap_interval(pnl, resamples=500, seed=0)[1] < 0.0
