"""The persistent Double-DQN trainer for a population of P ≥ 1 members: built once, reset in place between folds.

Modules, one job each: `dqn` (the algorithm and the trainer, top to bottom), `stacked` (the
arithmetic of P members' stacked weights: batched products, the paired next-state product, clip and
Adam), `replay` (collection into each member's replay), `networks` (the Q-network, a member's network
over its slot, the fused activation), `step` (compile and CUDA-graph capture around the plain step,
the warm-up range), `settings` (the shape-free settings as device values; what members share),
`device_data` (the fxcache on the device, the fold window), `policy` (greedy rollout scan, costs,
figures, annualisation), `diagnostics` (what the greedy policy does, epoch by epoch), `epoch_figures`
(what an epoch returns, a fold's warnings), `held_returns` (n-step, held-action targets), `selection`
(the training tail's choice, abstention), `fold_selection` (what it chose: the record report.json
keeps), `evidence` (the pooled trading decision), `member_policy` (`member_policy.MemberPolicies`, the trainer's policies: the
greedy policies scored, chosen, saved),
`cuda_start` (the CUDA context started in a thread while a run reads its fxcache).
"""

from typing import TYPE_CHECKING

# The names below are loaded on first use (PEP 562): `foxhunt.train.epoch_figures` and
# `foxhunt.train.fold_selection`, the records a report reads, are importable without torch; every
# other module here loads it.
if TYPE_CHECKING:
    from foxhunt.train.device_data import DeviceData, resolve_device, synchronize, to_device
    from foxhunt.train.diagnostics import FoldHistory, TrainingDiverged, feature_agreement
    from foxhunt.train.dqn import DQNTrainer, fold_seed, td_target
    from foxhunt.train.epoch_figures import policy_collapse
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
        score_positions,
    )
    from foxhunt.train.settings import POPULATION_SHARED, SHAPE_FIELDS

_HOMES = {
    "DeviceData": "foxhunt.train.device_data",
    "resolve_device": "foxhunt.train.device_data",
    "synchronize": "foxhunt.train.device_data",
    "to_device": "foxhunt.train.device_data",
    "FoldHistory": "foxhunt.train.diagnostics",
    "TrainingDiverged": "foxhunt.train.diagnostics",
    "feature_agreement": "foxhunt.train.diagnostics",
    "policy_collapse": "foxhunt.train.epoch_figures",
    "DQNTrainer": "foxhunt.train.dqn",
    "fold_seed": "foxhunt.train.dqn",
    "td_target": "foxhunt.train.dqn",
    "build_qnet": "foxhunt.train.networks",
    "FLAT": "foxhunt.train.policy",
    "N_ACTIONS": "foxhunt.train.policy",
    "periods_per_year": "foxhunt.train.policy",
    "policy_metrics": "foxhunt.train.policy",
    "policy_pnl": "foxhunt.train.policy",
    "position_changes": "foxhunt.train.policy",
    "rollout_positions": "foxhunt.train.policy",
    "rollout_positions_reference": "foxhunt.train.policy",
    "score_positions": "foxhunt.train.policy",
    "POPULATION_SHARED": "foxhunt.train.settings",
    "SHAPE_FIELDS": "foxhunt.train.settings",
}


__all__ = [
    "FLAT",
    "N_ACTIONS",
    "POPULATION_SHARED",
    "SHAPE_FIELDS",
    "DQNTrainer",
    "DeviceData",
    "FoldHistory",
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
    "score_positions",
]


def __getattr__(name: str) -> object:
    """A re-exported name, imported from its module on first use."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_HOMES[name]), name)
