"""One member's figures of one training epoch, as `DQNTrainer.train_epoch` returns them, and the rules
that read a policy's diagnostics: collapse to one action, features ignored.

The fold loop prints them and the fold's report keeps them (`fold_N/report.json`'s `epochs`, whose keys
are this dataclass's field names less `tail_sharpe`: the fold's `selection` entry holds every epoch's).
Imports no torch, so reading a report needs none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

COLLAPSE_SHARE = 0.95  # one action on this share of validation bars: the policy collapsed
IGNORED_AGREEMENT = 0.99  # actions unchanged with features at their mean on this share: features ignored
COLLAPSED = "the policy collapsed to one action"  # the words of a warning and of a rejected trial
ACTION_NAMES = ("short", "flat", "long")


def policy_collapse(action_shares: list[float] | torch.Tensor, threshold: float = COLLAPSE_SHARE) -> bool:
    """True when one action (short, flat or long) takes at least `threshold` of the bars: the one
    collapse rule, read by an epoch's figures, a fold's history, its warnings and the search's flags."""
    return max(float(s) for s in action_shares) >= threshold


def ignores_features(agreement: float) -> bool:
    """True when at least IGNORED_AGREEMENT of the greedy actions stay the same with every feature at its
    training mean (`diagnostics.feature_agreement`)."""
    return agreement >= IGNORED_AGREEMENT


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
    # select_tail_share: net Sharpe on the training slice's tail (not written per epoch in report.json)
    tail_sharpe: float | None = None
    select_seconds: float = 0.0  # the tail score and diagnostics after the epoch (shared by the members)

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
        return self.feature_agreement is not None and ignores_features(self.feature_agreement)


# ---- a fold's warnings: the rules above, read on its last epoch ------------------------------------
def fold_warnings(fold: int, epochs: Sequence[EpochFigures]) -> list[str]:
    """What the last epoch's diagnostics say is wrong with the fold's policy: collapse, features ignored."""
    if not epochs:
        return []
    last, found = epochs[-1], []
    if last.collapsed and last.action_shares is not None:
        share = max(last.action_shares)
        action = ACTION_NAMES[list(last.action_shares).index(share)]
        found.append(
            f"fold {fold}: {COLLAPSED}: {action} on {share:.1%} of validation "
            f"bars (warning at {COLLAPSE_SHARE:.0%})"
        )
    if last.features_ignored:
        found.append(
            f"fold {fold}: the policy ignores the features: {last.feature_agreement:.1%} of its actions "
            f"stay the same with every feature at its training mean (warning at {IGNORED_AGREEMENT:.0%})"
        )
    return found


def fold_flags(epochs: Sequence[EpochFigures]) -> tuple[bool, bool]:
    """(collapsed, ignores features) of a fold's policy after its last epoch: the tests `fold_warnings` words."""
    if not epochs:
        return False, False
    return epochs[-1].collapsed, epochs[-1].features_ignored
