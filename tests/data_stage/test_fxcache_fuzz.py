"""Fuzzing the fxcache reader: any bytes give a valid cache holding the written arrays, or an FxCacheError.

Random bytes, truncations, byte edits and spliced garbage of a valid file; never another exception,
never a cache whose arrays differ from what was written.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fxcache_cases import make_table

from foxhunt.data import fxcache

MAGIC = b"ARROW1\x00\x00"
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    table = make_table(rows=40, seed=11)
    path = tmp_path_factory.mktemp("fuzz-good") / "good.arrow"
    fxcache.write_fxcache(str(path), table, source_uri="bars.parquet", source_hash="h")
    return table, path.read_bytes()


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz") / "cache.arrow"


def outcome(path, table) -> str:
    """'valid' (and then the arrays are the written ones) or 'refused'; any other exception fails the test."""
    path_text = str(path)
    try:
        cache = fxcache.read_fxcache(path_text)
    except fxcache.FxCacheError as exc:
        assert str(exc).startswith(f"{path_text}: ") and "\n" not in str(exc)
        return "refused"
    np.testing.assert_array_equal(cache.timestamp, table.timestamp)
    np.testing.assert_array_equal(cache.features, table.features)
    np.testing.assert_array_equal(cache.targets, table.targets)
    return "valid"


@FUZZ
@given(data=st.binary(max_size=8192))
def test_random_bytes_are_refused(good, target, data):
    target.write_bytes(data)
    assert outcome(target, good[0]) == "refused"


@FUZZ
@given(data=st.binary(max_size=8192))
def test_random_bytes_between_arrow_magic_are_refused(good, target, data):
    target.write_bytes(MAGIC + data + MAGIC)
    assert outcome(target, good[0]) == "refused"


@FUZZ
@given(cut=st.floats(0, 1, exclude_max=True))
def test_every_truncation_is_refused(good, target, cut):
    table, raw = good
    target.write_bytes(raw[: int(cut * len(raw))])
    assert outcome(target, table) == "refused"


@FUZZ
@given(
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=8)
)
def test_edited_bytes_give_the_written_arrays_or_a_refusal(good, target, edits):
    table, raw = good
    damaged = bytearray(raw)
    for where, value in edits:
        damaged[int(where * len(raw))] = value
    target.write_bytes(bytes(damaged))
    outcome(target, table)


@FUZZ
@given(where=st.floats(0, 1, exclude_max=True), garbage=st.binary(min_size=1, max_size=512))
def test_spliced_garbage_gives_the_written_arrays_or_a_refusal(good, target, where, garbage):
    table, raw = good
    at = int(where * len(raw))
    target.write_bytes(raw[:at] + garbage + raw[at + len(garbage) :])
    outcome(target, table)


@FUZZ
@given(data=st.binary(max_size=4096), keep=st.floats(0, 1))
def test_the_cheap_match_never_raises_on_damaged_files(good, target, data, keep):
    raw = good[1]
    target.write_bytes(raw[: int(keep * len(raw))] + data)
    found = fxcache.fxcache_matches(str(target), "h")
    assert found is None or found["rows"] == 40
