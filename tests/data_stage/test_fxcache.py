"""fxcache: the Arrow IPC file of features and targets, its checks, its atomic writes and its S3 cache."""

from __future__ import annotations

import dataclasses
import mmap

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fxcache_cases import make_table, rewrite_with, write_good

from foxhunt import storage
from foxhunt.data import fxcache
from foxhunt.data.features import FEATURE_NAMES, TARGET_NAMES

MINUTE_NS = 60_000_000_000


@pytest.fixture(autouse=True)
def private_cache_dir(monkeypatch, tmp_path):
    """Keep downloads and S3 staging files of each test out of the user's cache."""
    monkeypatch.setenv("FOXHUNT_CACHE_DIR", str(tmp_path / "foxhunt-cache"))


def test_local_round_trip_returns_the_arrays_and_metadata_written(tmp_path):
    table = make_table()
    path = tmp_path / "cache.arrow"
    written = write_good(path, table)
    cache = fxcache.read_fxcache(str(path))
    np.testing.assert_array_equal(cache.timestamp, table.timestamp)
    np.testing.assert_array_equal(cache.features, table.features)
    np.testing.assert_array_equal(cache.targets, table.targets)
    assert cache.metadata == written
    assert len(cache) == 500 and not cache.cache_hit


def test_metadata_records_format_names_source_and_rows(tmp_path):
    metadata = write_good(tmp_path / "cache.arrow", make_table(rows=123))
    assert metadata["format_version"] == fxcache.FORMAT_VERSION
    assert metadata["feature_names"] == list(FEATURE_NAMES)
    assert metadata["target_names"] == list(TARGET_NAMES)
    assert (metadata["source_uri"], metadata["source_hash"], metadata["rows"]) == (
        "bars.parquet",
        "bars-hash",
        123,
    )


def test_loaded_arrays_are_views_of_the_mapped_file_not_copies(tmp_path):
    table = make_table()
    path = tmp_path / "cache.arrow"
    write_good(path, table)
    cache = fxcache.read_fxcache(str(path))
    assert not cache.features.flags.owndata and not cache.timestamp.flags.owndata
    # Change the file behind the reader's back: a view of the shared mapping sees it, a copy would not.
    with open(path, "r+b") as fh, mmap.mmap(fh.fileno(), 0) as mapped:
        at = mapped.find(table.features[0].tobytes())
        mapped[at : at + 4] = np.float32(1234.5).tobytes()
    assert cache.features[0, 0] == np.float32(1234.5)


def test_s3_round_trip_downloads_once_then_hits_the_local_cache(seaweed_s3, s3_get_requests, tmp_path):
    table = make_table()
    uri = seaweed_s3.uri("cache.arrow")
    write_good(uri, table)
    first = fxcache.read_fxcache(uri, cache_dir=tmp_path)
    gets_after_first = len(s3_get_requests)
    second = fxcache.read_fxcache(uri, cache_dir=tmp_path)
    np.testing.assert_array_equal(second.features, table.features)
    np.testing.assert_array_equal(second.timestamp, table.timestamp)
    assert (first.cache_hit, second.cache_hit) == (False, True)
    assert gets_after_first >= 1 and len(s3_get_requests) == gets_after_first


def test_a_damaged_local_copy_of_an_s3_fxcache_is_downloaded_again(moto_s3, tmp_path):
    uri = moto_s3.uri("cache.arrow")
    write_good(uri)
    local = fxcache.read_fxcache(uri, cache_dir=tmp_path).path
    local.write_bytes(local.read_bytes()[:100])
    again = fxcache.read_fxcache(uri, cache_dir=tmp_path)
    assert not again.cache_hit and len(again) == 500


