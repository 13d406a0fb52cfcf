"""A table of bad inputs: each ends the command with its own one-line message and exit code, no traceback,
and leaves no output behind.

Rows are grouped by category (bars files, fxcache files, storage URIs here); other categories (CLI
arguments, config and hyperparameter files, workflow parameters) are appended as more `Case` rows.
A row's `argv` builds what it needs under the test's folder and returns the command line.
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from support.fxcache_cases import make_table, rewrite_with, write_good

from foxhunt import storage
from foxhunt.cli import main
from foxhunt.data.bars import generate_sample_bars, write_bars

HEADER = "timestamp,open,high,low,close,volume\n"
ROW0 = "2024-01-02T00:00:00,1.0,1.2,0.9,1.1,10"
ROW1 = "2024-01-02T00:01:00,1.1,1.3,1.0,1.2,5"
NO_VOLUME = "timestamp,open,high,low,close\n"
SEMICOLONS = "timestamp;open;high;low;close;volume\n"
# New York, 2024-11-03: 01:00-01:59 happen twice (summer time ends at 02:00).
FOLD_ROWS = ("2024-11-03T01:59:00,1,1,1,1,1", "2024-11-03T01:00:00,1,1,1,1,1")


@dataclass
class Ctx:
    """What a row may use: the test's folder, and an S3 server when the row asks for one."""

    tmp: Path
    s3: object = None

    def file(self, name: str, content: str | bytes) -> str:
        path = self.tmp / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return str(path)

    def out(self) -> str:
        return str(self.tmp / "out" / "x.fxcache")


@dataclass(frozen=True)
class Case:
    """One bad input: the command that meets it, and the exit code and message it must end with."""

    category: str
    name: str
    argv: Callable[[Ctx], list[str]]
    code: int
    message: str  # a regex the single stderr line must match
    needs_s3: bool = False
    env: dict[str, str | None] = field(default_factory=dict)  # None unsets the variable


def precompute(bars: Callable[[Ctx], str | list[str]], *extra: str) -> Callable[[Ctx], list[str]]:
    def build(ctx: Ctx) -> list[str]:
        given = bars(ctx)
        return [
            "precompute",
            "--bars",
            *([given] if isinstance(given, str) else given),
            "--out",
            ctx.out(),
            *extra,
        ]

    return build


def csv(name: str, *rows: str, header: str = HEADER) -> Callable[[Ctx], str]:
    return lambda ctx: ctx.file(name, header + "\n".join(rows) + ("\n" if rows else ""))


def gz(name: str, text: str, keep: int | None = None) -> Callable[[Ctx], str]:
    """A gzipped file, cut to its first `keep` bytes when given."""
    return lambda ctx: ctx.file(name, gzip.compress(text.encode())[:keep])


def fifo(name: str) -> Callable[[Ctx], str]:
    def build(ctx: Ctx) -> str:
        os.mkfifo(ctx.tmp / name)
        return str(ctx.tmp / name)

    return build


def nan_parquet(ctx: Ctx) -> str:
    bars = generate_sample_bars(50, seed=1)
    bars.open[7] = np.nan
    write_bars(bars, ctx.tmp / "nan.parquet")
    return str(ctx.tmp / "nan.parquet")


def overlapping(ctx: Ctx) -> list[str]:
    return [csv("a.csv", ROW0, ROW1)(ctx), csv("b.csv", ROW1.replace("1.1,1.3", "1.2,1.3"))(ctx)]


