"""Bars: reading CSV and Parquet, time zones, several files, and every rule of the contract."""

import gzip
import hashlib
import os
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.data_files import EURUSD, EURUSD_ROWS, YNDX, YNDX_ROWS

from foxhunt.cli import main
from foxhunt.data.bars import BarsError, generate_sample_bars, iso_utc, read_bars, write_bars
from foxhunt.errors import BadInput, UsageError

HEADER = "timestamp,open,high,low,close,volume\n"
GOOD_ROWS = [
    "2024-01-02T00:00:00,1.0,1.2,0.9,1.1,10",
    "2024-01-02T00:01:00,1.1,1.3,1.0,1.2,0",
    "2024-01-02T00:02:00,1.2,1.2,1.2,1.2,5",
]


def write_csv(path: Path, rows: list[str], header: str = HEADER) -> Path:
    path.write_text(header + "\n".join(rows) + "\n")
    return path


def test_csv_with_naive_timestamps_reads_as_utc(tmp_path):
    bars = read_bars([str(write_csv(tmp_path / "b.csv", GOOD_ROWS))])
    assert len(bars) == 3
    assert bars.timestamp[0] == np.datetime64("2024-01-02T00:00:00", "ns").astype(np.int64)
    np.testing.assert_array_equal(bars.close, [1.1, 1.2, 1.2])


def test_tz_option_converts_naive_local_times_to_utc(tmp_path):
    bars = read_bars([str(write_csv(tmp_path / "b.csv", GOOD_ROWS))], tz="America/New_York")
    assert bars.timestamp[0] == np.datetime64("2024-01-02T05:00:00", "ns").astype(np.int64)


def test_tz_aware_parquet_is_converted_to_utc(tmp_path):
    stamps = pa.array([np.datetime64("2024-01-02T00:00:00", "ns").astype(np.int64)]).cast(
        pa.timestamp("ns", tz="Europe/Moscow")
    )
    table = pa.table(
        {"timestamp": stamps, "open": [1.0], "high": [1.0], "low": [1.0], "close": [1.0], "volume": [0.0]}
    )
    pq.write_table(table, tmp_path / "b.parquet")
    bars = read_bars([str(tmp_path / "b.parquet")])
    assert bars.timestamp[0] == np.datetime64("2024-01-02T00:00:00", "ns").astype(np.int64)


def test_real_files_read_in_full():
    eurusd = read_bars([str(EURUSD)])
    assert len(eurusd) == EURUSD_ROWS and not eurusd.volume.any()
    assert (iso_utc(eurusd.timestamp[0]), iso_utc(eurusd.timestamp[-1])) == (
        "2018-01-01T22:00:00Z",
        "2018-04-29T23:59:00Z",
    )
    yndx = read_bars([str(YNDX)])
    assert len(yndx) == YNDX_ROWS and yndx.volume.any()


def test_several_files_are_concatenated_in_time_order(tmp_path):
    bars = generate_sample_bars(3000, seed=2)
    first, second = tmp_path / "a.parquet", tmp_path / "b.csv"
    write_bars(_slice(bars, 0, 1000), first)
    write_bars(_slice(bars, 1000, 3000), second)
    joined = read_bars([str(second), str(first)])  # given out of order
    np.testing.assert_array_equal(joined.timestamp, bars.timestamp)
    np.testing.assert_allclose(joined.close, bars.close, rtol=1e-15)
    assert joined.source == f"{first},{second}"


