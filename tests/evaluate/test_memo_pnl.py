"""A memo keeps the net P&L of a record scored again (a search's baselines, window after window), within its
room: the paired tests read it each time, so it is computed once, and what they give does not change."""

from __future__ import annotations

import dataclasses

import numpy as np
from test_evaluation import MEMO_SCORING, memo_window

from foxhunt.evaluate import records
from foxhunt.evaluate.evaluation import MODEL, evaluate_window
from foxhunt.evaluate.score_memo import ScoreMemo


def _counting_pnl(monkeypatch) -> list[int]:
    calls = []
    computed = records.Record.pnl

    def pnl(self, *args, **kwargs):
        calls.append(len(self))
        return computed(self, *args, **kwargs)

    monkeypatch.setattr(records.Record, "pnl", pnl)
    return calls


def test_a_record_scored_again_keeps_its_net_pnl_read_only():
    window, memo = memo_window(), ScoreMemo()
    (first,) = memo.score_records({"ridge": window["ridge"]}, MEMO_SCORING).values()
    (again,) = memo.score_records({"ridge": window["ridge"]}, MEMO_SCORING).values()
    want = window["ridge"].pnl(MEMO_SCORING.cost_per_unit, MEMO_SCORING.execution)
    np.testing.assert_array_equal(first.net_pnl, want)  # scored now: the fresh P&L
    np.testing.assert_array_equal(again.net_pnl, want)
    assert not again.net_pnl.flags.writeable


def test_the_paired_tests_read_a_kept_pnl_instead_of_computing_it(monkeypatch):
    window, memo = memo_window(), ScoreMemo()
    evaluate_window(window, MEMO_SCORING, 0, memo)
    evaluate_window(window, MEMO_SCORING, 0, memo)  # the baselines' P&L kept here
    calls = _counting_pnl(monkeypatch)
    changed = window[MODEL].positions.copy()
    changed[:5] = -changed[:5] + 0.0  # a new model beside the same baselines: a trial after the first
    window[MODEL] = dataclasses.replace(window[MODEL], positions=changed)
    evaluate_window(window, MEMO_SCORING, 0, memo)
    assert calls == [len(changed)]  # the new model's, scored; not one baseline's


def test_what_a_window_gives_is_the_same_with_the_pnl_kept():
    window, memo = memo_window(), ScoreMemo()
    plain = evaluate_window(window, MEMO_SCORING, 0)
    for _ in range(3):
        assert evaluate_window(window, MEMO_SCORING, 0, memo) == plain


def test_no_pnl_is_kept_beyond_the_memos_room(monkeypatch):
    window = memo_window()
    bars = len(window["ridge"])
    memo = ScoreMemo(repeat_pnl_bytes=8 * bars + 7)  # room for one record's P&L, not two
    for _ in range(2):
        held = memo.score_records({"ridge": window["ridge"], "flat": window["flat"]}, MEMO_SCORING)
    assert held["ridge"].net_pnl is not None and held["flat"].net_pnl is None
