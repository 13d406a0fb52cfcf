"""Inputs shared by the trainer's tests on every device (tests/ runs the CUDA cases where CUDA is present;
tests_gpu/ collects them on the GPU machine)."""

import numpy as np
import torch

from foxhunt.config import DQNConfig
from foxhunt.data.folds import FoldRange
from foxhunt.train.policy import ValidationFigures

# The devices the parametrised trainer tests run on: CUDA only where it exists, so CI has nothing to skip.
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
# How closely a device's float32 reductions match a float64 reference loop.
TOLERANCE = {"cpu": {"rel": 1e-6, "abs": 1e-9}, "cuda": {"rel": 1e-5, "abs": 1e-8}}
MINUTE_NS = 60_000_000_000

SMALL = DQNConfig(hidden=32, batch_size=512, steps_per_epoch=15)
FOLDS = [
    FoldRange(0, 0, 8000, 8060, 10_000, 1.0),
    FoldRange(1, 4000, 12_000, 12_060, 14_000, 1.0),
    FoldRange(2, 8000, 16_000, 16_060, 18_000, 1.0),
]


def planted_arrays(n: int = 20_000, seed: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random features, except column 0: the last AR(1) return that the 1-bar target depends on."""
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(n + 1) * 1e-3
    ret = np.zeros(n + 1)
    for i in range(1, n + 1):
        ret[i] = 0.3 * ret[i - 1] + noise[i]
    features = rng.standard_normal((n, 42)).astype(np.float32)
    features[:, 0] = ret[:n] * 1e3
    targets = np.zeros((n, 4), np.float32)
    targets[:, 0] = ret[1:]
    return features, targets, np.arange(n, dtype=np.int64) * MINUTE_NS


def run_fold(trainer, fold_range: FoldRange, epochs: int = 2) -> ValidationFigures:
    """One fold as the pipeline runs it: point, reset, normalize, train, validate."""
    trainer.window.set_fold_range(fold_range)
    trainer.reset_for_fold(fold_range.fold)
    trainer.window.compute_norm_stats()
    for epoch in range(epochs):
        trainer.train_epoch(epoch, epochs)
        if trainer.failures[0] is not None:  # as the fold loop ends a run's fold
            raise trainer.failures[0]
    return trainer.policies.validate()


def target_network(trainer, member: int = 0):
    """Member `member`'s target network over views of the trainer's stacked target weights."""
    from foxhunt.train.networks import member_network

    return member_network(trainer.target_params, member, trainer.config.hidden)
