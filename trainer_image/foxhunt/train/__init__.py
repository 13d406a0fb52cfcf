"""The persistent Double-DQN trainer: built once per run, reset in place between folds.

Modules, one job each: `device_data` (the fxcache on the device, uploaded once), `networks` (the
Q-network, and its paired and fused evaluations on CUDA), `dqn` (the algorithm and the trainer's
state), `settings` (the shape-free settings as device values), `step` (compile and CUDA-graph
capture around the plain step), `warmup` (a CUDA trainer's one-time kernel loads, at build),
`population` (trials side by side as one batched model), `fold_window` (the fold a trainer
works on), `policy` (greedy rollout scan, costs, metrics, annualisation), `diagnostics` (what the greedy
policy does, epoch by epoch).
"""

from foxhunt.train.device_data import DeviceData, resolve_device, synchronize, to_device
from foxhunt.train.diagnostics import FoldHistory, TrainingDiverged, feature_agreement, policy_collapse
from foxhunt.train.dqn import DQNTrainer, fold_seed, td_target
from foxhunt.train.networks import build_qnet
from foxhunt.train.policy import (
    FLAT,
    N_ACTIONS,
    periods_per_year,
    policy_metrics,
    policy_pnl,
    position_changes,
    rollout_positions,
    rollout_positions_reference,
    trading_cost,
)
from foxhunt.train.population import POPULATION_SHARED, Member, PopulationTrainer
from foxhunt.train.settings import SHAPE_FIELDS

__all__ = [
    "FLAT",
    "N_ACTIONS",
    "POPULATION_SHARED",
    "SHAPE_FIELDS",
    "DQNTrainer",
    "DeviceData",
    "FoldHistory",
    "Member",
    "PopulationTrainer",
    "TrainingDiverged",
    "build_qnet",
    "feature_agreement",
    "fold_seed",
    "periods_per_year",
    "policy_collapse",
    "policy_metrics",
    "policy_pnl",
    "position_changes",
    "resolve_device",
    "rollout_positions",
    "rollout_positions_reference",
    "synchronize",
    "td_target",
    "to_device",
    "trading_cost",
]
