"""One member's figures of one training epoch, as `DQNTrainer.train_epoch` returns them.

The fold loop prints them and writes them into `fold_N/report.json`'s `epochs` (as the report's
`EpochStats`, whose fields are these less the tail Sharpe, which the fold's `selection` entry holds),
so the keys on disk are this dataclass's field names.
"""

from __future__ import annotations

from dataclasses import dataclass

from foxhunt.train.diagnostics import IGNORED_AGREEMENT, policy_collapse


@dataclass(frozen=True)
class EpochFigures:
    """One epoch of one member: the step's figures, and the greedy policy's diagnostics when kept."""

    epoch: int
    loss: float  # mean Huber loss of the epoch's gradient steps
    epsilon: float  # exploration probability of the epoch's collection
    steps: int  # gradient steps
    collect_seconds: float
    train_seconds: float  # the steps and the accumulators' read
    samples_per_second: float  # the member's transitions over the shared step time
    q_mean: float | None = None  # mean |Q| over the epoch's batches
    q_max: float | None = None  # largest |Q| over the epoch's batches
    # Diagnostics of the greedy policy after the epoch (None when the trainer keeps none):
    action_shares: list[float] | None = None  # validation bars short, flat, long
    train_sharpe: float | None = None  # in-sample net Sharpe
    val_sharpe: float | None = None  # validation net Sharpe at the evaluation cost
    feature_agreement: float | None = None  # share of actions unchanged with features at their mean
    tail_sharpe: float | None = None  # select_tail_share: net Sharpe on the training slice's tail

    @property
    def seconds(self) -> float:
        """Collection plus training."""
        return self.collect_seconds + self.train_seconds

    @property
    def collapsed(self) -> bool:
        """The greedy policy takes one action on at least the collapse share of validation bars."""
        return self.action_shares is not None and policy_collapse(self.action_shares)

    @property
    def features_ignored(self) -> bool:
        """The greedy actions barely change when the features are replaced by their training mean."""
        return self.feature_agreement is not None and self.feature_agreement >= IGNORED_AGREEMENT
