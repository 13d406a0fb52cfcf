"""The trainer tests of tests/ that take a `device`, collected here so `pytest tests_gpu` runs their CUDA
cases; conftest.py keeps only those (tests/ runs the CPU cases in CI, and the CUDA ones too on a GPU)."""

# The tiny fxcache that the trials' cases train on (tests/conftest.py registers it for tests/).
from support.run_cases import tiny_fxcache, tiny_params  # noqa: F401
from test_dqn_core import *  # noqa: F403
from test_greedy_policy import *  # noqa: F403
from test_networks import *  # noqa: F403
from test_population_trainer import *  # noqa: F403
from test_tail_execution import *  # noqa: F403
from test_trainer import *  # noqa: F403
from test_trainer_warmup import *  # noqa: F403
from test_trials_run import *  # noqa: F403
from test_universe_trainer import *  # noqa: F403