# fmt: off
BARS = [
    Case("bars", "unsorted", precompute(csv("u.csv", ROW1, ROW0)), 2, r"u\.csv: row 1 .*timestamps not sorted"),
    Case("bars", "duplicate", precompute(csv("d.csv", ROW0, ROW0)), 2, r"d\.csv: row 1 .*duplicate timestamp"),
    Case("bars", "high_below_low", precompute(csv("h.csv", "2024-01-02T00:00:00,1,0.8,0.9,0.85,1")),
         2, r"h\.csv: row 0 .*high < low"),
    Case("bars", "negative_price", precompute(csv("n.csv", "2024-01-02T00:00:00,-1,1.2,-1,1.1,1")),
         2, r"n\.csv: row 0 .*open must be positive"),
    Case("bars", "nan_close", precompute(csv("c.csv", "2024-01-02T00:00:00,1,1.2,0.9,nan,1")),
         2, r"c\.csv: row 0 .*close is NaN or infinite"),
    Case("bars", "negative_volume", precompute(csv("v.csv", "2024-01-02T00:00:00,1,1.2,0.9,1.1,-3")),
         2, r"v\.csv: row 0 .*volume must be non-negative"),
    Case("bars", "close_above_high", precompute(csv("ca.csv", "2024-01-02T00:00:00,1,1.2,0.9,1.3,1")),
         2, r"ca\.csv: row 0 .*high < max\(open, close\)"),
    Case("bars", "low_above_open", precompute(csv("lo.csv", "2024-01-02T00:00:00,1,1.2,1.05,1.1,1")),
         2, r"lo\.csv: row 0 .*low > min\(open, close\)"),
    Case("bars", "missing_column", precompute(csv("m.csv", "2024-01-02T00:00:00,1,1,1,1", header=NO_VOLUME)),
         2, r"m\.csv: missing column\(s\) volume; found timestamp, open"),
    Case("bars", "semicolons", precompute(csv("semi.csv", "2024-01-02T00:00:00;1;1;1;1;1", header=SEMICOLONS)),
         2, r"semi\.csv: missing column\(s\) timestamp, open, high, low, close, volume; found timestamp;open"),
    Case("bars", "empty_file", precompute(lambda ctx: ctx.file("e.csv", "")), 2, r"e\.csv: empty file$"),
    Case("bars", "header_only", precompute(csv("ho.csv")), 2, r"ho\.csv: empty file \(no rows\)"),
    Case("bars", "unknown_format", precompute(lambda ctx: ctx.file("b.xlsx", "PK")),
         2, r"b\.xlsx: unknown format \(expected \.csv, \.csv\.gz or \.parquet\)"),
    Case("bars", "ragged_row", precompute(csv("r.csv", ROW0 + ",7")),
         2, r"r\.csv: cannot parse: CSV parse error: Row #2: Expected 6 columns, got 7"),
    Case("bars", "text_price", precompute(csv("t.csv", ROW0.replace("1.0,", "abc,", 1))),
         2, r"t\.csv: cannot parse: In CSV column #1: .*conversion error to double: invalid value 'abc'"),
    Case("bars", "cut_gzip", precompute(gz("g.csv.gz", HEADER + ROW0, keep=30)),
         2, r"g\.csv\.gz: cannot parse: Truncated compressed stream"),
    Case("bars", "bad_gzipped_csv", precompute(gz("bg.csv.gz", HEADER + ROW0.replace("1.2,", "x,", 1) + "\n")),
         2, r"bg\.csv\.gz: cannot parse: In CSV column #2: .*invalid value 'x'"),
    Case("bars", "nan_parquet", precompute(nan_parquet), 2, r"nan\.parquet: row 7 .*open is NaN or infinite"),
    Case("bars", "not_parquet", precompute(lambda ctx: ctx.file("np.parquet", "timestamp,open\n")),
         2, r"np\.parquet: cannot parse: .*Parquet magic bytes not found"),
    Case("bars", "integer_timestamps", precompute(csv("i.csv", "1704153600,1,1.2,0.9,1.1,1")),
         2, r"i\.csv: column 'timestamp' holds integers \(int64\); declare what they count with --timestamp-unit"),
    Case("bars", "float_timestamps", precompute(csv("f.csv", "1704153600.5,1,1.2,0.9,1.1,1")),
         2, r"f\.csv: column 'timestamp' has type double; expected timestamps, ISO-8601 text, or integers"),
    Case("bars", "text_timestamps", precompute(csv("x.csv", "02/01/2024 00:00,1,1.2,0.9,1.1,1")),
         2, r"x\.csv: column 'timestamp' is text that is not ISO-8601"),
    Case("bars", "missing_timestamp", precompute(csv("mt.csv", ROW0, ",1.1,1.3,1.0,1.2,5")),
         2, r"mt\.csv: row 1: timestamp is missing"),
    Case("bars", "dst_fold", precompute(csv("ny.csv", *FOLD_ROWS), "--tz", "America/New_York"),
         2, r"ny\.csv: row 1 .*2024-11-03T01:00:00 occurs twice in America/New_York"),
    Case("bars", "unknown_time_zone", precompute(csv("tz.csv", ROW0), "--tz", "Mars/Olympus"),
         2, r"time zone 'Mars/Olympus' is unknown"),
    Case("bars", "fifo", precompute(fifo("p.csv")), 2, r"p\.csv: is a FIFO, not a regular file"),
    Case("bars", "folder", precompute(lambda ctx: str(ctx.tmp)), 2, r": is a folder, not a file"),
    Case("bars", "missing_file", precompute(lambda ctx: str(ctx.tmp / "absent.csv")),
         2, r"absent\.csv: no such file"),
    Case("bars", "overlapping_files", precompute(overlapping), 2, r"b\.csv: row 0 .*overlaps .*a\.csv"),
]
# fmt: on


