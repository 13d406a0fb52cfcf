"""The slot loop (`search/slot_loop.py`): a population's slots trained fold by fold, a slot freed by a trial
that ends taken by the next trial.

The rounds' objective here is cheap (a trial's fold value is a function of its settings and fold); the
population's own training goes through the same loop in test_trials_run.py.
"""

from __future__ import annotations

import time
import warnings

import optuna
import pytest
from optuna.exceptions import ExperimentalWarning
from support.trials_worker import SPACE, cheap_score

from foxhunt.search.slot_loop import SlotLoop, SlotTrial, TrialAsk, in_flight_cap, next_round, run_slot_trials
from foxhunt.search.space import parse_search_space
from foxhunt.search.study import StudyProgress, open_study, study_progress, trial_by_number
from foxhunt.search.trial_loop import run_trials

TEST_SPACE = parse_search_space(SPACE, "test space")
optuna.logging.set_verbosity(optuna.logging.WARNING)


def _study(tmp_path, name="s", **kwargs):
    return open_study(None, tmp_path, name, seed=5, **{"heartbeat_seconds": 1, "grace_seconds": 2, **kwargs})


class Rounds:
    """A round trains each trial's fold to its cheap score, pruning the numbers in `prune_at[fold]`;
    `seen` lists the rounds as (fold, trial numbers)."""

    def __init__(self, folds=3, prune_at=None, interrupt_at=None, stale_at=None):
        self.folds, self.prune_at, self.interrupt_at = folds, prune_at or {}, interrupt_at
        self.stale_at = stale_at or {}  # fold → trials another worker declares stale in it
        self.seen: list[tuple[int, list[int]]] = []

    def __call__(self, fold, trials):
        self.seen.append((fold, [t.number for t in trials]))
        if self.interrupt_at == len(self.seen):
            raise KeyboardInterrupt
        ended = {}
        for trial in trials:
            trial.outcomes[fold] = cheap_score(trial.asked.params)
            if trial.number in self.stale_at.get(fold, ()):
                trial.asked.stale = True  # its report failed: the trial goes on elsewhere, untold here
            elif trial.number in self.prune_at.get(fold, ()):
                trial.asked.pruned = True
                ended[trial.number] = None
            elif fold == self.folds - 1:
                ended[trial.number] = cheap_score(trial.asked.params)
        return ended


# ---- the round rule ----------------------------------------------------------------------------------------
def test_a_round_trains_the_deepest_fold_that_fills_every_slot():
    assert next_round({0: 4, 1: 4, 2: 4}, 4, askable=0) == (2, 0)


def test_new_trials_fill_fold_0_when_no_waiting_fold_fills_more_slots():
    assert next_round({1: 2, 2: 1}, 4, askable=8) == (0, 4)


def test_new_trials_top_up_the_trials_waiting_for_fold_0():
    assert next_round({0: 1, 1: 2}, 4, askable=8) == (0, 3)


def test_new_trials_are_no_more_than_the_budget_and_the_cap_allow():
    assert next_round({2: 3}, 4, askable=2) == (2, 0)
    assert next_round({}, 4, askable=2) == (0, 2)


def test_on_a_tie_the_deeper_fold_trains_first():
    assert next_round({1: 2}, 2, askable=2) == (1, 0)
    assert next_round({1: 1, 3: 1}, 2, askable=0) == (3, 0)


def test_with_nothing_waiting_and_nothing_to_ask_no_round_trains():
    assert next_round({}, 4, askable=0) is None


def test_at_most_twice_the_population_is_under_way():
    assert in_flight_cap(8) == 16 and in_flight_cap(1) == 2


def test_no_new_trial_is_asked_while_twice_the_population_is_under_way(tmp_path):
    loop = SlotLoop(_study(tmp_path), 100, Rounds(), 2, TrialAsk(TEST_SPACE, 5, 0, 10), (), [])
    idle = StudyProgress(finished=0, running=0, waiting=0, created=0)
    assert loop.askable(idle) == 4
    loop.under_way = [SlotTrial(None) for _ in range(3)]
    assert loop.askable(idle) == 1
    loop.under_way = []
    last = StudyProgress(finished=98, running=1, waiting=0, created=99)  # one trial left in the budget
    assert loop.askable(last) == 1


def test_a_fold_with_more_trials_waiting_than_slots_fills_one_round_and_ties_as_full():
    assert next_round({1: 5, 2: 4}, 4, askable=0) == (2, 0)


def test_no_new_trial_is_asked_while_more_trials_wait_for_fold_0_than_a_round_holds():
    assert next_round({0: 6}, 4, askable=3) == (0, 0)