def test_failed_local_write_leaves_no_target_and_no_temp_file(tmp_path, monkeypatch):
    def fail_midway(path, batch):
        path.write_bytes(b"ARROW1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(fxcache, "_write_ipc", fail_midway)
    with pytest.raises(OSError, match="disk full"):
        write_good(tmp_path / "cache.arrow")
    assert list(tmp_path.iterdir()) == []


def test_target_is_absent_until_the_local_write_completes(tmp_path, monkeypatch):
    target = tmp_path / "cache.arrow"
    seen_during_write = []
    real_write = fxcache._write_ipc

    def observe(path, batch):
        real_write(path, batch)
        seen_during_write.append(target.exists())

    monkeypatch.setattr(fxcache, "_write_ipc", observe)
    write_good(target)
    assert seen_during_write == [False] and target.exists()


def test_failed_s3_write_publishes_nothing_and_leaves_no_staging_file(moto_s3, tmp_path, monkeypatch):
    monkeypatch.setenv("FOXHUNT_CACHE_DIR", str(tmp_path))

    def fail_upload(uri, data, metadata=None):
        raise OSError("connection reset")

    monkeypatch.setattr(storage, "write_atomic", fail_upload)
    uri = moto_s3.uri("cache.arrow")
    with pytest.raises(OSError, match="connection reset"):
        write_good(uri)
    assert not storage.exists(uri)
    assert list((tmp_path / "staging").iterdir()) == []


def test_writer_refuses_nan_features(tmp_path):
    table = make_table()
    table.features[7, 3] = np.nan
    with pytest.raises(fxcache.FxCacheError, match="row 7"):
        write_good(tmp_path / "cache.arrow", table)
    assert not (tmp_path / "cache.arrow").exists()


def test_truncated_file_is_refused_as_incomplete(tmp_path):
    path = tmp_path / "cache.arrow"
    write_good(path)
    path.write_bytes(path.read_bytes()[:-500])
    with pytest.raises(fxcache.FxCacheError, match=r"cache\.arrow: not a complete Arrow IPC file"):
        fxcache.read_fxcache(str(path))


def test_a_flipped_byte_in_a_column_buffer_fails_the_checksum(tmp_path):
    table = make_table()
    path = tmp_path / "cache.arrow"
    write_good(path, table)
    data = bytearray(path.read_bytes())
    at = data.find(table.features[100].tobytes())
    data[at + 1] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(fxcache.FxCacheError, match=r"cache\.arrow: checksum mismatch"):
        fxcache.read_fxcache(str(path))


@pytest.fixture(scope="module")
def small_good_file(tmp_path_factory):
    table = make_table(rows=50)
    path = tmp_path_factory.mktemp("flip") / "good.arrow"
    write_good(path, table)
    return table, path.read_bytes()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.floats(0, 1, exclude_max=True), bit=st.integers(0, 7))
def test_any_flipped_bit_is_either_harmless_or_refused(small_good_file, tmp_path, where, bit):
    table, good = small_good_file
    damaged = bytearray(good)
    damaged[int(where * len(good))] ^= 1 << bit
    path = tmp_path / "damaged.arrow"
    path.write_bytes(bytes(damaged))
    try:
        cache = fxcache.read_fxcache(str(path))
    except fxcache.FxCacheError as exc:
        assert str(path) in str(exc)
        return
    # Accepted only if the flip hit bytes that carry no data (padding, unused flags).
    np.testing.assert_array_equal(cache.timestamp, table.timestamp)
    np.testing.assert_array_equal(cache.features, table.features)
    np.testing.assert_array_equal(cache.targets, table.targets)


@pytest.mark.parametrize(
    ("metadata", "match"),
    [
        ({"format_version": 2}, r"format version 2"),
        ({"format_version": fxcache.FORMAT_VERSION - 1}, r"format version 0, this foxhunt reads version 1"),
        ({"rows": 499}, r"500 rows, metadata says 499"),
        ({"rows": "500"}, r"metadata's rows '500' is a str"),
        ({"checksum_algorithm": "md5"}, r"unknown checksum algorithm 'md5'"),
    ],
)
def test_metadata_this_reader_cannot_take_is_refused_naming_the_file(tmp_path, metadata, match):
    path = tmp_path / "cache.arrow"
    rewrite_with(path, make_table(), **metadata)
    with pytest.raises(fxcache.FxCacheError, match=r"cache\.arrow: " + match):
        fxcache.read_fxcache(str(path))


@pytest.mark.parametrize(
    ("key", "names", "position"), [("feature_names", FEATURE_NAMES, 5), ("target_names", TARGET_NAMES, 2)]
)
def test_other_feature_or_target_names_are_refused_naming_the_position(tmp_path, key, names, position):
    path = tmp_path / "cache.arrow"
    renamed = list(names)
    renamed[position] = "something_else"
    rewrite_with(path, make_table(), **{key: renamed})
    with pytest.raises(fxcache.FxCacheError, match=rf"cache\.arrow: {key} differ .*position {position}"):
        fxcache.read_fxcache(str(path))


def test_a_wrong_list_size_is_refused(tmp_path):
    path = tmp_path / "cache.arrow"
    table = make_table()
    rewrite_with(path, table, features=np.ascontiguousarray(table.features[:, :41]))
    with pytest.raises(fxcache.FxCacheError, match=r"cache\.arrow: column 'features' has type"):
        fxcache.read_fxcache(str(path))


def assert_cell_refused(tmp_path, column: str, cell: tuple[int, int], value: float, match: str) -> None:
    """An fxcache rewritten (checksum matching) with one cell of `column` set to `value` is refused."""
    path = tmp_path / "cache.arrow"
    table = make_table()
    values = getattr(table, column).copy()
    values[cell] = value
    rewrite_with(path, table, **{column: values})
    with pytest.raises(fxcache.FxCacheError, match=match):
        fxcache.read_fxcache(str(path))


