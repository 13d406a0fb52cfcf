"""Folds of a universe: calendar windows shared by every instrument, transitions that stay inside one."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from foxhunt.config import FoldConfig
from foxhunt.data.folds import FoldRange, generate_walk_forward_indices
from foxhunt.data.sample import fx_minutes, session_minutes
from foxhunt.data.universe import (
    UniverseFold,
    fold_spans,
    instrument_ids,
    instruments_in_no_fold,
    return_correlations,
    transition_mask,
    transition_rows,
    universe_folds,
    universe_index,
    universe_norm_stats,
)
from foxhunt.errors import BadInput

DAY = 86_400 * 10**9
START = "2024-01-01T00:00:00"  # a Monday, and New Year's Day: the exchange is closed


def config(**changes) -> FoldConfig:
    base = FoldConfig(
        train_days=3.0, val_days=1.0, step_days=1.0, purge_bars=60, min_train_rows=300, min_val_rows=100
    )
    return dataclasses.replace(base, **changes)


@pytest.fixture(scope="module")
def two_calendars() -> list[np.ndarray]:
    """Three weeks of FX minutes (24x5) and an exchange's sessions over the same dates."""
    fx = fx_minutes(15 * 1440, START)
    return [fx, session_minutes(int(fx[0]), int(fx[-1]))]


def rows_in(ts: np.ndarray, start: int, end: int) -> np.ndarray:
    """Rows whose timestamps lie in [start, end), by filtering: slow and obviously right."""
    return np.flatnonzero((ts >= start) & (ts < end))


def test_every_instrument_is_cut_at_the_same_calendar_windows(two_calendars):
    cfg = config()
    folds = universe_folds(two_calendars, cfg)
    assert len(folds) >= 5
    for fold in folds:
        for ts, r in zip(two_calendars, fold.ranges, strict=True):
            assert r is not None
            train = rows_in(ts, *fold.train_window)
            val = rows_in(ts, *fold.val_window)
            assert (r.train_start, r.train_end + cfg.purge_bars) == (train[0], train[-1] + 1)
            assert (r.val_start, r.val_end) == (val[0], val[-1] + 1)


def test_the_windows_start_at_the_universes_first_bar_not_each_instruments(two_calendars):
    fx, exchange = two_calendars
    fold = universe_folds(two_calendars, config())[0]
    alone = generate_walk_forward_indices(exchange, config())[0]
    # The exchange opens on 2 January at 08:00; cut alone, its windows would start there.
    assert fold.train_window[0] == fx[0] < exchange[0]
    assert fold.ranges[1] is not None and fold.ranges[1].val_start != alone.val_start


def test_one_instrument_gives_the_folds_of_walk_forward_indices(two_calendars):
    returns = np.random.default_rng(0).standard_normal(len(two_calendars[1]))
    for mode in ("rolling", "expanding"):
        cfg = config(mode=mode, max_folds=4)
        expected = generate_walk_forward_indices(two_calendars[1], cfg, close_returns=returns)
        folds = universe_folds(two_calendars[1:], cfg, close_returns=[returns])
        assert [f.ranges[0] for f in folds] == expected


def test_an_instrument_with_no_bars_in_a_window_takes_no_part(two_calendars):
    fx, _ = two_calendars
    # The exchange closed for a week: the folds that validate in it go on with FX alone.
    closed = tuple(str(np.datetime64("2024-01-08") + i) for i in range(5))
    exchange = session_minutes(int(fx[0]), int(fx[-1]), extra_closed=closed)
    folds = universe_folds([fx, exchange], config(), names=["fx", "exchange"])
    in_week = [f for f in folds if rows_in(exchange, *f.val_window).size == 0]
    assert in_week and all(f.ranges[1] is None and f.members == (0,) for f in in_week)
    assert any(f.members == (0, 1) for f in folds)
    assert [f.fold for f in folds] == list(range(len(folds)))


def test_an_instrument_with_too_few_rows_in_a_window_takes_no_part(two_calendars):
    # 510 session minutes a day against 1440 FX minutes: a training minimum between 3 days of one and
    # of the other leaves the exchange out of every fold of 3-day windows (rolling: an expanding
    # window grows past it), and says so.
    folds = universe_folds(two_calendars, config(min_train_rows=3 * 600, mode="rolling"))
    assert folds and all(f.members == (0,) for f in folds)
    assert instruments_in_no_fold(folds, ["fx", "exchange"]) == ["exchange"]


