"""On CUDA: an epoch's greedy-policy figures replayed from one captured graph per fold equal the eager
figures bit for bit, across epochs (the weights change in place) and folds (a new capture), with and
without the diagnostics; a run with the graphs trains and selects as one without them."""

from dataclasses import replace

import pytest
import torch
from support.trainer_cases import FOLDS, SMALL, planted_arrays

from foxhunt.train import DQNTrainer, to_device

CUDA = torch.device("cuda")


@pytest.fixture(scope="module")
def data():
    return to_device(*planted_arrays(), CUDA)


def train_fold(trainer, fold_range, epochs: int, check=None) -> list:
    trainer.set_fold_range(fold_range)
    trainer.reset_for_fold(fold_range.fold)
    trainer.window.compute_norm_stats()
    figures = []
    for epoch in range(epochs):
        figures.append(trainer.train_epoch(epoch, epochs, diagnose=epoch % 2 == 1)[0])
        if check is not None:
            check(trainer)
    return figures


def test_replayed_figures_equal_the_eager_ones_bit_for_bit_at_every_epoch_and_fold(data):
    trainer = DQNTrainer(data, SMALL, max_train_rows=8000, seed=3)
    policies = trainer.policies
    assert policies.selecting

    def check(trainer) -> None:
        for flags in ([True], [False]):
            graphed = policies.figures_vector([0], flags).clone()
            eager = policies.figures_vector([0], flags, graphed=False)
            assert torch.equal(graphed, eager), flags

    for fold_range in FOLDS[:2]:
        train_fold(trainer, fold_range, 4, check)
    assert policies.replayed.captures >= 2  # at least one capture per fold


def untimed(figures):
    """An epoch's figures without its clock readings (each run times itself)."""
    return replace(figures, collect_seconds=0, train_seconds=0, samples_per_second=0, select_seconds=0)


def test_a_fold_trains_and_selects_the_same_with_and_without_the_graphs(data):
    graphed = DQNTrainer(data, SMALL, max_train_rows=8000, seed=4)
    eager = DQNTrainer(data, SMALL, max_train_rows=8000, seed=4)
    eager.policies.replayed.graphed = False
    got = [train_fold(graphed, f, 5) for f in FOLDS[:2]]
    want = [train_fold(eager, f, 5) for f in FOLDS[:2]]
    assert [[untimed(e) for e in fold] for fold in got] == [[untimed(e) for e in f] for f in want]
    assert graphed.policies.replayed.captures >= 2 and eager.policies.replayed.captures == 0
    for kept in ("best_epoch", "best_sharpe", "tail_sharpes"):
        assert getattr(graphed.selection, kept) == getattr(eager.selection, kept), kept
