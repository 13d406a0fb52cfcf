"""The trial loop of a one-instrument search: a population's P slots trained fold by fold, each slot freed by
a trial that ends (pruned, failed, or scored after its last fold) taken by the next trial.

A trial's folds are independent trainings (the trainer forgets everything between folds); what a fold
takes from the trial's earlier ones is their out-of-sample evidence, which the trial keeps. So a round
trains ONE fold for up to P trials side by side, whichever round of the study each trial started in:
the trials waiting for that fold, and for fold 0 new trials asked to fill it. Each round trains the fold
with the most trials it can hold (`next_round`), the deeper fold on a tie (a trial finished sooner
informs the sampler and the pruner sooner). At most `in_flight_cap(P)` trials are under way at once,
so the sampler spreads its settings over about as many running trials as a batch of P did. A trial is
told its end as soon as it has one. With P = 1 the rule walks one trial's folds in order, then the next.

Counting, retries and heartbeats are the study's as in `trial_loop`: an exception outside `catch`
ends the loop, every trial under way that was pruned ends pruned and every other is queued for a retry.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import optuna
from optuna.trial import FrozenTrial

from foxhunt.config.search import Distribution
from foxhunt.search.study import StudyProgress, _heartbeat_seconds, requeue_running_trials, study_progress
from foxhunt.search.trial_loop import AskedTrial, ask_batch, end_interrupted, heartbeats, tell_and_report


@dataclass
class SlotTrial:
    """A trial under way: its settings and what it has walked, fold index → its outcome."""

    asked: AskedTrial
    outcomes: dict[int, Any] = field(default_factory=dict)

    @property
    def number(self) -> int:
        return self.asked.number

    @property
    def next_fold(self) -> int:
        """The index (in the study's folds) of the fold it trains next."""
        return len(self.outcomes)


# A round's ended trials, by number: the result to tell (a TrialOutcome, a float, or an exception in
# `catch`), or None for a pruned trial. A trial that goes on to its next fold is absent.
RoundResults = dict[int, Any]


class RoundObjective(Protocol):
    """Trains one fold (by index) for the given trials side by side, adding each one's outcome to it."""

    def __call__(self, fold_index: int, trials: list[SlotTrial]) -> RoundResults: ...


def in_flight_cap(size: int) -> int:
    """At most twice the population's trials under way: enough to fill a round from two cohorts."""
    return 2 * size


def next_round(waiting: Mapping[int, int], size: int, askable: int) -> tuple[int, int] | None:
    """The fold index to train next and how many new trials to ask for it; None when nothing can train.

    `waiting`: fold index → trials under way waiting for it; `askable`: new trials the budget and the cap
    allow. The round holds the most trials (new ones only at fold 0), the deeper fold on a tie."""
    candidates = {fold: min(count, size) for fold, count in waiting.items() if count}
    new = min(askable, max(size - waiting.get(0, 0), 0))
    if new:
        candidates[0] = min(waiting.get(0, 0) + new, size)
    if not candidates:
        return None
    fold = max(candidates, key=lambda f: (candidates[f], f))
    return fold, new if fold == 0 else 0


def run_slot_trials(
    study: optuna.Study,
    n_trials: int,
    objective: RoundObjective,
    *,
    size: int = 1,
    space: Mapping[str, Distribution],
    seed: int,
    worker: int = 0,
    catch: tuple[type[Exception], ...] = (),
    callbacks: Iterable[Callable[[optuna.Study, FrozenTrial], None]] = (),
    round_callbacks: Iterable[Callable[[optuna.Study], None]] = (),
    exclusive: bool = False,
    startup_trials: int = 10,
    poll_seconds: float | None = None,
) -> StudyProgress:
    """Run trials in P = `size` slots, fold by fold, until the study has `n_trials` finished ones; the
    final progress. `callbacks(study, trial)` run after each trial told, `round_callbacks(study)` once after
    each round that ended a trial (what a round's ended trials share, written once). A worker with no trial
    left to train while another's still run looks again every `poll_seconds` (default: the heartbeat's
    interval)."""
    if exclusive:
        requeue_running_trials(study)
    loop = SlotLoop(study, n_trials, objective, size, TrialAsk(space, seed, worker, startup_trials), catch,
                    list(callbacks), poll_seconds, list(round_callbacks))  # fmt: skip
    with heartbeats(study, loop.asked, _heartbeat_seconds(study)):
        try:
            return loop.run()
        except BaseException:
            end_interrupted(study, [t.asked for t in loop.under_way], loop.callbacks)
            raise


@dataclass(frozen=True)
class TrialAsk:
    """How new trials are asked: the search space, the run's seed, this worker, the sampler's start."""

    space: Mapping[str, Distribution]
    seed: int
    worker: int
    startup_trials: int


class SlotLoop:
    """The trials under way and the rounds that train them (`run_slot_trials`)."""

    def __init__(self, study, n_trials, objective, size, ask: TrialAsk, catch, callbacks, poll=None,
                 round_callbacks=()) -> None:  # fmt: skip
        self.study, self.n_trials, self.objective, self.size = study, n_trials, objective, size
        self.ask, self.catch, self.callbacks, self.round_callbacks = ask, catch, callbacks, round_callbacks
        self.under_way: list[SlotTrial] = []
        self.heartbeat = _heartbeat_seconds(study)
        self.poll: float | None = poll

    def run(self) -> StudyProgress:
        """Rounds until the study has its finished trials and none of this loop's is under way."""
        while True:
            progress = study_progress(self.study)
            if not self.under_way and progress.finished >= self.n_trials:
                return progress
            picked = next_round(self.waiting(), self.size, self.askable(progress))
            if picked is None:
                if self.heartbeat is None:  # nothing would ever notice a dead worker's trial: do not wait
                    return progress
                time.sleep(self.heartbeat if self.poll is None else self.poll)
                continue
            fold, new = picked
            if new:
                self.add(ask_batch(self.study, new, self.n_trials, self.ask.space, seed=self.ask.seed,
                                   worker=self.ask.worker, created=progress.created,
                                   startup_trials=self.ask.startup_trials))  # fmt: skip
            members = [t for t in self.under_way if t.next_fold == fold][: self.size]
            if members:
                self.train_round(fold, members)

    def waiting(self) -> dict[int, int]:
        """Fold index → trials under way waiting for it."""
        counts: dict[int, int] = {}
        for trial in self.under_way:
            counts[trial.next_fold] = counts.get(trial.next_fold, 0) + 1
        return counts

    def askable(self, progress: StudyProgress) -> int:
        """New trials the study's budget (every worker's trials counted) and the cap allow now."""
        free = self.n_trials - progress.finished - progress.running
        return max(min(free, in_flight_cap(self.size) - len(self.under_way)), 0)

    def add(self, asked: list[AskedTrial]) -> None:
        self.under_way += [SlotTrial(a) for a in asked]

    def asked(self) -> list[AskedTrial]:
        """The trials under way (read by the heartbeat thread: a copy of the list first)."""
        return [t.asked for t in list(self.under_way)]

    def train_round(self, fold: int, members: list[SlotTrial]) -> None:
        """One round; each member that ended is told at once and its slot freed, then the round callbacks."""
        try:
            ended = self.objective(fold, members)
        except self.catch as exc:
            # The round's verdict: every member fails with it (`tell_trial` ends a pruned one pruned).
            ended = {t.number: exc for t in members}
        told = [t for t in members if t.number in ended or t.asked.stale]
        for trial in told:
            self.under_way.remove(trial)
            tell_and_report(self.study, trial.asked, ended.get(trial.number), self.catch, self.callbacks)
        if told:
            for callback in self.round_callbacks:
                callback(self.study)
