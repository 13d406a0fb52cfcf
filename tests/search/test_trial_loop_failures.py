"""The trial loop survives the failures around a batch: a worker dying while it asks, a storage error in
a heartbeat, an interruption after a member was pruned, a settings failure of one shape's group."""

from __future__ import annotations

import time
import warnings

import optuna
import pytest
from optuna.exceptions import ExperimentalWarning
from support.trials_worker import SPACE

from foxhunt.search.slot_loop import run_slot_trials
from foxhunt.search.space import parse_search_space
from foxhunt.search.study import open_study, study_progress
from foxhunt.search.trial_loop import ask_batch, run_trials

TEST_SPACE = parse_search_space(SPACE, "test space")
optuna.logging.set_verbosity(optuna.logging.WARNING)


def _study(tmp_path, **kwargs):
    return open_study(None, tmp_path, "s", seed=5, **{"heartbeat_seconds": 1, "grace_seconds": 2, **kwargs})


def _fail_stale(study) -> None:
    """What another worker's loop does each round: fail the trials whose heartbeat is stale."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)


def _states(study) -> list[str]:
    return [t.state.name for t in study.get_trials()]


def test_a_worker_stopped_while_asking_its_batch_leaves_the_asked_trials_to_their_retries(
    tmp_path, monkeypatch
):
    import foxhunt.search.trial_loop as loop

    real, calls = loop.suggest, []

    def stops_at_the_second(trial, space):
        calls.append(trial.number)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(trial, space)

    monkeypatch.setattr(loop, "suggest", stops_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        run_trials(_study(tmp_path), 4, lambda b: {}, size=2, space=TEST_SPACE, seed=5)
    assert _states(_study(tmp_path)) == ["FAIL", "FAIL", "WAITING", "WAITING"]


def test_a_trial_asked_by_a_worker_that_then_died_goes_stale_and_is_retried(tmp_path):
    study = _study(tmp_path)
    ask_batch(study, 1, 4, TEST_SPACE, seed=5, worker=0, created=0)  # then the worker is killed
    time.sleep(3)  # past the grace period
    study_progress(_study(tmp_path))  # another worker's round
    assert _states(study) == ["FAIL", "WAITING"]


class _Trainer:
    """A trainer that the fake walk never trains (the walk-forward is replaced below)."""

    graph_captures = compiles = 0

    def apply_settings(self, configs) -> None:
        pass


class _Walk:
    """The search's TrialScoring as PopulationRounds reads it (one fold); `score` raises for the numbers in
    `broken`."""

    def __init__(self, out: str, broken: set[int]) -> None:
        from types import SimpleNamespace

        from foxhunt.config import RunConfig

        config = RunConfig(epochs=1)
        self.run = SimpleNamespace(config=config, out_uri=out, progress=lambda m: None, check=lambda: None)
        self.folds, self.scoring, self.memo, self.broken = [SimpleNamespace(fold=0)], None, None, broken

    def score(self, number, params, dqn, outcomes) -> float:
        if number in self.broken:
            raise OverflowError("math range error")
        return 1.0


def _population_search(tmp_path, monkeypatch, batch_sizes, walk_fails, broken=frozenset()):
    """A population search of one batch of trials with the given batch sizes (one shape each), whose
    walk-forward raises OverflowError for the shapes in `walk_fails`; the study after."""
    import foxhunt.search.population as population
    from foxhunt.run.walk import Walked

    def walk_folds(trainer, folds, members, *args, **kwargs):
        if trainer.shape in walk_fails:
            raise OverflowError("the population's step overflowed")
        return Walked({m: {fold.fold: object() for fold in folds} for m in members})

    def build(configs):
        trainer = _Trainer()
        trainer.shape = configs[0].batch_size
        return trainer

    monkeypatch.setattr(population, "walk_folds", walk_folds)
    space = parse_search_space({"batch_size": {"type": "categorical", "choices": [4096, 8192]}}, "shapes")
    study = _study(tmp_path)
    for size in batch_sizes:
        study.enqueue_trial({"batch_size": size})
    pool = population.TrainerPool(build, 2)
    rounds = population.PopulationRounds(_Walk(str(tmp_path), set(broken)), pool, (OverflowError,))
    n = len(batch_sizes)
    run_slot_trials(study, n, rounds, size=n, space=space, seed=5, catch=(OverflowError,))
    return study


def test_a_settings_failure_of_one_shape_fails_only_that_shapes_trials(tmp_path, monkeypatch):
    study = _population_search(tmp_path, monkeypatch, [4096, 8192], walk_fails={8192})
    first, second = study.get_trials()
    assert (first.state.name, first.value) == ("COMPLETE", 1.0)
    assert second.state.name == "FAIL"
    assert second.user_attrs["error"] == "OverflowError: the population's step overflowed"


def test_a_settings_failure_scoring_one_member_fails_only_that_member(tmp_path, monkeypatch):
    study = _population_search(tmp_path, monkeypatch, [4096, 4096], walk_fails=set(), broken={0})
    assert _states(study) == ["FAIL", "COMPLETE"]
    assert study.get_trials()[0].user_attrs["error"] == "OverflowError: math range error"


def test_a_failed_heartbeat_is_logged_and_the_next_one_keeps_the_trial_fresh(tmp_path, caplog):
    from sqlalchemy.exc import OperationalError

    study, seen = _study(tmp_path), []  # heartbeat every second, stale after two
    real, calls = study._storage.record_heartbeat, []

    def fails_once(trial_id):
        calls.append(trial_id)
        if len(calls) == 2:  # the heartbeat thread's first beat
            raise OperationalError("UPDATE trial_heartbeats", {}, Exception("connection lost"))
        return real(trial_id)

    study._storage.record_heartbeat = fails_once

    def slow(batch):
        time.sleep(3)  # past the grace period: only the beats after the failed one keep the trial fresh
        _fail_stale(study)
        seen.append(_states(study))
        return {a.number: 1.0 for a in batch}

    run_trials(study, 1, slow, space=TEST_SPACE, seed=5)
    assert seen == [["RUNNING"]] and _states(study) == ["COMPLETE"]
    assert any("heartbeat" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)


class Interrupted(Exception):
    """Stands for the pipeline's SIGTERM stop: an exception the loop does not catch."""