def train(fxcache: Callable[[Ctx], str]) -> Callable[[Ctx], list[str]]:
    return lambda ctx: ["train", "--fxcache", fxcache(ctx), "--out", str(ctx.tmp / "out"), "--device", "cpu"]


def fxcache_file(name: str, damage: Callable[[bytes], bytes]) -> Callable[[Ctx], str]:
    def build(ctx: Ctx) -> str:
        path = ctx.tmp / name
        table = make_table()
        write_good(path, table)
        data = path.read_bytes()
        path.write_bytes(damage(data) if damage else data)
        return str(path)

    return build


def fxcache_rewritten(name: str, **changes) -> Callable[[Ctx], str]:
    def build(ctx: Ctx) -> str:
        table = make_table()
        if "features" in changes and changes["features"] in ("nan", "huge"):
            features = table.features.copy()
            features[321:, 9] = (
                np.nan if changes["features"] == "nan" else 1e30
            )  # huge: a whole column's tail
            changes["features"] = features
        if "timestamp" in changes and changes["timestamp"] == "repeat":
            stamps = table.timestamp.copy()
            stamps[42] = stamps[41]
            changes["timestamp"] = stamps
        rewrite_with(ctx.tmp / name, table, **changes)
        return str(ctx.tmp / name)

    return build


def flip_a_feature_byte(data: bytes) -> bytes:
    table = make_table()
    at = data.find(table.features[100].tobytes()) + 1
    return data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :]


NOISE = np.random.default_rng(0).bytes(4096)


def bars_parquet_as_fxcache(ctx: Ctx) -> str:
    write_bars(generate_sample_bars(50, seed=2), ctx.tmp / "bars.fxcache")
    return str(ctx.tmp / "bars.fxcache")


# fmt: off
FXCACHE = [
    Case("fxcache", "missing", train(lambda ctx: str(ctx.tmp / "absent.fxcache")),
         2, r"absent\.fxcache: no such file"),
    Case("fxcache", "truncated", train(fxcache_file("cut.fxcache", lambda d: d[:-500])),
         2, r"cut\.fxcache: not a complete Arrow IPC file"),
    Case("fxcache", "flipped_byte", train(fxcache_file("flip.fxcache", flip_a_feature_byte)),
         2, r"flip\.fxcache: checksum mismatch"),
    Case("fxcache", "random_bytes", train(lambda ctx: ctx.file("noise.fxcache", NOISE)),
         2, r"noise\.fxcache: not a complete Arrow IPC file \(truncated or corrupt\)"),
    Case("fxcache", "empty", train(lambda ctx: ctx.file("empty.fxcache", b"")),
         2, r"empty\.fxcache: .*(empty|truncated)"),
    Case("fxcache", "bars_given_as_fxcache", train(bars_parquet_as_fxcache),
         2, r"bars\.fxcache: not a complete Arrow IPC file"),
    Case("fxcache", "other_format_version", train(fxcache_rewritten("v2.fxcache", format_version=2)),
         2, r"v2\.fxcache: format version 2, this foxhunt reads version 1"),
    Case("fxcache", "other_feature_names", train(fxcache_rewritten("names.fxcache", feature_names=["x"] * 42)),
         2, r"names\.fxcache: feature_names differ from this foxhunt's \(position 0"),
    Case("fxcache", "nan_feature", train(fxcache_rewritten("nan.fxcache", features="nan")),
         2, r"nan\.fxcache: features has a NaN or infinite value at row 321"),
    Case("fxcache", "huge_feature", train(fxcache_rewritten("huge.fxcache", features="huge")),
         2, r"huge\.fxcache: column \w+ holds 1e\+30 at row 321, past ±1e\+06"),
    Case("fxcache", "repeated_timestamp", train(fxcache_rewritten("ts.fxcache", timestamp="repeat")),
         2, r"ts\.fxcache: timestamps not strictly increasing at row 42"),
    Case("fxcache", "row_count", train(fxcache_rewritten("rows.fxcache", rows=499)),
         2, r"rows\.fxcache: 500 rows, metadata says 499"),
    Case("fxcache", "fifo", train(fifo("q.fxcache")), 2, r"q\.fxcache: is a FIFO, not a regular file"),
    Case("fxcache", "folder", train(lambda ctx: str(ctx.tmp)), 2, r"[0-9]: is a folder, not a file"),
]
# fmt: on