def test_overlapping_files_are_an_error_naming_both(tmp_path):
    bars = generate_sample_bars(2000, seed=2)
    write_bars(_slice(bars, 0, 1200), tmp_path / "a.parquet")
    write_bars(_slice(bars, 1000, 2000), tmp_path / "b.parquet")
    with pytest.raises(BarsError, match=r"b\.parquet: row 0 .*overlaps .*a\.parquet"):
        read_bars([str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")])


def test_the_content_hash_of_one_bars_file_is_the_sha256_of_its_bytes(tmp_path):
    path = write_csv(tmp_path / "b.csv", GOOD_ROWS)
    assert read_bars([str(path)]).content_hash == hashlib.sha256(path.read_bytes()).hexdigest()


def _slice(bars, lo, hi):
    from dataclasses import replace

    return replace(
        bars, **{c: getattr(bars, c)[lo:hi] for c in ("timestamp", "open", "high", "low", "close", "volume")}
    )


BAD = {
    "unsorted": (
        GOOD_ROWS[:1] + ["2023-12-31T23:59:00,1.0,1.2,0.9,1.1,10"],
        "row 1 (2023-12-31T23:59:00",
        "not sorted",
    ),
    "duplicate": (
        GOOD_ROWS[:2] + ["2024-01-02T00:01:00,1.0,1.2,0.9,1.1,10"],
        "row 2 (2024-01-02T00:01:00",
        "duplicate timestamp",
    ),
    "high_below_low": (GOOD_ROWS[:1] + ["2024-01-02T00:01:00,1.0,0.8,0.9,0.85,10"], "row 1", "high < low"),
    "negative_price": (
        GOOD_ROWS[:2] + ["2024-01-02T00:02:00,-1.0,1.2,-1.0,1.1,10"],
        "row 2",
        "open must be positive",
    ),
    "nan": (GOOD_ROWS[:1] + ["2024-01-02T00:01:00,1.0,1.2,0.9,nan,10"], "row 1", "close is NaN"),
    "negative_volume": (
        GOOD_ROWS[:1] + ["2024-01-02T00:01:00,1.0,1.2,0.9,1.1,-3"],
        "row 1",
        "volume must be non-negative",
    ),
    "close_above_high": (
        GOOD_ROWS[:1] + ["2024-01-02T00:01:00,1.0,1.2,0.9,1.3,1"],
        "row 1",
        "high < max(open, close)",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_broken_rule_names_the_file_the_row_and_the_rule(case, tmp_path):
    rows, where, rule = BAD[case]
    path = write_csv(tmp_path / f"{case}.csv", rows)
    with pytest.raises(BarsError) as error:
        read_bars([str(path)])
    message = str(error.value)
    assert message.startswith(str(path)) and where in message and rule in message


def refused(path: Path) -> str:
    with pytest.raises(BarsError) as error:
        read_bars([str(path)])
    return str(error.value)


def test_a_bar_whose_high_is_infinite_is_refused_naming_the_file_and_the_row(tmp_path):
    path = write_csv(tmp_path / "inf.csv", GOOD_ROWS[:1] + ["2024-01-02T00:01:00,1.0,inf,0.9,1.1,10"])
    assert refused(path) == f"{path}: row 1 (2024-01-02T00:01:00Z): high is NaN or infinite"


def test_a_bar_whose_volume_is_missing_is_refused_naming_the_file_and_the_row(tmp_path):
    path = write_csv(tmp_path / "vol.csv", GOOD_ROWS[:1] + ["2024-01-02T00:01:00,1.0,1.2,0.9,1.1,nan"])
    assert refused(path) == f"{path}: row 1 (2024-01-02T00:01:00Z): volume is NaN or infinite"


def test_a_bar_whose_low_is_zero_is_refused_as_not_positive(tmp_path):
    path = write_csv(tmp_path / "zero.csv", GOOD_ROWS[:1] + ["2024-01-02T00:01:00,1.0,1.2,0.0,1.1,10"])
    assert refused(path) == f"{path}: row 1 (2024-01-02T00:01:00Z): low must be positive"


def test_missing_column_is_named(tmp_path):
    path = write_csv(
        tmp_path / "m.csv", ["2024-01-02T00:00:00,1,1,1,1"], header="timestamp,open,high,low,close\n"
    )
    with pytest.raises(BarsError, match=r"m\.csv: missing column\(s\) volume"):
        read_bars([str(path)])


@pytest.mark.parametrize("content", ["", HEADER])
def test_empty_file_is_an_error(content, tmp_path):
    path = tmp_path / "e.csv"
    path.write_text(content)
    with pytest.raises(BarsError, match=r"e\.csv: empty file"):
        read_bars([str(path)])


def test_unknown_format_is_an_error(tmp_path):
    path = tmp_path / "bars.xlsx"
    path.write_bytes(b"not bars")
    with pytest.raises(BarsError, match="unknown format"):
        read_bars([str(path)])


@pytest.mark.parametrize("case", sorted(BAD))
def test_precompute_of_bad_bars_leaves_no_output(case, tmp_path, capsys):
    rows, _, rule = BAD[case]
    out = tmp_path / "out" / "x.fxcache"
    assert main(["precompute", "--bars", str(write_csv(tmp_path / "bad.csv", rows)), "--out", str(out)]) == 2
    assert rule in capsys.readouterr().err
    assert not out.parent.exists() or not any(out.parent.iterdir())


def test_sample_bars_are_deterministic_and_valid():
    a, b = generate_sample_bars(5000, seed=3), generate_sample_bars(5000, seed=3)
    np.testing.assert_array_equal(a.close, b.close)
    assert a.content_hash == b.content_hash != generate_sample_bars(5000, seed=4).content_hash
    assert np.all(a.high >= np.maximum(a.open, a.close)) and np.all(a.low <= np.minimum(a.open, a.close))
    weekday = (a.timestamp // 86_400_000_000_000 + 3) % 7
    assert weekday.max() < 5  # weekdays only, like spot FX


def test_precompute_from_s3_to_s3_then_an_fxcache_hit(seaweed_s3, tmp_path, capsys):
    from foxhunt import storage

    bars_file = tmp_path / "bars.parquet"
    write_bars(generate_sample_bars(4000, seed=5), bars_file)
    bars_uri, out_uri = seaweed_s3.uri("bars.parquet"), seaweed_s3.uri("bars.fxcache")
    storage.upload_file(bars_file, bars_uri)
    assert main(["precompute", "--bars", bars_uri, "--out", out_uri]) == 0
    assert "3,700 rows out" in capsys.readouterr().out
    assert main(["precompute", "--bars", bars_uri, "--out", out_uri]) == 0
    assert "fxcache hit" in capsys.readouterr().out


# ---- timestamps: integer units, time zones, DST ---------------------------------------------------
JAN2_S = 1_704_153_600  # 2024-01-02T00:00:00Z in epoch seconds
INT_ROWS = [",1.0,1.2,0.9,1.1,10", ",1.1,1.3,1.0,1.2,0", ",1.2,1.2,1.2,1.2,5"]


def write_int_csv(path: Path, first: int, step: int) -> Path:
    return write_csv(path, [f"{first + i * step}{row}" for i, row in enumerate(INT_ROWS)])


def test_integer_timestamps_without_a_unit_are_refused_naming_the_column_and_the_units(tmp_path):
    path = write_int_csv(tmp_path / "epoch.csv", JAN2_S, 60)
    with pytest.raises(BarsError, match=r"epoch\.csv: column 'timestamp' holds integers .*s\|ms\|us\|ns"):
        read_bars([str(path)])


@pytest.mark.parametrize(("unit", "per_second"), [("s", 1), ("ms", 10**3), ("us", 10**6), ("ns", 10**9)])
def test_integer_timestamps_are_read_in_the_declared_unit(unit, per_second, tmp_path):
    path = write_int_csv(tmp_path / "epoch.csv", JAN2_S * per_second, 60 * per_second)
    bars = read_bars([str(path)], timestamp_unit=unit)
    expected = np.array(["2024-01-02T00:00", "2024-01-02T00:01", "2024-01-02T00:02"], dtype="datetime64[ns]")
    np.testing.assert_array_equal(bars.timestamp, expected.astype(np.int64))


def test_integer_timestamps_in_parquet_need_a_unit_too(tmp_path):
    table = pa.table(
        {
            "timestamp": pa.array([JAN2_S * 1000], pa.int64()),
            "open": [1.0],
            "high": [1.0],
            "low": [1.0],
            "close": [1.0],
            "volume": [0.0],
        }
    )
    pq.write_table(table, tmp_path / "ms.parquet")
    with pytest.raises(BarsError, match="holds integers"):
        read_bars([str(tmp_path / "ms.parquet")])
    assert (
        iso_utc(read_bars([str(tmp_path / "ms.parquet")], timestamp_unit="ms").timestamp[0])
        == "2024-01-02T00:00:00Z"
    )


def test_a_unit_that_puts_the_bars_in_1970_is_refused(tmp_path):
    path = write_int_csv(tmp_path / "epoch.csv", JAN2_S, 60)  # seconds, declared as nanoseconds
    with pytest.raises(
        BarsError, match=r"read in unit 'ns' starts at 1970-01-01T00:00:01Z; is the timestamp unit"
    ):
        read_bars([str(path)], timestamp_unit="ns")


def test_microseconds_declared_as_nanoseconds_are_refused_as_bars_from_1970(tmp_path):
    path = write_int_csv(tmp_path / "epoch.csv", JAN2_S * 10**6, 60 * 10**6)  # 19.7 days after the epoch
    with pytest.raises(BarsError, match=r"epoch\.csv: .* unit 'ns' starts at 1970-01-20T17:22:33Z"):
        read_bars([str(path)], timestamp_unit="ns")


def test_integers_too_large_for_the_unit_are_refused(tmp_path):
    path = write_int_csv(
        tmp_path / "epoch.csv", JAN2_S * 10**9, 60 * 10**9
    )  # nanoseconds, declared as seconds
    with pytest.raises(BarsError, match="integers too large for unit 's'"):
        read_bars([str(path)], timestamp_unit="s")


def test_an_unknown_timestamp_unit_or_time_zone_is_a_usage_error(tmp_path):
    path = str(write_csv(tmp_path / "b.csv", GOOD_ROWS))
    with pytest.raises(UsageError, match="timestamp unit 'min': expected one of s, ms, us, ns"):
        read_bars([path], timestamp_unit="min")
    with pytest.raises(UsageError, match="time zone 'Mars/Olympus' is unknown"):
        read_bars([path], tz="Mars/Olympus")


def test_naive_times_that_repeat_in_a_dst_fold_are_explained(tmp_path):
    # New York, 2024-11-03: at 02:00 summer time the clocks go back to 01:00, so 01:00-01:59 happen twice.
    rows = ["2024-11-03T01:58:00,1,1,1,1,1", "2024-11-03T01:59:00,1,1,1,1,1", "2024-11-03T01:00:00,1,1,1,1,1"]
    path = write_csv(tmp_path / "ny.csv", rows)
    with pytest.raises(BarsError) as error:
        read_bars([str(path)], tz="America/New_York")
    message = str(error.value)
    assert "row 2" in message and "not sorted" in message
    assert "2024-11-03T01:00:00 occurs twice in America/New_York (clocks go back" in message
    assert "\n" not in message


def test_naive_times_inside_a_dst_gap_are_explained(tmp_path):
    # New York, 2024-03-10: the clocks jump from 02:00 to 03:00, so 02:00-02:59 never happen there.
    rows = ["2024-03-10T01:59:00,1,1,1,1,1", "2024-03-10T02:00:00,1,1,1,1,1", "2024-03-10T02:01:00,1,1,1,1,1"]
    path = write_csv(tmp_path / "ny.csv", rows)
    with pytest.raises(BarsError, match="2024-03-10T02:01:00 does not exist in America/New_York"):
        read_bars([str(path)], tz="America/New_York")


def test_unsorted_utc_times_are_not_blamed_on_dst(tmp_path):
    rows = ["2024-11-03T01:58:00,1,1,1,1,1", "2024-11-03T01:00:00,1,1,1,1,1"]
    with pytest.raises(BarsError) as error:
        read_bars([str(write_csv(tmp_path / "utc.csv", rows))])
    assert "not sorted" in str(error.value) and "summer time" not in str(error.value)


# ---- file kinds -------------------------------------------------------------------------------------
def test_a_gzipped_csv_is_read_like_the_plain_one(tmp_path):
    plain = write_csv(tmp_path / "b.csv", GOOD_ROWS)
    packed = tmp_path / "b.csv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    np.testing.assert_array_equal(read_bars([str(packed)]).close, read_bars([str(plain)]).close)


def test_a_gzipped_csv_named_plain_csv_is_read_like_the_plain_one(tmp_path):
    plain = write_csv(tmp_path / "b.csv", GOOD_ROWS)
    packed = tmp_path / "packed.csv"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    np.testing.assert_array_equal(read_bars([str(packed)]).close, read_bars([str(plain)]).close)


def test_a_corrupt_gzip_is_refused_naming_the_file(tmp_path):
    packed = tmp_path / "b.csv.gz"
    packed.write_bytes(gzip.compress((HEADER + "\n".join(GOOD_ROWS)).encode())[:40])
    with pytest.raises(BarsError, match=r"b\.csv\.gz: cannot parse"):
        read_bars([str(packed)])


def test_a_fifo_given_as_bars_is_refused_at_once(tmp_path):
    fifo = tmp_path / "bars.csv"
    os.mkfifo(fifo)
    errors = []

    def read() -> None:
        try:
            read_bars([str(fifo)])
        except BadInput as exc:
            errors.append(str(exc))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=5)  # reading would wait forever for a writer
    assert errors == [f"{fifo}: is a FIFO, not a regular file"]


def test_a_cached_s3_bars_file_cut_at_a_line_boundary_is_not_trusted(moto_s3, tmp_path, monkeypatch):
    from foxhunt import storage

    monkeypatch.setenv("FOXHUNT_CACHE_DIR", str(tmp_path / "cache"))
    content = (HEADER + "\n".join(GOOD_ROWS) + "\n").encode()
    uri = moto_s3.uri("bars.csv")
    storage.write_bytes(uri, content)
    assert len(read_bars([uri])) == 3
    (cached,) = (tmp_path / "cache" / "objects").glob("*.csv")
    cached.write_bytes(content[: content.rindex(b"2024-01-02T00:02")])  # two whole rows: still a valid CSV
    assert len(read_bars([uri])) == 3
