"""The one walk over folds: a run, its `--seeds`, a batch of trials and the held-out fold all go through
`walk_folds`. The folds in order on one trainer; per fold, the members still walking are trained
together (`fold.train_fold`), or the fold is taken over from an earlier attempt; a member that diverges
leaves the walk with its failure, and the caller's `on_fold` may stop others (a pruned trial). The
evidence a pooled decision weighs (`select_pool`: each member's earlier folds' out-of-sample windows)
is read from the outcomes walked so far, taken-over folds included, so a resumed run decides as the
first attempt did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.evaluation import ScoreMemo, Scoring
from foxhunt.run.fold import EpochHook, FoldOutcome, Progress, out_of_sample_evidence, train_fold
from foxhunt.train import DQNTrainer, TrainingDiverged

FoldResults = dict[int, FoldOutcome | TrainingDiverged]  # member → its outcome of one fold


def _print(message: str) -> None:
    print(message, flush=True)


@dataclass(frozen=True)
class FoldDone:
    """A fold the walk has finished: its members' results, whether it was taken over, and every member's
    outcomes so far (this fold's included)."""

    fold: FoldRange
    results: FoldResults
    taken: bool
    outcomes: Mapping[int, Mapping[int, FoldOutcome]]


@dataclass
class WalkHooks:
    """What the caller is told of, and asked, along the walk (every hook is optional)."""

    progress: Progress = _print
    check: Callable[[], None] = lambda: None  # at every fold and epoch boundary: a stop signal raises here
    at_fold: Callable[[int | None], None] = lambda fold: None  # the fold begun; None when the walk ends
    on_epoch: EpochHook | None = None
    # A fold an earlier attempt completed: its members' outcomes (a member left out drops from the walk),
    # or None to train it.
    taken_over: Callable[[FoldRange], Mapping[int, FoldOutcome] | None] = lambda fold: None
    # After each fold: the members that stop walking (e.g. pruned trials).
    on_fold: Callable[[FoldDone], Iterable[int]] = lambda done: ()


@dataclass
class Walked:
    """Per member, its outcomes by fold in walk order, and the failure that stopped it, if any."""

    outcomes: dict[int, dict[int, FoldOutcome]]
    failures: dict[int, TrainingDiverged] = field(default_factory=dict)

    def finished(self, member: int) -> bool:
        """The member walked every fold (no failure, not stopped)."""
        return member not in self.failures and len(self.outcomes[member]) == max(
            len(o) for o in self.outcomes.values()
        )


def walk_folds(
    trainer: DQNTrainer,
    folds: Iterable[FoldRange],
    members: Mapping[int, str],
    epochs: int,
    scoring: Scoring,
    *,
    memo: ScoreMemo | None = None,
    diagnostics_every: int = 1,
    hooks: WalkHooks | None = None,
) -> Walked:
    """Walk `folds` in order for `members` (member → its output folder) on `trainer`: each fold taken over
    or trained (reset → train → validate → save → report), divergences and stopped members leaving."""
    hooks = hooks or WalkHooks()
    live = dict(members)
    walked = Walked({k: {} for k in members})
    for fold_range in folds:
        if not live:
            break
        hooks.check()
        hooks.at_fold(fold_range.fold)
        taken = hooks.taken_over(fold_range)
        if taken is not None:
            results: FoldResults = {k: taken[k] for k in live if k in taken}
            for k in set(live) - set(taken):
                del live[k]
        else:
            results = train_fold(
                trainer,
                fold_range,
                epochs,
                live,
                hooks.progress,
                hooks.check,
                scoring=scoring,
                memo=memo,
                diagnostics_every=diagnostics_every,
                on_epoch=hooks.on_epoch,
                earlier={k: out_of_sample_evidence(walked.outcomes[k]) for k in live},
            )
        for k, result in results.items():
            if isinstance(result, TrainingDiverged):
                walked.failures[k] = result
                del live[k]
            else:
                walked.outcomes[k][fold_range.fold] = result
        for k in hooks.on_fold(FoldDone(fold_range, results, taken is not None, walked.outcomes)):
            live.pop(k, None)
    hooks.at_fold(None)
    return walked
