"""The one walk over folds (`run.walk.walk_folds`), with a stand-in for one fold's training: the folds in
order, taken-over folds not trained, diverged and stopped members leaving, the rest walking on."""

from __future__ import annotations

import pytest

from foxhunt.data.folds import FoldRange
from foxhunt.run import walk as walk_module
from foxhunt.run.fold import FoldOutcome
from foxhunt.run.walk import WalkHooks, diverged_seeds, walk_folds
from foxhunt.train import TrainingDiverged

FOLDS = [FoldRange(f, 100 * f, 100 * f + 80, 100 * f + 90, 100 * f + 100, 1.0) for f in range(4)]


class _Report(str):
    """A stand-in report: its label, and the selection a pooled decision reads (none here)."""

    selection = None


def _outcome(label: str) -> FoldOutcome:
    return FoldOutcome(report=_Report(label), positions=None, baselines=None, outputs=None)  # type: ignore[arg-type]


@pytest.fixture
def trained(monkeypatch):
    """The calls the walk makes to train one fold: (fold, members); members diverge as `diverge` says."""
    calls: list[tuple[int, tuple[int, ...]]] = []
    diverge: dict[tuple[int, int], TrainingDiverged] = {}

    def train_fold(trainer, fold_range, epochs, outs, progress, check, **kwargs):
        calls.append((fold_range.fold, tuple(outs)))
        return {k: diverge.get((fold_range.fold, k)) or _outcome(f"{k}@{fold_range.fold}") for k in outs}

    monkeypatch.setattr(walk_module, "train_fold", train_fold)
    return calls, diverge


def _walk(hooks: WalkHooks | None = None, members=(0, 1, 2)):
    return walk_folds(None, FOLDS, {k: f"out/{k}" for k in members}, 3, None, hooks=hooks)  # type: ignore[arg-type]


def test_every_member_walks_every_fold_in_order_trained_together(trained):
    calls, _ = trained
    walked = _walk()
    assert calls == [(f, (0, 1, 2)) for f in range(4)]
    assert {k: [o.report for o in by_fold.values()] for k, by_fold in walked.outcomes.items()} == {
        k: [f"{k}@{f}" for f in range(4)] for k in (0, 1, 2)
    }
    assert all(walked.finished(k) for k in (0, 1, 2))


def test_a_diverged_member_leaves_with_its_failure_and_the_others_walk_on(trained):
    calls, diverge = trained
    failure = TrainingDiverged("member 1: loss is NaN")
    diverge[(1, 1)] = failure
    walked = _walk()
    assert calls[2:] == [(2, (0, 2)), (3, (0, 2))]
    assert walked.failures == {1: failure}
    assert list(walked.outcomes[1]) == [0] and not walked.finished(1) and walked.finished(0)


def test_a_member_the_caller_stops_after_a_fold_is_not_trained_again(trained):
    calls, _ = trained
    seen = []

    def on_fold(done):
        seen.append((done.fold.fold, {k: len(v) for k, v in done.outcomes.items()}))
        return [2] if done.fold.fold == 1 else []

    walked = _walk(WalkHooks(on_fold=on_fold))
    assert calls[2:] == [(2, (0, 1)), (3, (0, 1))]
    assert seen[1] == (1, {0: 2, 1: 2, 2: 2})  # the fold's outcomes are in before the caller is told
    assert list(walked.outcomes[2]) == [0, 1] and not walked.finished(2)


def test_a_fold_taken_over_is_not_trained_and_a_member_it_lacks_drops_out(trained):
    calls, _ = trained
    earlier = {0: _outcome("0 earlier"), 1: _outcome("1 earlier")}  # member 2 diverged in fold 0 before
    told = []
    hooks = WalkHooks(
        taken_over=lambda fold: earlier if fold.fold == 0 else None,
        on_fold=lambda done: told.append((done.fold.fold, done.taken)) or [],
    )
    walked = _walk(hooks)
    assert calls == [(f, (0, 1)) for f in (1, 2, 3)]
    assert walked.outcomes[0][0] is earlier[0] and walked.outcomes[2] == {}
    assert told == [(0, True), (1, False), (2, False), (3, False)]


