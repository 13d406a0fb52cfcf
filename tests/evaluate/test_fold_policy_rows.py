"""A loaded fold policy reads feature rows as they come, read-only ones too (a memory-mapped fxcache)."""

import warnings

import numpy as np
import torch

from foxhunt.config import DQNConfig
from foxhunt.data.features import FEATURE_NAMES
from foxhunt.evaluate.fold_policy import Policy
from foxhunt.train.dqn import build_qnet


def _policy() -> Policy:
    torch.manual_seed(0)
    n = len(FEATURE_NAMES)
    return Policy(0, build_qnet(n, 8), torch.zeros(n), torch.ones(n), DQNConfig(hidden=8))


def test_read_only_feature_rows_give_the_same_q_values_without_a_warning():
    rows = np.random.default_rng(0).normal(size=(5, len(FEATURE_NAMES))).astype(np.float32)
    frozen = rows.copy()
    frozen.flags.writeable = False
    policy = _policy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch's "not writable" UserWarning would fail here
        q = policy.q_values(frozen, 0.0)
    np.testing.assert_array_equal(q, policy.q_values(rows, 0.0))
    assert not frozen.flags.writeable and q.shape == (5, 3)
