"""The one walk over folds: a run, its `--seeds`, a batch of trials and the held-out fold all go through
`walk_folds`. The folds in order on one trainer; per fold, the members still walking are trained
together (`fold.train_fold`), or the fold is taken over from an earlier attempt; a member that diverges
leaves the walk with its failure, and the caller's `on_fold` may stop others (a pruned trial). The
evidence a pooled decision weighs (`select_pool`: each member's earlier folds' out-of-sample windows)
is read from the outcomes walked so far, taken-over folds included, so a resumed run decides as the
first attempt did.

What one fold's training is, is the walk's `step`: by default `fold.train_fold` on one instrument's
`FoldRange`; a universe run (`run/universe_walk.py`) passes its own, which trains a `UniverseFold` on
every instrument taking part and returns, per member, its outcome on each of them. The walk is the
same loop for both: the folds in order, members leaving, the caller's hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, cast

from foxhunt import storage
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.evaluation import Scoring
from foxhunt.evaluate.score_memo import ScoreMemo
from foxhunt.run.fold import EpochHook, FoldOutcome, Progress, out_of_sample_evidence, train_fold
from foxhunt.train import DQNTrainer, TrainingDiverged
from foxhunt.train.evidence import WindowEvidence

FoldResults = dict[int, FoldOutcome | TrainingDiverged]  # member → its outcome of one fold


class WalkFold(Protocol):
    """What the walk reads of a fold: its number (a `FoldRange`, a universe's `UniverseFold`)."""

    @property
    def fold(self) -> int: ...


Outcome = TypeVar("Outcome")  # what a member's fold leaves: a FoldOutcome, or a universe's per instrument
# One fold's training: (the fold, member → its output folder, every member's outcomes so far) → per
# member its outcome, or the divergence that stopped it.
FoldStep = Callable[[Any, Mapping[int, str], Mapping[int, Mapping[int, Any]]], Mapping[int, Any]]


def _print(message: str) -> None:
    print(message, flush=True)


@dataclass(frozen=True)
class FoldDone:
    """A fold the walk has finished: its members' results, whether it was taken over, and every member's
    outcomes so far (this fold's included). Of a universe, the fold is a `UniverseFold` and an outcome
    the step's."""

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
class Walked(Generic[Outcome]):
    """Per member, its outcomes by fold in walk order, the failure that stopped it, if any, and the fold
    it diverged in: in this walk, or in an earlier attempt whose taken-over fold leaves it out."""

    outcomes: dict[int, dict[int, Outcome]]
    failures: dict[int, TrainingDiverged] = field(default_factory=dict)
    diverged_in: dict[int, int] = field(default_factory=dict)

    def finished(self, member: int) -> bool:
        """The member walked every fold (no failure, not stopped)."""
        return member not in self.failures and len(self.outcomes[member]) == max(
            len(o) for o in self.outcomes.values()
        )

    def voters(self) -> list[int]:
        """Member 0 and every other member that walked every fold, in member order: the seeds a spread
        or a vote (`--result majority`) counts."""
        return [m for m in self.outcomes if m == 0 or self.finished(m)]


def walk_folds(
    trainer: DQNTrainer,
    folds: Iterable[WalkFold],
    members: Mapping[int, str],
    epochs: int,
    scoring: Scoring | None,
    *,
    memo: ScoreMemo | None = None,
    diagnostics_every: int = 1,
    hooks: WalkHooks | None = None,
    step: FoldStep | None = None,
    prior: Mapping[int, Sequence[WindowEvidence]] | None = None,
) -> Walked:
    """Walk `folds` in order for `members` (member → its output folder) on `trainer`: each fold taken over
    or trained by `step` (default `train_fold`'s reset → train → validate → save → report, scored with
    `scoring`), divergences and stopped members leaving. `prior`: per member, out-of-sample windows of
    folds walked before these (the held-out fold's: the run's folds), which the default step's pooled
    decision weighs first."""
    hooks = hooks or WalkHooks()
    train = step or _train_fold_step(trainer, epochs, scoring, memo, diagnostics_every, hooks, prior or {})
    live = dict(members)
    walked: Walked = Walked({k: {} for k in members})
    for fold in folds:
        if not live:
            break
        hooks.check()
        hooks.at_fold(fold.fold)
        taken = hooks.taken_over(fold)  # type: ignore[arg-type]  # a universe takes over nothing
        if taken is not None:
            results: Mapping[int, Any] = {k: taken[k] for k in live if k in taken}
            for k in set(live) - set(taken):
                walked.diverged_in[k] = fold.fold
                del live[k]
        else:
            # The members' fold files are written on worker threads beside the next member's scoring;
            # every one is on disk before `on_fold` records the fold (storage.background).
            with storage.writes_in_background():
                results = train(fold, live, walked.outcomes)
        for k, result in results.items():
            if isinstance(result, TrainingDiverged):
                walked.failures[k] = result
                walked.diverged_in[k] = fold.fold
                del live[k]
            else:
                walked.outcomes[k][fold.fold] = result
        done = FoldDone(fold, dict(results), taken is not None, walked.outcomes)  # type: ignore[arg-type]
        for k in hooks.on_fold(done):
            live.pop(k, None)
    hooks.at_fold(None)
    return walked


def diverged_seeds(walked: Walked, seeds: Sequence[int]) -> dict[int, str]:
    """Seed → why it has no stitched record, for each member (member i trains from `seeds[i]`) that
    diverged: what a seeds' spread lists as left out of it."""
    return {seeds[k]: f"diverged in fold {fold}" for k, fold in walked.diverged_in.items()}


def _train_fold_step(
    trainer: DQNTrainer,
    epochs: int,
    scoring: Scoring | None,
    memo: ScoreMemo | None,
    diagnostics_every: int,
    hooks: WalkHooks,
    prior: Mapping[int, Sequence[WindowEvidence]],
) -> FoldStep:
    """The walk's default step: one instrument's fold (`train_fold`), each member weighing its earlier
    folds' out-of-sample windows."""

    def step(
        fold_range: FoldRange, live: Mapping[int, str], outcomes: Mapping[int, Mapping[int, FoldOutcome]]
    ) -> FoldResults:
        return train_fold(
            trainer,
            fold_range,
            epochs,
            live,
            hooks.progress,
            hooks.check,
            scoring=cast(Scoring, scoring),  # None only where the caller gives its own step
            memo=memo,
            diagnostics_every=diagnostics_every,
            on_epoch=hooks.on_epoch,
            earlier={k: [*prior.get(k, ()), *out_of_sample_evidence(outcomes[k])] for k in live},
        )

    return step
