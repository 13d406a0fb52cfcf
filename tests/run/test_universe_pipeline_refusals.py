"""`foxhunt pipeline --bars A --bars B ...` refuses a universe it cannot build before it writes a first
fxcache: instruments whose feature rows share no time (though their bars do), an instrument too short for
one feature row, and an fxcache in `--out` built from other bars. Each refusal is one line and `--out`
holds nothing new."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from foxhunt.cli import main
from foxhunt.data.bars import Bars, generate_sample_bars, write_bars
from foxhunt.data.features import LOOKAHEAD_BARS, WARMUP_BARS, compute_features
from foxhunt.data.fxcache import write_fxcache
from foxhunt.run.universe_pipeline import feature_span

ROWS = 1_000  # bars an instrument of these tests holds: enough for 700 feature rows
SHARED = 100  # raw bars A and B share: fewer than an fxcache drops (WARMUP_BARS + LOOKAHEAD_BARS)


@pytest.fixture(scope="module")
def bars() -> Bars:
    """Generated minute bars, long enough for two instruments that overlap by `SHARED` bars."""
    return generate_sample_bars(2 * ROWS, seed=3)


def rows(bars: Bars, lo: int, hi: int) -> Bars:
    """Bars `lo` to `hi` (exclusive) of `bars`."""
    arrays = ("timestamp", "open", "high", "low", "close", "volume")
    return dataclasses.replace(bars, **{name: getattr(bars, name)[lo:hi] for name in arrays})


def pipeline(out, *files) -> int:
    """`foxhunt pipeline` on the CPU over the `--bars` files, one instrument each."""
    args = ["pipeline", "--out", str(out), "--device", "cpu", "--epochs", "1"]
    for file in files:
        args += ["--bars", str(file)]
    return main(args)


def written(bars: Bars, path: Path) -> Path:
    """`bars` written to `path` (Parquet)."""
    write_bars(bars, path)
    return path


def refusal(capsys) -> str:
    """The one line the refusal printed."""
    (line,) = capsys.readouterr().err.strip().splitlines()
    return line


# The second instrument's rows of the generated bars, and the refusal's line given both files.
SECOND = {
    # 100 bars in common, all of them in rows both fxcaches drop (warm-up at B's start, targets at A's end)
    "overlapping only where the fxcaches drop rows": (
        (ROWS - SHARED, 2 * ROWS - SHARED),
        lambda a, b: f"{a}: no time in common with any other instrument",
    ),
    "too short for a feature row": (
        (0, 200),
        lambda a, b: f"{b}: 200 bars give no feature rows: need more than {WARMUP_BARS + LOOKAHEAD_BARS}",
    ),
}


@pytest.mark.parametrize("case", SECOND)
def test_a_second_instrument_that_cannot_join_is_refused_with_nothing_written(case, bars, tmp_path, capsys):
    assert SHARED < WARMUP_BARS + LOOKAHEAD_BARS
    (start, end), message = SECOND[case]
    a = written(rows(bars, 0, ROWS), tmp_path / "A.parquet")
    b = written(rows(bars, start, end), tmp_path / "B.parquet")
    out = tmp_path / "out"
    assert pipeline(out, a, b) == 2
    assert message(a, b) in refusal(capsys)
    assert not out.exists()


def test_an_fxcache_of_other_bars_in_out_is_refused_before_any_instrument_is_written(bars, tmp_path, capsys):
    x = written(rows(bars, 0, ROWS), tmp_path / "X.parquet")
    d = written(rows(bars, ROWS // 2, ROWS + ROWS // 2), tmp_path / "D.parquet")  # half X's time
    out = tmp_path / "out"
    stale = out / "instruments" / "D.fxcache"
    stale.parent.mkdir(parents=True)
    other = generate_sample_bars(ROWS, seed=4)
    write_fxcache(str(stale), compute_features(other), source_uri="other", source_hash="other")
    before = stale.read_bytes()
    assert pipeline(out, x, d) == 2
    line = refusal(capsys)
    assert f"{stale} holds the fxcache of an earlier run, built from other bars" in line
    assert stale.read_bytes() == before
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == ["instruments", "instruments/D.fxcache"]


def test_the_span_checked_before_writing_is_the_span_of_the_fxcache_rows(bars):
    table = compute_features(bars)
    assert feature_span(bars) == (bars.source, int(table.timestamp[0]), int(table.timestamp[-1]))
