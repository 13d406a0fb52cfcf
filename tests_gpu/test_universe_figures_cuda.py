"""On CUDA: a universe fold of 8 instruments (more than the epoch graph cache keeps keys) captures its epoch
figures once per key (with and without the diagnostics) and replays them for the rest of the fold, the
fold before's graphs freed; the replayed figures equal the eager ones bit for bit, and the tail figure is
the instruments' per-call tail scores pooled by bars."""

import pytest
import torch
from support.trainer_cases import SMALL, planted_arrays

from foxhunt.data.folds import FoldRange
from foxhunt.train import DQNTrainer
from foxhunt.train.device_data import SpanPart, universe_to_device
from foxhunt.train.epoch_graph import KEEP

CUDA = torch.device("cuda")
N, K, EPOCHS = 20_000, 8, 6


def part(instrument: int, fold: int) -> SpanPart:
    base = instrument * N + fold * 4000
    return SpanPart(
        instrument, FoldRange(fold, base, base + 8000, base + 8060, base + 10_000, 1.0), base + 6000
    )


def test_a_fold_of_eight_instruments_captures_once_per_key_and_replays():
    assert K > KEEP
    data = universe_to_device([f"i{i}" for i in range(K)], [planted_arrays(seed=s) for s in range(K)], CUDA)
    trainer = DQNTrainer(data, SMALL, max_train_rows=K * 8000, seed=3)
    policies = trainer.policies
    assert policies.selecting
    for fold in range(2):
        trainer.window.set_parts([part(i, fold) for i in range(K)])
        trainer.reset_for_fold(fold)
        trainer.window.compute_norm_stats()
        for epoch in range(EPOCHS):
            figures = trainer.train_epoch(epoch, EPOCHS, diagnose=epoch % 2 == 1)
            for flags in ([True], [False]):
                graphed = policies.figures_vector([0], flags).clone()
                eager = policies.figures_vector([0], flags, graphed=False)
                assert torch.equal(graphed, eager), (fold, epoch, flags)
        # one capture per key of the fold (with and without the diagnostics), then replays only
        assert policies.replayed.captures == 2 * (fold + 1)
        assert len(policies.replayed.graphs) == 2  # this fold's only: the fold before's were freed
        last = figures[0]
        assert last is not None
        assert last.tail_sharpe == pytest.approx(policies.pooled_tail_score(0), rel=1e-9, abs=1e-12)
