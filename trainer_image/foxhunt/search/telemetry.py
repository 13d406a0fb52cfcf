"""Prometheus metrics of a study, in a registry the caller owns (the run's, which it pushes).

Per trial (label `trial`, its number): `foxhunt_trial_objective`, `foxhunt_trial_duration_seconds`,
`foxhunt_trial_folds`, and `foxhunt_trial_state` (1 for the trial's state, label `state`).
This worker: `foxhunt_trials_total` (counter, label `state`: complete, pruned, failed).
The whole study, read from its storage so that every worker reports the same figures:
`foxhunt_study_trials` (label `state`), `foxhunt_study_finished_trials`,
`foxhunt_study_planned_trials` and `foxhunt_study_best_objective`.
"""

from __future__ import annotations

from collections.abc import Sequence

import optuna
from optuna.trial import FrozenTrial, TrialState
from prometheus_client import CollectorRegistry, Counter, Gauge

from foxhunt.search.study import folds_run, is_finished, is_surplus

# The states a finished trial is counted under, by Optuna state.
COUNTED_STATES = {TrialState.COMPLETE: "complete", TrialState.PRUNED: "pruned", TrialState.FAIL: "failed"}


class TrialMetrics:
    """The study's gauges and counters; call `record(study, trial)` after each trial (an Optuna callback)."""

    def __init__(self, registry: CollectorRegistry, planned_trials: int) -> None:
        self.objective = Gauge(
            "foxhunt_trial_objective", "Objective of a complete trial.", ["trial"], registry=registry
        )
        self.duration = Gauge(
            "foxhunt_trial_duration_seconds", "Wall seconds of a trial.", ["trial"], registry=registry
        )
        self.folds = Gauge(
            "foxhunt_trial_folds", "Folds a trial ran before it ended.", ["trial"], registry=registry
        )
        self.state = Gauge(
            "foxhunt_trial_state", "1 for the state a trial ended in.", ["trial", "state"], registry=registry
        )
        self.ended = Counter(
            "foxhunt_trials", "Trials this worker ended, by how they ended.", ["state"], registry=registry
        )
        self.study_trials = Gauge(
            "foxhunt_study_trials", "Trials of the whole study, by state.", ["state"], registry=registry
        )
        self.finished = Gauge(
            "foxhunt_study_finished_trials",
            "Trials that count towards the planned number.",
            registry=registry,
        )
        self.planned = Gauge(
            "foxhunt_study_planned_trials", "Trials the study runs in all.", registry=registry
        )
        self.best = Gauge(
            "foxhunt_study_best_objective", "Best objective of the study so far.", registry=registry
        )
        self.planned.set(planned_trials)
        for name in COUNTED_STATES.values():
            self.ended.labels(state=name)  # zero from the start, so rate() and alerts see the series

    def record(
        self, study: optuna.Study, trial: FrozenTrial, trials: Sequence[FrozenTrial] | None = None
    ) -> None:
        """Update the trial's series and the study's totals after `trial` ended (totals of `trials`, the
        study's trials as the caller read them, where given)."""
        label = str(trial.number)
        if trial.state in COUNTED_STATES:
            state = COUNTED_STATES[trial.state]
            self.ended.labels(state=state).inc()
            self.state.labels(trial=label, state=state).set(1)
        if trial.state == TrialState.COMPLETE and trial.value is not None:
            self.objective.labels(trial=label).set(trial.value)
        if trial.datetime_start is not None and trial.datetime_complete is not None:
            self.duration.labels(trial=label).set(
                (trial.datetime_complete - trial.datetime_start).total_seconds()
            )
        self.folds.labels(trial=label).set(folds_run(trial))
        self.update_study(study, trials)

    def update_study(self, study: optuna.Study, trials: Sequence[FrozenTrial] | None = None) -> None:
        """Set the whole-study gauges from the storage (or from `trials`, as the caller read them)."""
        everyone = study.get_trials(deepcopy=False) if trials is None else trials
        trials = [t for t in everyone if not is_surplus(t)]
        for state in TrialState:
            self.study_trials.labels(state=state.name.lower()).set(sum(t.state == state for t in trials))
        self.finished.set(sum(map(is_finished, trials)))
        complete = [t.value for t in trials if t.state == TrialState.COMPLETE and t.value is not None]
        if complete:
            self.best.set(
                max(complete) if study.direction == optuna.study.StudyDirection.MAXIMIZE else min(complete)
            )
