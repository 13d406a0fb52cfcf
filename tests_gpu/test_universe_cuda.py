"""A universe on CUDA: the instruments uploaded exactly into one array each, and one captured step serving
folds made of different instruments (the transition rows, span lengths and stats refilled in place)."""

import numpy as np
import torch
from support.trainer_cases import SMALL, planted_arrays

from foxhunt.data.folds import FoldRange
from foxhunt.train import DQNTrainer
from foxhunt.train.device_data import SpanPart, universe_to_device

CUDA = torch.device("cuda")
N = 20_000


def test_a_universe_is_uploaded_exactly_in_its_order():
    arrays = [planted_arrays(seed=s) for s in (1, 2, 3)]
    data = universe_to_device(["a", "b", "c"], arrays, CUDA)
    assert torch.equal(data.features.cpu(), torch.from_numpy(np.concatenate([a[0] for a in arrays])))
    assert torch.equal(data.targets.cpu(), torch.from_numpy(np.concatenate([a[1] for a in arrays])))
    assert data.instrument.tolist()[N - 1 : N + 1] == [0, 1] and data.universe.n_rows == 3 * N


def part(instrument: int, fold: int) -> SpanPart:
    base = instrument * N + fold * 4000
    return SpanPart(
        instrument, FoldRange(fold, base, base + 8000, base + 8060, base + 10_000, 1.0), base + 6000
    )


def test_one_captured_step_serves_folds_of_different_instruments():
    arrays = [planted_arrays(seed=s) for s in (1, 2, 3)]
    trainer = DQNTrainer(universe_to_device(["a", "b", "c"], arrays, CUDA), SMALL, max_train_rows=24_000)
    graph = trainer.step.graph
    assert graph is not None and trainer.graph_captures == 1
    for fold, members in enumerate([(0, 1, 2), (1,), (0, 2)]):
        trainer.window.set_parts([part(i, fold) for i in members])
        trainer.reset_for_fold(fold)
        trainer.window.compute_norm_stats()
        trainer.train_epoch(0, 1)
        assert torch.isfinite(trainer.loss_sum).all()
    assert trainer.step.graph is graph and trainer.graph_captures == 1
