"""A record's memo key names exactly its rows, positions and segments: records that differ in any of them
never share a key (a shared key is a shared score)."""

import numpy as np

from foxhunt.evaluate.records import fold_record, record_key, stitch

TIMESTAMP = np.arange(1_000, dtype=np.int64) * 60_000_000_000
RETURNS = np.linspace(-1e-3, 1e-3, 1_000)


def record(fold: int, start: int, positions):
    return fold_record(fold, start, np.asarray(positions, dtype=np.float64), TIMESTAMP, RETURNS)


def test_the_same_rows_and_positions_give_the_same_key():
    assert record_key(record(0, 10, [1, 0, -1])) == record_key(record(0, 10, [1, 0, -1]))


def test_the_same_positions_on_other_rows_give_another_key():
    assert record_key(record(0, 10, [1, 0, -1])) != record_key(record(0, 11, [1, 0, -1]))


def test_other_positions_or_another_fold_give_another_key():
    base = record_key(record(0, 10, [1, 0, -1]))
    assert base != record_key(record(0, 10, [1, 0, 1]))
    assert base != record_key(record(1, 10, [1, 0, -1]))


def test_records_with_gaps_over_the_same_span_are_told_apart_by_their_rows():
    # The same first and last row, bars, segment starts, folds and positions; the middle segment on other rows.
    a = stitch([record(0, 0, [1, 1, 1]), record(1, 5, [1, 1, 1]), record(2, 9, [1])])
    b = stitch([record(0, 0, [1, 1, 1]), record(1, 4, [1, 1, 1]), record(2, 9, [1])])
    assert not np.array_equal(a.index, b.index)
    assert record_key(a) != record_key(b)


def test_a_stitched_record_without_gaps_keys_like_its_consecutive_rows():
    whole = stitch([record(0, 0, [1, 0]), record(1, 2, [-1, 1])])
    assert record_key(whole)[1] == (0, 3)