def test_an_instrument_listed_later_joins_the_later_folds(two_calendars):
    fx, exchange = two_calendars
    listed = exchange[exchange >= fx[0] + 8 * DAY]
    folds = universe_folds([fx, listed], config())
    joins = [f.fold for f in folds if 1 in f.members]
    assert joins and joins[0] > 0 and joins == list(range(joins[0], len(folds)))


def test_no_fold_in_any_instrument_is_bad_input(two_calendars):
    with pytest.raises(BadInput, match="no fold fits in any instrument"):
        universe_folds(two_calendars, config(min_train_rows=10**7))


def test_unsorted_timestamps_name_the_instrument(two_calendars):
    broken = two_calendars[1][::-1].copy()
    with pytest.raises(BadInput, match="instrument exchange: timestamps must be strictly increasing"):
        universe_folds([two_calendars[0], broken], config(), names=["fx", "exchange"])


def test_a_name_given_twice_is_bad_input():
    with pytest.raises(BadInput, match="'EURUSD' given twice"):
        universe_index(["EURUSD", "YNDX", "EURUSD"], [3, 4, 5])


def test_index_offsets_and_instrument_ids_follow_the_concatenation():
    index = universe_index(["a", "b", "c"], [3, 0, 2])
    assert index.offsets.tolist() == [0, 3, 3, 5] and index.rows(2) == slice(3, 5)
    assert instrument_ids(index).tolist() == [0, 0, 0, 2, 2]


# --- transitions ---------------------------------------------------------------------------------