def test_the_walk_says_which_fold_it_is_in_and_checks_before_each(trained):
    events = []
    hooks = WalkHooks(check=lambda: events.append("check"), at_fold=lambda fold: events.append(fold))
    _walk(hooks)
    assert events == ["check", 0, "check", 1, "check", 2, "check", 3, None]


def test_the_walk_ends_when_no_member_is_left(trained):
    calls, _ = trained
    walked = _walk(WalkHooks(on_fold=lambda done: [0]), members=(0,))
    assert calls == [(0, (0,))] and list(walked.outcomes[0]) == [0]


def test_a_walk_given_its_own_step_trains_every_fold_through_it_with_the_outcomes_so_far(trained):
    default_calls, _ = trained
    steps = []
    failure = TrainingDiverged("member 1: loss is NaN")

    def step(fold, live, outcomes):  # a universe fold's stand-in: its own fold type and outcomes
        steps.append((fold.fold, tuple(live), {k: sorted(v) for k, v in outcomes.items()}))
        return {k: failure if (fold.fold, k) == (1, 1) else f"{k}@{fold.fold}" for k in live}

    walked = walk_folds(None, FOLDS[:3], {0: "a", 1: "b"}, 3, None, step=step)  # type: ignore[arg-type]
    assert default_calls == []
    assert steps == [
        (0, (0, 1), {0: [], 1: []}),
        (1, (0, 1), {0: [0], 1: [0]}),
        (2, (0,), {0: [0, 1], 1: [0]}),
    ]
    assert walked.outcomes == {0: {0: "0@0", 1: "0@1", 2: "0@2"}, 1: {0: "1@0"}}
    assert walked.failures == {1: failure}


def test_the_walk_keeps_the_fold_each_member_diverged_in(trained):
    _, diverge = trained
    diverge[(2, 1)] = TrainingDiverged("member 1: loss is NaN")
    assert _walk().diverged_in == {1: 2}


def test_a_member_a_taken_over_fold_leaves_out_diverged_in_that_fold(trained):
    earlier = {0: _outcome("0 earlier"), 2: _outcome("2 earlier")}  # member 1 diverged in fold 1 before
    walked = _walk(WalkHooks(taken_over=lambda fold: earlier if fold.fold == 1 else None))
    assert walked.diverged_in == {1: 1}


def test_a_member_the_caller_stops_has_not_diverged(trained):
    assert _walk(WalkHooks(on_fold=lambda done: [2] if done.fold.fold == 1 else [])).diverged_in == {}


def test_a_diverged_member_is_left_out_of_the_seeds_spread_naming_its_fold(trained):
    _, diverge = trained
    diverge[(3, 2)] = TrainingDiverged("member 2: loss is NaN")
    assert diverged_seeds(_walk(), [11, 12, 13]) == {13: "diverged in fold 3"}


def test_a_folds_files_are_written_beside_its_members_and_on_disk_before_it_is_recorded(
    tmp_path, monkeypatch
):
    # Each member's files go to the walk's writer threads while the next member is scored; `on_fold` (the
    # manifest) sees every one whole.
    import threading
    import time

    from foxhunt import storage

    writers, write = [], storage.write_atomic

    def slow(uri, data, metadata=None):
        time.sleep(0.02)  # an fsync's worth of waiting, and then some
        writers.append(threading.current_thread().name)
        write(uri, data, metadata)

    def train_fold(trainer, fold_range, epochs, outs, progress, check, **kwargs):
        for k in outs:
            storage.write_bytes_soon(tmp_path / f"{k}_{fold_range.fold}.bin", bytes([k]) * 100)
        return {k: _outcome(f"{k}@{fold_range.fold}") for k in outs}

    def on_fold(done):
        found = {k: (tmp_path / f"{k}_{done.fold.fold}.bin").read_bytes() for k in done.results}
        assert found == {k: bytes([k]) * 100 for k in done.results}
        return []

    monkeypatch.setattr(storage, "write_atomic", slow)
    monkeypatch.setattr(walk_module, "train_fold", train_fold)
    _walk(WalkHooks(on_fold=on_fold))
    assert len(writers) == 12 and all(name.startswith("foxhunt-writes") for name in writers)