def test_nan_with_a_matching_checksum_is_caught_by_the_finiteness_check(tmp_path):
    match = r"cache\.arrow: features has a NaN or infinite value at row 321"
    assert_cell_refused(tmp_path, "features", (321, 9), np.nan, match)


def test_non_increasing_timestamps_are_refused(tmp_path):
    path = tmp_path / "cache.arrow"
    table = make_table()
    timestamp = table.timestamp.copy()
    timestamp[42] = timestamp[41]
    rewrite_with(path, table, timestamp=timestamp)
    with pytest.raises(
        fxcache.FxCacheError, match=r"cache\.arrow: timestamps not strictly increasing at row 42"
    ):
        fxcache.read_fxcache(str(path))


def test_a_feature_column_of_doubles_is_refused_naming_its_type(tmp_path):
    path = tmp_path / "cache.arrow"
    table = make_table()
    rewrite_with(path, table, features=table.features.astype(np.float64))
    with pytest.raises(fxcache.FxCacheError, match=r"cache\.arrow: column 'features' has type .*double"):
        fxcache.read_fxcache(str(path))


def test_a_file_of_two_record_batches_is_refused(tmp_path):
    path = tmp_path / "cache.arrow"
    write_good(path)
    reader = pa.ipc.open_file(pa.BufferReader(path.read_bytes()))
    batch = reader.get_batch(0)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, reader.schema) as writer:
        writer.write_batch(batch)
        writer.write_batch(batch)
    with pytest.raises(fxcache.FxCacheError, match=r"cache\.arrow: 2 record batches, expected exactly 1"):
        fxcache.read_fxcache(str(path))


def test_a_nan_target_is_refused_naming_its_row(tmp_path):
    match = r"cache\.arrow: targets has a NaN or infinite value at row 123"
    assert_cell_refused(tmp_path, "targets", (123, 1), np.nan, match)


def test_a_target_past_the_magnitude_bound_is_refused_naming_its_column_and_row(tmp_path):
    match = rf"cache\.arrow: column {TARGET_NAMES[2]} holds 1e\+30 at row 77"
    assert_cell_refused(tmp_path, "targets", (77, 2), 1e30, match)


def test_the_writer_refuses_targets_of_the_wrong_width_naming_the_file(tmp_path):
    table = make_table()
    narrow = dataclasses.replace(table, targets=np.ascontiguousarray(table.targets[:, :3]))
    with pytest.raises(
        fxcache.FxCacheError, match=r"cache\.arrow: expected .* targets \[500, 4\], got .* \[500, 3\]"
    ):
        write_good(tmp_path / "cache.arrow", narrow)
    assert not (tmp_path / "cache.arrow").exists()


def test_matches_returns_the_metadata_for_the_same_bars(tmp_path):
    path = tmp_path / "cache.arrow"
    written = write_good(path, source_hash="abc")
    assert fxcache.fxcache_matches(str(path), "abc") == written


def test_matches_is_none_for_other_bars(tmp_path):
    path = tmp_path / "cache.arrow"
    write_good(path, source_hash="abc")
    assert fxcache.fxcache_matches(str(path), "def") is None


def test_matches_is_none_for_another_format_version(tmp_path):
    path = tmp_path / "cache.arrow"
    rewrite_with(path, make_table(), format_version=fxcache.FORMAT_VERSION + 1)
    assert fxcache.fxcache_matches(str(path), "bars-hash") is None


def test_matches_is_none_when_nothing_is_there(tmp_path):
    assert fxcache.fxcache_matches(str(tmp_path / "absent.arrow"), "abc") is None


def test_matches_on_s3_uses_the_object_metadata_without_downloading(seaweed_s3, s3_get_requests):
    uri = seaweed_s3.uri("cache.arrow")
    written = write_good(uri, source_hash="abc")
    found = fxcache.fxcache_matches(uri, "abc")
    assert found is not None and (found["checksum"], found["rows"]) == (written["checksum"], written["rows"])
    assert fxcache.fxcache_matches(uri, "def") is None
    assert fxcache.fxcache_matches(seaweed_s3.uri("absent.arrow"), "abc") is None
    assert s3_get_requests == []


@pytest.mark.parametrize(
    ("value", "found"),
    [(1e6, None), (-1e6, None), (1.5e6, (700, 3)), (-2e6, (700, 3)), (1e30, (700, 3))],
)
def test_a_value_past_the_magnitude_bound_is_found_at_its_row_and_column(value, found):
    from foxhunt.data.fxcache import MAX_ABS_VALUE, _first_too_large

    values = np.zeros((1000, 5), dtype=np.float32)
    values[700, 3] = value
    values[900, 1] = value

    assert _first_too_large(values, MAX_ABS_VALUE) == found
