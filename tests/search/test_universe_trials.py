"""A universe's trial (`search.universe_trials.UniverseTrials`) and its pruner: each fold's value is told
the pruner, and after the trial's last fold the pruner is not asked (a trial that walked every fold is
scored, as a population's member is)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

import foxhunt.search.universe_trials as universe_trials
from foxhunt.config import RunConfig
from foxhunt.evaluate.evaluation import MODEL
from foxhunt.run.universe_walk import UniverseOutcome
from foxhunt.run.walk import FoldDone, Walked
from foxhunt.search.population import TrainerPool
from foxhunt.search.trial_loop import AskedTrial
from foxhunt.train import TrainingDiverged

FOLDS = [SimpleNamespace(fold=f) for f in range(3)]


@dataclass
class _Told(AskedTrial):
    """A trial that records what it was told after each fold (fold, value, last) and is never pruned."""

    told: list[tuple[int, float, bool]] = field(default_factory=list)

    def report_fold(self, fold: int, value: float, *, last: bool = False) -> bool:
        self.told.append((fold, value, last))
        return False


class _Walked(Exception):
    """The walk is over: what comes after (the trial's records) is not this test's."""


def _outcome(sharpe: float) -> UniverseOutcome:
    net = SimpleNamespace(sharpe=sharpe)
    report = SimpleNamespace(evaluation=SimpleNamespace(policies={MODEL: SimpleNamespace(net=net)}))
    return UniverseOutcome({0: SimpleNamespace(report=report)}, None)  # type: ignore[dict-item]


def _walk_folds(trainer, folds, members, *args, hooks, **kwargs):
    """The walk of every fold, each member's fold outcome of net validation Sharpe `fold + 1`."""
    for fold in folds:
        results = {m: _outcome(fold.fold + 1.0) for m in members}
        hooks.on_fold(FoldDone(fold, results, False, {m: {} for m in members}))  # type: ignore[arg-type]
    return Walked({m: {} for m in members})


def _records(*args, **kwargs):
    raise _Walked


def _trials(tmp_path, monkeypatch) -> universe_trials.UniverseTrials:
    """A universe's trials over FOLDS whose steps and records are stood in for (the walk is the test's)."""
    monkeypatch.setattr(universe_trials, "universe_step", lambda *args, **kwargs: None)
    monkeypatch.setattr(universe_trials, "universe_records", _records)
    universe = SimpleNamespace(folds=FOLDS, views=[], uris=[], history={}, run={})
    return universe_trials.UniverseTrials(
        universe,  # type: ignore[arg-type]
        RunConfig(),
        "stitched_sharpe",
        TrainerPool(lambda configs: object()),  # type: ignore[arg-type, return-value]
        str(tmp_path),
        lambda line: None,
        None,  # type: ignore[arg-type]
    )


def test_the_pruner_is_told_each_fold_and_not_asked_after_the_last(tmp_path, monkeypatch):
    monkeypatch.setattr(universe_trials, "walk_folds", _walk_folds)
    trials = _trials(tmp_path, monkeypatch)
    asked = _Told(SimpleNamespace(number=4), {})  # type: ignore[arg-type]
    with pytest.raises(_Walked):
        trials.trial(asked)
    assert asked.told == [(0, 1.0, False), (1, 2.0, False), (2, 3.0, True)]


def test_a_trial_whose_walk_ends_in_its_divergence_fails_on_its_settings_unscored(tmp_path, monkeypatch):
    # The universe step hands the divergence to the walk (it no longer raises it): the trial still fails
    # with it (the study's `catch`), with no records of the folds before it.
    failure = TrainingDiverged("fold 1 epoch 0: loss is nan")
    monkeypatch.setattr(
        universe_trials, "walk_folds", lambda *args, **kwargs: Walked({0: {}}, {0: failure}, {0: 1})
    )
    trials = _trials(tmp_path, monkeypatch)
    with pytest.raises(TrainingDiverged, match="loss is nan"):
        trials.trial(_Told(SimpleNamespace(number=4), {}))  # type: ignore[arg-type]