def s3_uri(*parts: str) -> Callable[[Ctx], str]:
    return lambda ctx: ctx.s3.uri(*parts)


def good_bars(ctx: Ctx) -> str:
    write_bars(generate_sample_bars(1500, seed=3), ctx.tmp / "good.parquet")
    return str(ctx.tmp / "good.parquet")


def train_to(out: str) -> Callable[[Ctx], list[str]]:
    return lambda ctx: ["train", "--fxcache", fxcache_file("ok.fxcache", None)(ctx), "--out", out]


def precompute_to(out: Callable[[Ctx], str]) -> Callable[[Ctx], list[str]]:
    return lambda ctx: ["precompute", "--bars", good_bars(ctx), "--out", out(ctx)]


# fmt: off
STORAGE = [
    Case("storage", "out_no_bucket", precompute_to(lambda ctx: "s3://"), 2, r"s3://: no bucket after s3://"),
    Case("storage", "out_one_slash", precompute_to(lambda ctx: "s3:/bucket/x.fxcache"),
         2, r"s3:/bucket/x\.fxcache: misspelt S3 URI"),
    Case("storage", "out_capital_scheme", precompute_to(lambda ctx: "S3://bucket/x.fxcache"),
         2, r"S3://bucket/x\.fxcache: misspelt S3 URI"),
    Case("storage", "out_no_slashes", precompute_to(lambda ctx: "s3:bucket/x.fxcache"),
         2, r"s3:bucket/x\.fxcache: misspelt S3 URI"),
    Case("storage", "out_other_scheme", precompute_to(lambda ctx: "gs://bucket/x.fxcache"),
         2, r"gs://bucket/x\.fxcache: 'gs:' looks like a URI scheme"),
    Case("storage", "out_bad_bucket_name", precompute_to(lambda ctx: "s3://My_Bucket/x.fxcache"),
         2, r"'My_Bucket' is not an S3 bucket name"),
    Case("storage", "bars_capital_scheme", precompute(lambda ctx: "S3://bucket/bars.csv"),
         2, r"S3://bucket/bars\.csv: misspelt S3 URI"),
    Case("storage", "fxcache_one_slash", train(lambda ctx: "s3:/bucket/f.fxcache"),
         2, r"s3:/bucket/f\.fxcache: misspelt S3 URI"),
    Case("storage", "train_out_capital_scheme", train_to("S3://bucket/run"),
         2, r"S3://bucket/run.*misspelt S3 URI"),
    Case("storage", "bars_bucket_only", precompute(lambda ctx: "s3://foxhunt-test"),
         2, r"s3://foxhunt-test: names a bucket or folder, not an object"),
    Case("storage", "bars_missing_key", precompute(s3_uri("absent.csv")), 2, r"absent\.csv: no such object", True),
    Case("storage", "bars_missing_bucket", precompute(lambda ctx: "s3://no-such-bucket/bars.csv"),
         2, r"s3://no-such-bucket/bars\.csv: no such bucket 'no-such-bucket'", True),
    Case("storage", "out_missing_bucket", precompute_to(lambda ctx: "s3://no-such-bucket/x.fxcache"),
         2, r"s3://no-such-bucket/x\.fxcache: no such bucket", True),
    Case("storage", "fxcache_missing_key", train(s3_uri("absent.fxcache")),
         2, r"absent\.fxcache: no such object", True),
]
# fmt: on