def crossings(rows: np.ndarray, owner: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """Transition starts whose next state belongs to another instrument or lies outside the window."""
    nxt = rows + 1
    outside = (nxt >= len(owner)) | ~inside[np.minimum(nxt, len(owner) - 1)]
    return rows[outside | (owner[np.minimum(nxt, len(owner) - 1)] != owner[rows])]


def every_transition(owner: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """Every row whose next row is the same instrument's and in the window, by a loop over rows."""
    return np.array(
        [t for t in range(len(owner) - 1) if inside[t] and inside[t + 1] and owner[t] == owner[t + 1]],
        dtype=np.int64,
    )


@pytest.mark.parametrize("part", ["train", "val"])
def test_no_transition_crosses_instruments_and_none_is_lost(two_calendars, part):
    index = universe_index(["fx", "exchange"], [len(ts) for ts in two_calendars])
    owner = instrument_ids(index)
    for fold in universe_folds(two_calendars, config()):
        spans = fold_spans(index, fold, part)
        inside = np.zeros(index.n_rows, dtype=bool)
        for s, e in zip(spans.start, spans.end, strict=True):
            inside[s:e] = True
        rows = transition_rows(spans)
        assert crossings(rows, owner, inside).size == 0
        np.testing.assert_array_equal(rows, every_transition(owner, inside))
        np.testing.assert_array_equal(np.flatnonzero(transition_mask(index.n_rows, spans)), rows)


def test_a_span_ending_at_an_instrument_boundary_starts_no_transition_from_its_last_row(two_calendars):
    index = universe_index(["fx", "exchange"], [len(ts) for ts in two_calendars])
    last = universe_folds(two_calendars, config())[-1]
    spans = fold_spans(index, last, "val")
    # The last validation window runs to the end of the data: fx's span ends where exchange's rows begin.
    assert spans.end[0] == index.offsets[1]
    inside = np.zeros(index.n_rows, dtype=bool)
    for s, e in zip(spans.start, spans.end, strict=True):
        inside[s:e] = True
    owner = instrument_ids(index)
    # Off by one: every row of a span starting a transition reads the exchange's first bar as fx's next.
    off_by_one = np.concatenate([np.arange(s, e) for s, e in zip(spans.start, spans.end, strict=True)])
    assert index.offsets[1] - 1 in crossings(off_by_one, owner, inside)
    assert crossings(transition_rows(spans), owner, inside).size == 0


def test_spans_place_each_instruments_rows_at_its_offset(two_calendars):
    index = universe_index(["fx", "exchange"], [len(ts) for ts in two_calendars])
    fold = universe_folds(two_calendars, config())[2]
    spans = fold_spans(index, fold, "train")
    exchange = fold.ranges[1]
    assert exchange is not None
    assert spans.instrument.tolist() == [0, 1]
    assert (spans.start[1], spans.end[1]) == (
        len(two_calendars[0]) + exchange.train_start,
        len(two_calendars[0]) + exchange.train_end,
    )


# --- normalisation ---------------------------------------------------------------------------------


def hand_fold() -> UniverseFold:
    """Instrument a trains on its rows 1..3, b on its rows 0..2, c takes no part."""
    return UniverseFold(
        0, (0, 1), (1, 2), (FoldRange(0, 1, 4, 4, 5, 1.0), FoldRange(0, 0, 3, 3, 4, 1.0), None)
    )


def test_norm_stats_are_each_instruments_own_over_its_training_rows():
    index = universe_index(["a", "b", "c"], [5, 4, 2])
    features = np.array(
        [[0, 5], [1, 5], [2, 5], [4, 5], [100, 5],  # a: trains on [1, 2, 4] and [5, 5, 5]
         [10, 1], [20, 2], [30, 3], [-1, -1],  # b: trains on [10, 20, 30] and [1, 2, 3]
         [7, 7], [8, 8]],  # c
        dtype=np.float32,
    )  # fmt: skip
    mean, std = universe_norm_stats(features, index, hand_fold())
    np.testing.assert_allclose(mean, [[7 / 3, 5], [20, 2], [0, 0]], rtol=1e-6)
    # Population std (divide by n): sqrt(((1 - 7/3)^2 + (2 - 7/3)^2 + (4 - 7/3)^2) / 3) = sqrt(14/9).
    # A constant feature (a's second) and an absent instrument (c) divide by 1.
    np.testing.assert_allclose(
        std, [[np.sqrt(14 / 9), 1], [np.sqrt(200 / 3), np.sqrt(2 / 3)], [1, 1]], rtol=1e-6
    )
    assert mean.dtype == std.dtype == np.float32


def test_return_correlations_use_only_the_minutes_both_instruments_trade_before_the_cutoff():
    rng = np.random.default_rng(1)
    a_ts, b_ts = np.arange(0, 400, dtype=np.int64), np.arange(100, 500, dtype=np.int64)  # 300 shared
    a = rng.normal(size=400)
    b = np.empty(400)
    b[:200] = a[100:300] + rng.normal(scale=0.5, size=200)  # shared minutes 100..299: correlated
    b[200:] = rng.normal(size=200)
    a[300:] = 1e6 * np.sign(b[200:300])  # after the cutoff: would dominate any estimate that read it
    rho = return_correlations([a_ts, b_ts], [a, b], before_ns=300)
    assert rho[0, 1] == rho[1, 0] == pytest.approx(np.corrcoef(a[100:300], b[:200])[0, 1], rel=1e-12)
    assert np.diag(rho).tolist() == [1.0, 1.0]


def test_a_feature_that_barely_moves_in_one_instrument_divides_by_one():
    # A spread of 1e-9 (under MIN_STD) is rounding, not a scale: dividing by it would blow the feature up.
    index = universe_index(["a", "b", "c"], [5, 4, 2])
    features = np.ones((11, 2))  # float64: float32 cannot hold the 2e-9
    features[1:4, 0] = [1.0, 1.0 + 2e-9, 1.0]  # a's training rows: std about 1e-9
    features[5:8, 1] = [1.0, 2.0, 3.0]  # b's: a real spread, kept
    _, std = universe_norm_stats(features, index, hand_fold())
    assert std[0, 0] == 1.0 and std[1, 1] == pytest.approx(np.sqrt(2 / 3), rel=1e-6)


def test_two_shared_minutes_are_too_few_for_a_correlation():
    # Two points always lie on a line (|rho| = 1): a pair needs three shared bars before the cutoff.
    a, b = np.array([0.1, 0.3, 5.0]), np.array([-1.0, 2.0, 7.0])
    rho = return_correlations([np.arange(3), np.arange(3)], [a, b], before_ns=2)
    assert rho[0, 1] == 0.0
    assert return_correlations([np.arange(3), np.arange(3)], [a, b], before_ns=3)[0, 1] != 0.0


def test_instruments_that_share_no_minute_before_the_cutoff_are_uncorrelated():
    rho = return_correlations([np.arange(10), np.arange(20, 30)], [np.ones(10), np.ones(10)], before_ns=40)
    assert rho[0, 1] == 0.0