def _two_complete(tmp_path):
    """A study with two complete trials, so that the median pruner can prune from the next batch on."""
    study = _study(tmp_path, pruner=optuna.pruners.MedianPruner(n_startup_trials=2))
    run_trials(study, 2, lambda b: {a.number: (a.report_fold(0, 1.0), 1.0)[1] for a in b}, size=2,
               space=TEST_SPACE, seed=5)  # fmt: skip
    return study


def _prunes_trial_3_then_interrupted(batch):
    for asked in batch:
        asked.report_fold(0, -100.0 if asked.number == 3 else 100.0)
    raise Interrupted


def test_a_member_pruned_before_its_batch_is_interrupted_ends_pruned_and_is_not_retried(tmp_path):
    study = _two_complete(tmp_path)
    with pytest.raises(Interrupted):
        run_trials(study, 4, _prunes_trial_3_then_interrupted, size=2, space=TEST_SPACE, seed=5)
    trials = study.get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE", "FAIL", "PRUNED", "WAITING"]
    assert trials[4].params == trials[2].params


def test_a_member_pruned_before_its_batch_is_interrupted_goes_through_the_after_trial_callbacks(tmp_path):
    study, told = _two_complete(tmp_path), []
    with pytest.raises(Interrupted):
        run_trials(study, 4, _prunes_trial_3_then_interrupted, size=2, space=TEST_SPACE, seed=5,
                   callbacks=[lambda s, trial: told.append((trial.number, trial.state.name))])  # fmt: skip
    assert told == [(3, "PRUNED")]  # as any pruned trial; trial 2, requeued, has not ended


def test_a_callback_failing_on_a_trial_pruned_at_an_interruption_leaves_the_interruption_to_go_up(
    tmp_path,
):
    study = _two_complete(tmp_path)

    def broken(study, trial):
        raise OSError("the report's storage is gone")

    with pytest.raises(Interrupted):
        run_trials(study, 4, _prunes_trial_3_then_interrupted, size=2, space=TEST_SPACE, seed=5,
                   callbacks=[broken])  # fmt: skip
    assert [t.state.name for t in study.get_trials()] == ["COMPLETE", "COMPLETE", "FAIL", "PRUNED", "WAITING"]


class _FoldWalk(_Walk):
    """A walk of two folds whose values per trial and fold are `values[number][fold]`."""

    def __init__(self, out: str, values: dict[int, list[float]]) -> None:
        from types import SimpleNamespace

        super().__init__(out, set())
        self.folds, self.values = [SimpleNamespace(fold=0), SimpleNamespace(fold=1)], values

    def folds_done(self, fold, outcomes) -> dict[int, float]:
        return {number: self.values[number][fold] for number in outcomes}

    def write_report(self, *args) -> None:
        pass


def test_the_pruner_is_not_asked_after_a_trials_last_fold_so_a_trial_that_walked_every_fold_is_scored(
    tmp_path, monkeypatch
):
    from types import SimpleNamespace

    import numpy as np

    import foxhunt.search.population as population
    from foxhunt.run.fold import FoldOutcome
    from foxhunt.run.walk import FoldDone, Walked

    def walk_folds(trainer, folds, members, *args, hooks, **kwargs):
        walking = set(members)
        for fold in folds:
            done = FoldDone(fold, {m: outcome for m in walking}, False, {m: {} for m in walking})
            walking -= set(hooks.on_fold(done))
        return Walked({m: {fold.fold: outcome for fold in folds} for m in members})

    outcome = FoldOutcome(
        report=SimpleNamespace(selection=None), positions=np.zeros(1), baselines=None, outputs=None
    )

    monkeypatch.setattr(population, "walk_folds", walk_folds)
    study = _study(tmp_path, pruner=optuna.pruners.MedianPruner(n_startup_trials=2))
    # Trial 2: above the median after fold 0, below it after its last fold.
    values = {0: [0.0, 5.0], 1: [0.0, 5.0], 2: [1.0, 2.0]}
    rounds = population.PopulationRounds(_FoldWalk(str(tmp_path), values), population.TrainerPool(
        lambda configs: _Trainer(), 1), (OverflowError,))  # fmt: skip
    run_slot_trials(study, 3, rounds, space=TEST_SPACE, seed=5)
    last = study.get_trials()[2]
    assert (last.state.name, last.value, last.intermediate_values) == ("COMPLETE", 1.0, {0: 1.0, 1: 2.0})