# An endpoint nothing listens on (the discard port), and an environment without any AWS credentials.
NOWHERE = {
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
    "AWS_ACCESS_KEY_ID": "k",
    "AWS_SECRET_ACCESS_KEY": "s",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_PROFILE": None,
    "AWS_SESSION_TOKEN": None,
}
NO_CREDENTIALS = {
    **NOWHERE,
    "AWS_ACCESS_KEY_ID": None,
    "AWS_SECRET_ACCESS_KEY": None,
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials",
    "AWS_CONFIG_FILE": "/nonexistent/config",
    "AWS_EC2_METADATA_DISABLED": "true",
}
# fmt: off
ENVIRONMENT = [
    Case("storage", "no_credentials", precompute(lambda ctx: "s3://foxhunt-test/bars.csv"),
         2, r"s3://foxhunt-test/bars\.csv: no S3 credentials: set AWS_ACCESS_KEY_ID", env=NO_CREDENTIALS),
    Case("storage", "unreachable_endpoint", precompute(lambda ctx: "s3://foxhunt-test/bars.csv"),
         1, r"s3://foxhunt-test/bars\.csv: HEAD failed after 2 attempts .*Could not connect to the endpoint",
         env={**NOWHERE, "FOXHUNT_S3_ATTEMPTS": "2"}),
    Case("storage", "bad_attempts_setting", precompute(lambda ctx: "s3://foxhunt-test/bars.csv"),
         2, r"FOXHUNT_S3_ATTEMPTS='many': expected a whole number above 0",
         env={**NOWHERE, "FOXHUNT_S3_ATTEMPTS": "many"}),
    Case("storage", "bad_read_timeout_setting", train(lambda ctx: "s3://foxhunt-test/f.fxcache"),
         2, r"FOXHUNT_S3_READ_TIMEOUT='-1': expected a number of seconds above 0",
         env={**NOWHERE, "FOXHUNT_S3_READ_TIMEOUT": "-1"}),
]
# fmt: on

CASES = BARS + FXCACHE + STORAGE + ENVIRONMENT


def leftovers(ctx: Ctx) -> list[str]:
    """Outputs a refused command left: files under out/, and parts in the download cache."""
    found = [str(p) for p in (ctx.tmp / "out").rglob("*") if p.is_file()]
    return found + [str(p) for p in (ctx.tmp / "cache").rglob("*.part-*")]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.category}-{c.name}")
def test_a_bad_input_ends_in_one_line_with_its_exit_code_and_leaves_nothing(
    case, tmp_path, request, capsys, monkeypatch
):
    monkeypatch.setenv("FOXHUNT_CACHE_DIR", str(tmp_path / "cache"))
    ctx = Ctx(tmp_path, request.getfixturevalue("seaweed_s3") if case.needs_s3 else None)
    for name, value in case.env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    argv = case.argv(ctx)
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert (code, len(lines)) == (case.code, 1), err
    assert re.search(case.message, lines[0]), lines[0]
    assert "Traceback" not in err
    assert leftovers(ctx) == []


def test_every_row_has_its_own_message():
    assert len({c.message for c in CASES}) == len(CASES)


def test_the_table_has_at_least_forty_rows_across_the_input_categories():
    assert len(CASES) >= 40
    assert {c.category for c in CASES} >= {"bars", "fxcache", "storage"}


def test_an_s3_output_refused_for_a_missing_bucket_publishes_nothing(
    seaweed_s3, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("FOXHUNT_CACHE_DIR", str(tmp_path / "cache"))
    out = seaweed_s3.uri("x.fxcache")
    bars = good_bars(Ctx(tmp_path))
    assert main(["precompute", "--bars", bars, "--out", out.replace("foxhunt-test", "no-such-bucket")]) == 2
    assert storage.list_prefix(out.rsplit("/", 1)[0]) == []