def test_the_trials_waiting_for_fold_0_count_with_the_new_ones_toward_its_round():
    assert next_round({0: 2, 1: 3}, 4, askable=2) == (0, 2)  # 2 waiting + 2 new fill 4 slots, fold 1 fills 3


def test_no_trial_is_asked_while_other_workers_trials_already_spend_the_budget(tmp_path):
    loop = SlotLoop(_study(tmp_path), 100, Rounds(), 2, TrialAsk(TEST_SPACE, 5, 0, 10), (), [])
    assert loop.askable(StudyProgress(finished=97, running=5, waiting=0, created=102)) == 0


# ---- the loop ------------------------------------------------------------------------------------------------
def test_one_slot_walks_a_trials_folds_in_order_then_the_next_trials(tmp_path):
    rounds = Rounds(folds=3)
    run_slot_trials(_study(tmp_path), 2, rounds, size=1, space=TEST_SPACE, seed=5)
    assert rounds.seen == [(0, [0]), (1, [0]), (2, [0]), (0, [1]), (1, [1]), (2, [1])]


def test_a_slot_freed_by_a_pruned_trial_is_taken_by_the_next_trial(tmp_path):
    rounds = Rounds(folds=3, prune_at={0: {1}})
    study = _study(tmp_path)
    run_slot_trials(study, 4, rounds, size=2, space=TEST_SPACE, seed=5)
    assert rounds.seen == [
        (0, [0, 1]),  # trial 1 pruned after fold 0: its slot is free
        (0, [2, 3]),  # two new trials fill fold 0's round (more than fold 1's one waiting trial)
        (1, [0, 2]),
        (2, [0, 2]),
        (1, [3]),  # the budget of 4 is spent: the last trial walks alone
        (2, [3]),
    ]
    assert [t.state.name for t in study.get_trials()] == ["COMPLETE", "PRUNED", "COMPLETE", "COMPLETE"]


def test_slots_train_the_same_folds_as_batches_in_fewer_rounds_when_trials_are_pruned(tmp_path):
    prune_at = {0: {1, 3, 5}, 1: {2}}
    lockstep: list[list[int]] = []  # the rounds of batches walked in lockstep: a pruned member's slot idles

    def batch(trials):
        for fold in range(3):
            if live := [a for a in trials if not a.pruned]:
                lockstep.append([a.number for a in live])
            for asked in live:
                asked.report_fold(fold, 0.0)
                asked.pruned = asked.number in prune_at.get(fold, ())
        return {a.number: 0.0 for a in trials if not a.pruned}

    run_trials(_study(tmp_path, "lockstep"), 8, batch, size=2, space=TEST_SPACE, seed=5)
    slots = Rounds(folds=3, prune_at=prune_at)
    run_slot_trials(_study(tmp_path, "slots"), 8, slots, size=2, space=TEST_SPACE, seed=5)
    trained = 8 * 3 - 3 * 2 - 1  # three trials pruned after fold 0, one after fold 1
    assert sum(map(len, lockstep)) == sum(len(m) for _, m in slots.seen) == trained
    assert (len(lockstep), len(slots.seen)) == (11, 10)


def test_a_trial_declared_stale_leaves_its_slot_untold_and_trains_no_further_here(tmp_path):
    study, told = _study(tmp_path), []
    rounds = Rounds(folds=3, stale_at={0: {1}})
    run_slot_trials(study, 3, rounds, size=2, space=TEST_SPACE, seed=5,
                    callbacks=[lambda s, t: told.append(t.number)])  # fmt: skip
    assert rounds.seen[0] == (0, [0, 1]) and all(1 not in members for _, members in rounds.seen[1:])
    assert 1 not in told and {0, 2} <= set(told)


def test_each_trial_is_told_when_it_ends_not_when_its_round_mates_do(tmp_path):
    study, told = _study(tmp_path), []
    rounds = Rounds(folds=2, prune_at={0: {1}})
    run_slot_trials(study, 2, rounds, size=2, space=TEST_SPACE, seed=5,
                    callbacks=[lambda s, t: told.append((t.number, len(rounds.seen)))])  # fmt: skip
    assert told == [(1, 1), (0, 2)]


def test_the_round_callbacks_run_once_after_each_round_that_ended_a_trial(tmp_path):
    study, calls = _study(tmp_path), []
    rounds = Rounds(folds=2, prune_at={0: {1}})
    run_slot_trials(study, 4, rounds, size=4, space=TEST_SPACE, seed=5,
                    round_callbacks=[lambda s: calls.append((len(rounds.seen), study_progress(s).finished))])  # fmt: skip
    # Round 1 (fold 0) prunes trial 1; round 2 (fold 1) ends the other three: one call each, after the tells.
    assert rounds.seen == [(0, [0, 1, 2, 3]), (1, [0, 2, 3])]
    assert calls == [(1, 1), (2, 4)]


