"""Walk-forward fold ranges: the rules of DESIGN.md "Folds", checked against a row-filtering reference."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from foxhunt.config import TARGET_HORIZONS, FoldConfig
from foxhunt.data.folds import FoldRange, days_to_ns, generate_walk_forward_indices

MINUTE = 60 * 10**9
DAY = 86_400 * 10**9
T0 = 1_704_067_200 * 10**9  # 2024-01-01 00:00 UTC


def minute_bars(days: float, start: int = T0) -> np.ndarray:
    """Gapless minute timestamps over `days` days."""
    return start + np.arange(int(days * 1440), dtype=np.int64) * MINUTE


def small_config(**changes) -> FoldConfig:
    """Day-scale windows so that tests run on a few thousand minute bars."""
    base = FoldConfig(
        train_days=2.0, val_days=1.0, step_days=1.0, purge_bars=60, min_train_rows=100, min_val_rows=10
    )
    return dataclasses.replace(base, **changes)


def reference_folds(ts: np.ndarray, config: FoldConfig, returns: np.ndarray | None = None) -> list[FoldRange]:
    """The fold rules restated by filtering rows with boolean masks: slow, obviously right."""
    train_ns = round(config.train_days * DAY)
    val_ns = round(config.val_days * DAY)
    step_ns = round(config.step_days * DAY)
    t0, t_last = int(ts[0]), int(ts[-1])
    folds: list[FoldRange] = []
    k = 0
    while t0 + k * step_ns + train_ns <= t_last:  # the validation window starts at or before the last bar
        if config.max_folds and len(folds) == config.max_folds:
            break
        window_start = t0 + k * step_ns if config.mode == "rolling" else t0
        window_end = t0 + k * step_ns + train_ns
        k += 1
        train_rows = np.flatnonzero((ts >= window_start) & (ts < window_end))
        val_rows = np.flatnonzero((ts >= window_end) & (ts < window_end + val_ns))
        if len(train_rows) - config.purge_bars < config.min_train_rows or len(val_rows) < config.min_val_rows:
            continue
        train = slice(int(train_rows[0]), int(train_rows[-1]) + 1 - config.purge_bars)
        val = slice(int(val_rows[0]), int(val_rows[-1]) + 1)
        score = 1.0
        if returns is not None:
            train_vol = math.sqrt(sum(float(r) ** 2 for r in returns[train]) / (train.stop - train.start))
            val_vol = math.sqrt(sum(float(r) ** 2 for r in returns[val]) / (val.stop - val.start))
            score = val_vol / train_vol if train_vol > 0 else 1.0
        folds.append(FoldRange(len(folds), train.start, train.stop, val.start, val.stop, score))
    return folds


@st.composite
def gappy_timestamps(draw) -> np.ndarray:
    """Minute bars in runs separated by holes from one minute up to three days (weekend-like)."""
    runs = draw(st.lists(st.tuples(st.integers(1, 2500), st.integers(1, 3 * 1440)), min_size=1, max_size=8))
    start = T0 + draw(st.integers(0, DAY))
    steps = []
    for length, hole in runs:
        steps.extend([MINUTE] * (length - 1))
        steps.append(hole * MINUTE + MINUTE)
    return start + np.concatenate([[0], np.cumsum(steps[:-1], dtype=np.int64)]).astype(np.int64)


fold_configs = st.builds(
    FoldConfig,
    train_days=st.floats(0.05, 6.0),
    val_days=st.floats(0.02, 3.0),
    step_days=st.floats(0.02, 3.0),
    mode=st.sampled_from(["rolling", "expanding"]),
    purge_bars=st.integers(0, 120),
    min_train_rows=st.integers(1, 600),
    min_val_rows=st.integers(1, 300),
    max_folds=st.integers(0, 6),
)


@settings(max_examples=150, deadline=None)
@given(ts=gappy_timestamps(), config=fold_configs)
def test_folds_equal_a_reference_that_filters_rows_by_date(ts, config):
    expected = reference_folds(ts, config)
    if days_to_ns(config.val_days) > int(ts[-1]) - int(ts[0]) + 1:  # said, not cut at the data's end
        with pytest.raises(ValueError, match="longer than the data|too few timestamps"):
            generate_walk_forward_indices(ts, config)
    elif not expected:
        with pytest.raises(ValueError):
            generate_walk_forward_indices(ts, config)
    else:
        assert generate_walk_forward_indices(ts, config) == expected


@settings(max_examples=40, deadline=None)
@given(ts=gappy_timestamps(), config=fold_configs, seed=st.integers(0, 2**32 - 1))
def test_difficulty_scores_equal_the_reference_on_gappy_data(ts, config, seed):
    returns = np.random.default_rng(seed).normal(0.0, 1e-3, len(ts)).astype(np.float32)
    expected = reference_folds(ts, config, returns)
    fits = days_to_ns(config.val_days) <= int(ts[-1]) - int(ts[0]) + 1  # else refused (the test above)
    if expected and fits:
        got = generate_walk_forward_indices(ts, config, close_returns=returns)
        assert [f.difficulty_score for f in got] == pytest.approx(
            [f.difficulty_score for f in expected], rel=1e-5
        )


def test_no_training_target_reaches_validation_with_the_default_purge():
    ts = minute_bars(10)
    config = small_config(purge_bars=FoldConfig().purge_bars)
    folds = generate_walk_forward_indices(ts, config)
    assert folds
    for f in folds:
        last_target_row = f.train_end - 1 + max(TARGET_HORIZONS)
        assert last_target_row < f.val_start


@pytest.mark.parametrize("purge", [0, 1, 17, 240])
def test_a_custom_purge_leaves_exactly_that_many_bars_between_train_and_validation(purge):
    folds = generate_walk_forward_indices(minute_bars(10), small_config(purge_bars=purge))
    assert folds
    assert all(f.val_start - f.train_end == purge for f in folds)


def test_the_purge_takes_bars_from_training_not_validation():
    ts = minute_bars(10)
    config = small_config()
    for f in generate_walk_forward_indices(ts, config):
        assert ts[f.val_start] - ts[0] == round(config.train_days * DAY) + f.fold * round(
            config.step_days * DAY
        )


def test_rolling_training_windows_keep_their_length_in_days():
    ts = minute_bars(10)
    config = small_config(mode="rolling")
    folds = generate_walk_forward_indices(ts, config)
    assert len(folds) > 1
    for f in folds:
        # The purged bars are still inside the window: the window runs from train_start to val_start.
        assert ts[f.val_start] - ts[f.train_start] == round(config.train_days * DAY)


def test_expanding_training_windows_all_start_at_the_first_row():
    folds = generate_walk_forward_indices(minute_bars(10), small_config(mode="expanding"))
    assert len(folds) > 1
    assert all(f.train_start == 0 for f in folds)
    assert [f.train_end for f in folds] == sorted({f.train_end for f in folds})


def test_max_folds_caps_the_number_of_folds():
    ts = minute_bars(10)
    assert len(generate_walk_forward_indices(ts, small_config(max_folds=0))) > 3
    assert len(generate_walk_forward_indices(ts, small_config(max_folds=3))) == 3


def test_max_folds_keeps_the_earliest_folds():
    ts = minute_bars(10)
    capped = generate_walk_forward_indices(ts, small_config(max_folds=2))
    assert capped == generate_walk_forward_indices(ts, small_config())[:2]


def test_validation_windows_advance_by_the_step_and_folds_are_numbered_in_order():
    ts = minute_bars(12)
    config = small_config(step_days=1.5)
    folds = generate_walk_forward_indices(ts, config)
    assert [f.fold for f in folds] == list(range(len(folds)))
    starts = ts[[f.val_start for f in folds]]
    assert np.all(np.diff(starts) == round(config.step_days * DAY))


def test_a_fold_starved_by_a_data_gap_is_skipped_and_numbering_stays_consecutive():
    # Day 5 is missing entirely: the fold validating on it has no validation rows.
    ts = minute_bars(10)
    ts = ts[(ts < T0 + 5 * DAY) | (ts >= T0 + 6 * DAY)]
    folds = generate_walk_forward_indices(ts, small_config())
    val_days = [int((ts[f.val_start] - T0) // DAY) for f in folds]
    assert 5 not in val_days
    assert val_days == [2, 3, 4, 6, 7, 8, 9]
    assert [f.fold for f in folds] == list(range(len(folds)))


def test_a_last_validation_window_cut_by_the_data_end_is_kept_when_it_has_enough_rows():
    ts = minute_bars(5.5)  # the fold validating on day 5 sees only half a day
    folds = generate_walk_forward_indices(ts, small_config(min_val_rows=700))
    assert folds[-1].val_end == len(ts)
    assert folds[-1].val_rows == 720


def test_a_last_validation_window_cut_below_min_val_rows_is_dropped():
    ts = minute_bars(5.5)
    folds = generate_walk_forward_indices(ts, small_config(min_val_rows=721))
    assert folds[-1].val_end == 5 * 1440


def test_a_validation_window_starting_on_the_last_bar_is_still_a_candidate():
    ts = minute_bars(2)
    ts = np.append(ts, T0 + 2 * DAY)  # one bar exactly at the end of the first training window
    (fold,) = generate_walk_forward_indices(ts, small_config(min_val_rows=1))
    assert (fold.val_start, fold.val_end) == (2 * 1440, 2 * 1440 + 1)


def test_a_bar_a_nanosecond_before_the_validation_windows_end_belongs_to_it():
    # [train end, train end + val_days): the window is end-exclusive at exactly val_days, no sooner.
    edge = T0 + 3 * DAY - 1  # fold 0 validates on day 2; one bar 1 ns before day 3 begins
    ts = np.sort(np.append(minute_bars(4), edge))
    fold = generate_walk_forward_indices(ts, small_config(mode="rolling"))[0]
    assert ts[fold.val_end - 1] == edge and ts[fold.val_end] == T0 + 3 * DAY


def test_a_fold_with_exactly_min_train_rows_after_the_purge_is_kept():
    # Rolling 2-day windows of gapless minutes: 2,880 rows, 2,820 after a purge of 60.
    ts = minute_bars(5)
    assert len(generate_walk_forward_indices(ts, small_config(mode="rolling", min_train_rows=2820))) == 3
    with pytest.raises(ValueError, match="no fold fits"):
        generate_walk_forward_indices(ts, small_config(mode="rolling", min_train_rows=2821))


def test_difficulty_score_is_validation_vol_over_training_vol():
    ts = minute_bars(6)
    rng = np.random.default_rng(7)
    returns = rng.normal(0.0, 1e-3, len(ts)).astype(np.float32)
    returns[3 * 1440 :] *= 3.0  # a calm start then a rough market
    for f in generate_walk_forward_indices(ts, small_config(), close_returns=returns):
        train_vol = np.sqrt(np.mean(returns[f.train_slice].astype(np.float64) ** 2))
        val_vol = np.sqrt(np.mean(returns[f.val_slice].astype(np.float64) ** 2))
        assert f.difficulty_score == pytest.approx(val_vol / train_vol, rel=1e-5)


def test_difficulty_score_rises_when_validation_is_rougher_than_training():
    ts = minute_bars(3)
    returns = np.full(len(ts), 1e-4, dtype=np.float32)
    returns[2 * 1440 :] = 4e-4
    (fold,) = generate_walk_forward_indices(ts, small_config(), close_returns=returns)
    assert fold.difficulty_score == pytest.approx(4.0, rel=1e-5)


def test_difficulty_score_is_one_without_returns():
    folds = generate_walk_forward_indices(minute_bars(6), small_config())
    assert all(f.difficulty_score == 1.0 for f in folds)


def test_difficulty_score_is_one_when_training_returns_are_all_zero():
    ts = minute_bars(3)
    returns = np.zeros(len(ts), dtype=np.float32)
    returns[2 * 1440 :] = 1e-3
    (fold,) = generate_walk_forward_indices(ts, small_config(), close_returns=returns)
    assert fold.difficulty_score == 1.0


def test_fold_range_properties_describe_its_slices():
    fold = FoldRange(fold=0, train_start=10, train_end=40, val_start=100, val_end=125, difficulty_score=1.5)
    assert (fold.train_rows, fold.val_rows) == (30, 25)
    assert (fold.train_slice, fold.val_slice) == (slice(10, 40), slice(100, 125))


def test_fold_range_to_dict_holds_plain_numbers():
    (fold,) = generate_walk_forward_indices(minute_bars(3), small_config())
    d = fold.to_dict()
    assert d == {
        "fold": 0,
        "train_start": 0,
        "train_end": 2 * 1440 - 60,
        "val_start": 2 * 1440,
        "val_end": 3 * 1440,
        "difficulty_score": 1.0,
    }
    assert all(type(v) in (int, float) for v in d.values())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"train_days": 0.0}, "train_days must be a finite number in \\(0, 36500\\]"),
        ({"val_days": -1.0}, "val_days must be a finite number in \\(0,"),
        ({"step_days": 0}, "step_days must be a finite number in \\(0,"),
        ({"step_days": float("nan")}, "step_days must be a finite number in \\(0,"),
        ({"train_days": float("inf")}, "train_days must be a finite number in"),
        ({"purge_bars": -1}, "purge_bars must be an integer in \\[0,"),
        ({"mode": "sliding"}, "mode must be one of rolling, expanding, got 'sliding'"),
        ({"max_folds": -2}, "max_folds must be an integer in \\[0,"),
        ({"min_train_rows": 0}, "min_train_rows must be an integer in \\[1,"),
        ({"min_val_rows": 0}, "min_val_rows must be an integer in \\[1,"),
    ],
)
def test_an_invalid_config_is_a_value_error_naming_the_setting(changes, message):
    # The fold config checks itself when it is built, so no invalid one reaches the fold generator.
    with pytest.raises(ValueError, match=message):
        small_config(**changes)


def test_the_default_config_is_valid():
    assert FoldConfig().train_days == 120.0


def test_too_few_timestamps_is_a_value_error_giving_the_rows_needed():
    with pytest.raises(ValueError, match=r"too few timestamps: 50 rows, but one fold needs at least 170"):
        generate_walk_forward_indices(minute_bars(10)[:50], small_config())


def test_no_fold_fitting_is_a_value_error_naming_the_data_span_and_the_needs():
    ts = minute_bars(1.5)
    with pytest.raises(ValueError, match=r"no fold fits: the data span 1\.50 days") as caught:
        generate_walk_forward_indices(ts, small_config(train_days=2.0))
    assert "2 training days" in str(caught.value)


def test_timestamps_out_of_order_are_a_value_error():
    ts = minute_bars(10)
    ts[100] = ts[99]
    with pytest.raises(ValueError, match="strictly increasing; row 100"):
        generate_walk_forward_indices(ts, small_config())


def test_returns_not_aligned_with_timestamps_are_a_value_error():
    ts = minute_bars(10)
    with pytest.raises(ValueError, match="close_returns must have shape"):
        generate_walk_forward_indices(ts, small_config(), close_returns=np.zeros(len(ts) - 1))