class _Asked:
    """A trial under way as a round reads it: its number and settings, never pruned; with
    `stale_on_report` its fold's report finds it ended by another worker (declared stale)."""

    def __init__(self, number: int, params: dict | None = None, stale_on_report: bool = False) -> None:
        self.number, self.params, self.pruned, self.stale = number, params or {}, False, False
        self.stale_on_report = stale_on_report

    def report_fold(self, fold: int, value: float, *, last: bool = False) -> bool:
        self.stale = self.stale_on_report
        return self.stale


def _rounds(walk, monkeypatch, walk_folds, size: int = 2):
    """The population's rounds on `walk`, the walk-forward replaced by `walk_folds`."""
    import foxhunt.search.population as population

    monkeypatch.setattr(population, "walk_folds", walk_folds)
    return population.PopulationRounds(
        walk, population.TrainerPool(lambda configs: _Trainer(), size), (OverflowError,)
    )


def test_a_member_that_diverges_fails_alone_unscored_and_its_round_mate_is_scored(tmp_path, monkeypatch):
    from foxhunt.run.walk import Walked
    from foxhunt.search.slot_loop import SlotTrial
    from foxhunt.train import TrainingDiverged

    failure = TrainingDiverged("fold 0 epoch 0: loss is nan")
    walked = Walked({0: {0: object()}, 1: {}}, {1: failure})
    rounds = _rounds(_Walk(str(tmp_path), set()), monkeypatch, lambda *args, **kwargs: walked)
    assert rounds(0, [SlotTrial(_Asked(0)), SlotTrial(_Asked(1))]) == {0: 1.0, 1: failure}


def test_each_member_is_scored_with_its_own_trials_settings(tmp_path, monkeypatch):
    from foxhunt.run.walk import Walked
    from foxhunt.search.slot_loop import SlotTrial

    scored = {}

    class _Scored(_Walk):
        def score(self, number, params, dqn, outcomes) -> float:
            scored[number] = dqn.lr
            return 1.0

    walked = Walked({0: {0: object()}, 1: {0: object()}})
    rounds = _rounds(_Scored(str(tmp_path), set()), monkeypatch, lambda *args, **kwargs: walked)
    rounds(0, [SlotTrial(_Asked(0, {"lr": 1e-4})), SlotTrial(_Asked(1, {"lr": 1e-3}))])
    assert scored == {0: 1e-4, 1: 1e-3}


def test_each_member_weighs_its_own_trials_earlier_folds(tmp_path, monkeypatch):
    import foxhunt.search.population as population
    from foxhunt.run.walk import Walked
    from foxhunt.search.slot_loop import SlotTrial

    priors = []

    def walk_folds(trainer, folds, members, *args, prior, **kwargs):
        priors.append(prior)
        return Walked({m: {} for m in members})

    monkeypatch.setattr(population, "out_of_sample_evidence", lambda outcomes: list(outcomes.values()))
    rounds = _rounds(_FoldWalk(str(tmp_path), {}), monkeypatch, walk_folds)
    rounds(1, [SlotTrial(_Asked(0), {0: "trial 0's fold 0"}), SlotTrial(_Asked(1), {0: "trial 1's fold 0"})])
    assert priors == [{0: ["trial 0's fold 0"], 1: ["trial 1's fold 0"]}]


def test_a_trial_found_stale_at_its_folds_report_stops_without_writing_its_report_here(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import numpy as np

    from foxhunt.run.fold import FoldOutcome
    from foxhunt.run.walk import FoldDone, Walked
    from foxhunt.search.slot_loop import SlotTrial

    outcome = FoldOutcome(
        report=SimpleNamespace(selection=None), positions=np.zeros(1), baselines=None, outputs=None
    )
    stopped, reports = [], []

    def walk_folds(trainer, folds, members, *args, hooks, **kwargs):
        stopped.extend(hooks.on_fold(FoldDone(folds[0], {0: outcome}, False, {0: {}})))
        return Walked({0: {folds[0].fold: outcome}})

    class _Reported(_FoldWalk):
        def write_report(self, *args) -> None:
            reports.append(args[0])

    rounds = _rounds(_Reported(str(tmp_path), {0: [1.0, 2.0]}), monkeypatch, walk_folds, size=1)
    rounds(0, [SlotTrial(_Asked(0, stale_on_report=True))])
    assert (stopped, reports) == ([0], [])