def test_a_round_that_ends_no_trial_runs_no_round_callback(tmp_path):
    study, calls = _study(tmp_path), []
    rounds = Rounds(folds=3)
    run_slot_trials(study, 2, rounds, size=2, space=TEST_SPACE, seed=5,
                    round_callbacks=[lambda s: calls.append(len(rounds.seen))])  # fmt: skip
    assert len(rounds.seen) == 3 and calls == [3]


def test_an_interruption_ends_a_pruned_trial_pruned_and_queues_the_others_for_a_retry(tmp_path):
    study, told = _study(tmp_path), []
    rounds = Rounds(folds=3, prune_at={0: {1}}, interrupt_at=2)
    with pytest.raises(KeyboardInterrupt):
        run_slot_trials(study, 4, rounds, size=2, space=TEST_SPACE, seed=5,
                        callbacks=[lambda s, t: told.append((t.number, t.state.name))])  # fmt: skip
    states = {t.number: t.state.name for t in study.get_trials()}
    assert states[1] == "PRUNED" and told == [(1, "PRUNED")]
    assert [states[n] for n in (0, 2, 3)] == ["FAIL", "FAIL", "FAIL"]  # each queued again
    retries = [t for t in study.get_trials() if t.state.name == "WAITING"]
    assert sorted(r.params["lr"] for r in retries) == sorted(
        trial_by_number(study, n).params["lr"] for n in (0, 2, 3)
    )


def test_a_trial_waiting_between_rounds_keeps_a_fresh_heartbeat(tmp_path):
    study, states = _study(tmp_path), []  # heartbeat every second, stale after two
    rounds = Rounds(folds=2, prune_at={0: {1}})

    def watched(fold, trials):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)
        states.append(trial_by_number(study, 0).state.name)
        if 0 not in [t.number for t in trials]:
            time.sleep(2.5)  # trial 0 waits for fold 1 past its grace while this round trains
        return rounds(fold, trials)

    run_slot_trials(study, 4, watched, size=2, space=TEST_SPACE, seed=5)
    assert rounds.seen[:3] == [(0, [0, 1]), (0, [2, 3]), (1, [0, 2])]
    assert states[:3] == ["RUNNING", "RUNNING", "RUNNING"]
    assert trial_by_number(study, 0).state.name == "COMPLETE"


def test_a_round_failed_by_a_settings_failure_fails_every_member(tmp_path):
    study, rounds = _study(tmp_path), Rounds(folds=2)

    def first_round_fails(fold, trials):
        if not rounds.seen:
            rounds.seen.append((fold, [t.number for t in trials]))
            raise OverflowError("the step overflowed")
        return rounds(fold, trials)

    run_slot_trials(study, 2, first_round_fails, size=2, space=TEST_SPACE, seed=5, catch=(OverflowError,))
    assert [(t.state.name, t.user_attrs.get("error")) for t in study.get_trials()] == [
        ("FAIL", "OverflowError: the step overflowed")
    ] * 2


def test_a_slot_search_samples_its_first_ten_trials_at_random(tmp_path, monkeypatch):
    import foxhunt.search.trial_loop as trial_loop

    original, startups = trial_loop.trial_sampler, []

    def recorded(seed, worker, index, startup_trials):
        startups.append(startup_trials)
        return original(seed, worker, index, startup_trials)

    monkeypatch.setattr(trial_loop, "trial_sampler", recorded)
    run_slot_trials(_study(tmp_path), 2, Rounds(folds=1), size=2, space=TEST_SPACE, seed=5)
    assert startups == [10, 10]


class _Slept(Exception):
    pass


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used with Study.optimize")
@pytest.mark.parametrize(("poll_seconds", "slept"), [(None, 1), (0.25, 0.25)])
def test_a_worker_with_no_trial_left_looks_again_every_poll_seconds_else_every_heartbeat(
    tmp_path, monkeypatch, poll_seconds, slept
):
    study = _study(tmp_path)
    study.ask()  # another worker's trial, running: nothing is left to ask or to train here
    seen: list[float] = []

    def sleep(seconds: float) -> None:
        seen.append(seconds)
        raise _Slept

    monkeypatch.setattr(time, "sleep", sleep)
    with pytest.raises(_Slept):
        run_slot_trials(study, 1, Rounds(), size=2, space=TEST_SPACE, seed=5, poll_seconds=poll_seconds)
    assert seen == [slept]
