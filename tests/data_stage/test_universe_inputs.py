"""A universe's fxcaches are refused before any work when they cannot be trained together, naming the file."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest
from support.fxcache_cases import make_table, rewrite_with, write_good

from foxhunt.data.fxcache import FxCacheError
from foxhunt.data.universe_inputs import (
    CacheFacts,
    check_overlap,
    check_universe,
    instrument_name,
    read_universe,
)
from foxhunt.errors import BadInput

DAY = 86_400 * 10**9


@pytest.fixture(autouse=True)
def private_cache_dir(monkeypatch, tmp_path):
    """Keep any copy a read makes out of the user's cache."""
    monkeypatch.setenv("FOXHUNT_CACHE_DIR", str(tmp_path / "foxhunt-cache"))


def shifted(table, days: float):
    """The same table moved `days` later."""
    return dataclasses.replace(table, timestamp=table.timestamp + int(days * DAY))


def refusal(excinfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message  # one line
    return message


def test_distinct_instruments_are_read_in_order(tmp_path):
    write_good(tmp_path / "eurusd.fxcache", make_table(seed=1), source_hash="e")
    write_good(tmp_path / "yndx.fxcache", make_table(seed=2), source_hash="y")
    caches = read_universe([str(tmp_path / "eurusd.fxcache"), str(tmp_path / "yndx.fxcache")])
    assert [c.uri.rsplit("/", 1)[1] for c in caches] == ["eurusd.fxcache", "yndx.fxcache"]


def test_two_files_named_for_one_instrument_are_refused(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    write_good(tmp_path / "a" / "eurusd.fxcache", make_table(seed=1), source_hash="1")
    write_good(tmp_path / "b" / "eurusd.fxcache", make_table(seed=2), source_hash="2")
    with pytest.raises(BadInput) as excinfo:
        read_universe([str(tmp_path / "a" / "eurusd.fxcache"), str(tmp_path / "b" / "eurusd.fxcache")])
    assert refusal(excinfo).startswith(f"{tmp_path / 'b' / 'eurusd.fxcache'}: duplicate instrument")
    assert refusal(excinfo).endswith("rename one of the files")


def test_one_file_under_two_names_is_refused(tmp_path):
    write_good(tmp_path / "eurusd.fxcache", make_table(seed=1))
    shutil.copy(tmp_path / "eurusd.fxcache", tmp_path / "copy.fxcache")
    with pytest.raises(BadInput) as excinfo:
        read_universe([str(tmp_path / "eurusd.fxcache"), str(tmp_path / "copy.fxcache")])
    assert refusal(excinfo).startswith(f"{tmp_path / 'copy.fxcache'}: duplicate instrument: the same content")


def test_two_caches_of_the_same_bars_are_refused(tmp_path):
    write_good(tmp_path / "one.fxcache", make_table(seed=1), source_hash="same-bars")
    write_good(tmp_path / "two.fxcache", make_table(seed=2), source_hash="same-bars")
    with pytest.raises(BadInput) as excinfo:
        read_universe([str(tmp_path / "one.fxcache"), str(tmp_path / "two.fxcache")])
    assert "two.fxcache: duplicate instrument: built from the same bars as" in refusal(excinfo)


def test_a_cache_built_by_another_foxhunt_is_refused(tmp_path):
    write_good(tmp_path / "eurusd.fxcache", make_table(seed=1), source_hash="e")
    rewrite_with(tmp_path / "yndx.fxcache", make_table(seed=2), foxhunt_version="0.0.1", source_hash="y")
    with pytest.raises(BadInput) as excinfo:
        read_universe([str(tmp_path / "eurusd.fxcache"), str(tmp_path / "yndx.fxcache")])
    assert refusal(excinfo).startswith(f"{tmp_path / 'yndx.fxcache'}: foxhunt_version differs")
    assert "'0.0.1' where it has" in str(excinfo.value)


def facts(name: str, first_day: float, last_day: float, **metadata) -> CacheFacts:
    base = {
        "format_version": 1,
        "feature_names": ["a", "b"],
        "target_names": ["r1"],
        "foxhunt_version": "1.0",
        "checksum": name,
        "source_hash": name,
    }
    return CacheFacts(
        f"s3://b/{name}.fxcache", name, base | metadata, int(first_day * DAY), int(last_day * DAY)
    )


def test_other_feature_names_are_refused_naming_the_first_difference():
    with pytest.raises(BadInput) as excinfo:
        check_universe([facts("x", 0, 10), facts("y", 0, 10, feature_names=["a", "c"])])
    assert refusal(excinfo).startswith("s3://b/y.fxcache: feature_names differs from s3://b/x.fxcache's")
    assert "'c' at position 1 where it has 'b'" in str(excinfo.value)


def test_an_instrument_sharing_no_time_with_any_other_is_refused():
    check_universe([facts("x", 0, 10), facts("y", 5, 20), facts("z", 15, 30)])  # a chain overlaps
    with pytest.raises(BadInput) as excinfo:
        check_universe([facts("x", 0, 10), facts("y", 5, 12), facts("z", 13, 30)])
    assert refusal(excinfo).startswith("s3://b/z.fxcache: no time in common with any other instrument")


def test_the_refusal_gives_the_lone_instruments_span_and_the_others():
    with pytest.raises(BadInput) as excinfo:
        check_overlap([("a.csv", 0, DAY), ("b.csv", 3 * DAY, 5 * DAY), ("c.csv", 4 * DAY, 9 * DAY)])
    assert refusal(excinfo) == (
        "a.csv: no time in common with any other instrument (it spans 1970-01-01T00:00:00Z to "
        "1970-01-02T00:00:00Z; the others 1970-01-04T00:00:00Z to 1970-01-10T00:00:00Z)"
    )


def test_a_cache_without_bars_is_refused():
    with pytest.raises(BadInput, match=r"^s3://b/y.fxcache: holds no bars$"):
        check_universe(
            [facts("x", 0, 10), dataclasses.replace(facts("y", 0, 1), first_ns=None, last_ns=None)]
        )


def test_a_missing_cache_is_named(tmp_path):
    write_good(tmp_path / "eurusd.fxcache", make_table(seed=1))
    with pytest.raises(FileNotFoundError, match="yndx.fxcache: no such file"):
        read_universe([str(tmp_path / "eurusd.fxcache"), str(tmp_path / "yndx.fxcache")])


def test_a_corrupt_cache_is_named(tmp_path):
    write_good(tmp_path / "eurusd.fxcache", make_table(seed=1), source_hash="e")
    write_good(tmp_path / "yndx.fxcache", make_table(seed=2), source_hash="y")
    data = (tmp_path / "yndx.fxcache").read_bytes()
    (tmp_path / "yndx.fxcache").write_bytes(data[: len(data) // 2])
    with pytest.raises(FxCacheError, match=r"yndx.fxcache: "):
        read_universe([str(tmp_path / "eurusd.fxcache"), str(tmp_path / "yndx.fxcache")])


def test_instrument_names_come_from_the_file_or_for_the_pipelines_file_from_the_bars():
    assert instrument_name("s3://b/EURUSD.fxcache", {}) == "EURUSD"
    assert instrument_name("/out/features.fxcache", {"source_uri": "s3://raw/YNDX.parquet"}) == "YNDX"
    assert instrument_name("/out/features.fxcache", {"source_uri": "sample://n=9,seed=7"}) == "sample-seed7"


def test_caches_overlapping_in_time_pass(tmp_path):
    table = make_table(seed=1)
    write_good(tmp_path / "a.fxcache", table, source_hash="a")
    write_good(tmp_path / "b.fxcache", shifted(make_table(seed=2), 0.1), source_hash="b")
    caches = read_universe([str(tmp_path / "a.fxcache"), str(tmp_path / "b.fxcache")], names=["A", "B"])
    assert len(caches) == 2 and np.all(np.diff(caches[1].timestamp) > 0)


def test_an_empty_universe_is_refused():
    with pytest.raises(BadInput, match=r"^a universe needs at least one fxcache$"):
        check_universe([])


def test_two_instruments_sharing_no_time_are_refused():
    with pytest.raises(BadInput) as excinfo:
        check_universe([facts("x", 0, 10), facts("y", 11, 20)])
    assert refusal(excinfo).startswith("s3://b/x.fxcache: no time in common with any other instrument")


def test_instruments_sharing_only_the_time_of_one_bar_pass():
    assert check_universe([facts("x", 0, 10), facts("y", 10, 20)]) is None


def test_more_instrument_names_than_fxcaches_are_refused_before_any_file_is_read(tmp_path):
    uris = [str(tmp_path / "absent-a.fxcache"), str(tmp_path / "absent-b.fxcache")]
    with pytest.raises(BadInput, match=r"^3 instrument names for 2 fxcaches$"):
        read_universe(uris, names=["A", "B", "C"])


def test_an_instrument_read_from_several_bars_files_is_named_for_the_first():
    source = "s3://raw/YNDX-2023.parquet,s3://raw/YNDX-2024.parquet"
    assert instrument_name("/out/features.fxcache", {"source_uri": source}) == "YNDX-2023"


def test_groups_that_share_no_time_with_each_other_are_refused_naming_each_group():
    spans = [
        ("a.csv", 0, 2 * DAY),
        ("c.csv", 5 * DAY, 8 * DAY),
        ("b.csv", DAY, 3 * DAY),
        ("d.csv", 6 * DAY, 9 * DAY),
    ]
    with pytest.raises(BadInput) as excinfo:
        check_overlap(spans)
    assert refusal(excinfo) == (
        "c.csv: the instruments fall into 2 groups that share no time with each other ({a.csv, b.csv} from "
        "1970-01-01T00:00:00Z to 1970-01-04T00:00:00Z; {c.csv, d.csv} from 1970-01-06T00:00:00Z to "
        "1970-01-10T00:00:00Z); a fold must hold instruments that trade together, so run each group on its own"
    )


def test_a_group_joined_by_a_long_instrument_that_overlaps_both_ends_passes():
    check_overlap(
        [
            ("a.csv", 0, DAY),
            ("long.csv", 0, 9 * DAY),
            ("c.csv", 5 * DAY, 6 * DAY),
            ("d.csv", 8 * DAY, 9 * DAY),
        ]
    )


def test_groups_touching_at_one_bar_are_one_group():
    check_overlap(
        [("a.csv", 0, DAY), ("b.csv", 0, 2 * DAY), ("c.csv", 2 * DAY, 4 * DAY), ("d.csv", 3 * DAY, 5 * DAY)]
    )
