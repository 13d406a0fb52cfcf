"""The trainer tests of tests/ that take a `device`, collected here so `pytest tests_gpu` runs their CUDA
cases; conftest.py keeps only those (tests/ runs the CPU cases in CI, and the CUDA ones too on a GPU)."""

from test_dqn_core import *  # noqa: F403
from test_greedy_policy import *  # noqa: F403
from test_trainer import *  # noqa: F403
