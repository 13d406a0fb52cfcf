"""Checks before work (issue 11): inputs that cannot be read and outputs that cannot be written, or that
would overwrite an input, end the command with exit 2 and one line before a bar is read or a fold trained.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.run_cases import train_argv

from foxhunt.cli import main
from foxhunt.data.bars import generate_sample_bars, write_bars

EXIT_USAGE = 2
SAMPLE_ROWS = 3_000


def _stderr_line(capsys) -> str:
    """The one stderr line of a refused command (no traceback)."""
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def _integer_seconds_csv(path: Path) -> Path:
    """Sample bars whose timestamp column counts seconds since the Unix epoch."""
    bars = generate_sample_bars(SAMPLE_ROWS, seed=5)
    seconds = bars.timestamp // 1_000_000_000
    rows = zip(seconds, bars.open, bars.high, bars.low, bars.close, bars.volume, strict=True)
    body = "".join(f"{t},{o},{h},{lo},{c},{v}\n" for t, o, h, lo, c, v in rows)
    path.write_text("timestamp,open,high,low,close,volume\n" + body)
    return path


def test_precompute_refuses_an_out_that_is_its_bars_file(tmp_path, capsys):
    bars = tmp_path / "bars.csv"
    write_bars(generate_sample_bars(SAMPLE_ROWS, seed=1), bars)
    before = bars.read_bytes()

    code = main(["precompute", "--bars", str(bars), "--out", str(bars)])

    assert code == EXIT_USAGE
    assert "would overwrite the input" in _stderr_line(capsys)
    assert bars.read_bytes() == before


@pytest.mark.parametrize("out", ["s3:/bucket/run", "S3://bucket/run", "s3://"])
def test_train_refuses_a_misspelt_s3_out_before_any_work(
    out, tiny_fxcache, tiny_params, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)

    code = main(train_argv(tiny_fxcache, out, tiny_params))

    assert code == EXIT_USAGE
    assert "s3" in _stderr_line(capsys).lower()
    assert "loaded" not in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []  # no local folder named s3: or S3:


def test_train_refuses_an_out_under_a_regular_file_before_training(
    tiny_fxcache, tiny_params, tmp_path, capsys
):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder should be")
    out = blocker / "run"

    started = time.perf_counter()
    code = main(train_argv(tiny_fxcache, out, tiny_params))
    seconds = time.perf_counter() - started

    assert code == EXIT_USAGE
    assert str(blocker) in _stderr_line(capsys)
    assert "epoch" not in capsys.readouterr().out
    assert seconds < 3.0
    assert not (out / "fold_0").exists()


def test_precompute_refuses_integer_timestamps_without_a_unit_naming_the_column(tmp_path, capsys):
    bars = _integer_seconds_csv(tmp_path / "bars.csv")
    out = tmp_path / "out.fxcache"

    code = main(["precompute", "--bars", str(bars), "--out", str(out)])

    assert code == EXIT_USAGE
    line = _stderr_line(capsys)
    assert "column 'timestamp'" in line and "--timestamp-unit" in line
    assert not out.exists()


def test_precompute_reads_integer_timestamps_in_the_declared_unit(tmp_path):
    bars = _integer_seconds_csv(tmp_path / "bars.csv")
    out = tmp_path / "out.fxcache"

    code = main(["precompute", "--bars", str(bars), "--out", str(out), "--timestamp-unit", "s"])

    assert code == 0
    assert out.is_file()


def test_precompute_reads_integer_timestamps_in_seconds_as_the_same_instants(tmp_path):
    from foxhunt.data.fxcache import read_fxcache

    iso_bars = tmp_path / "iso.csv"
    write_bars(generate_sample_bars(SAMPLE_ROWS, seed=5), iso_bars)
    iso_out, int_out = tmp_path / "iso.fxcache", tmp_path / "int.fxcache"
    assert main(["precompute", "--bars", str(iso_bars), "--out", str(iso_out)]) == 0
    int_bars = str(_integer_seconds_csv(tmp_path / "int.csv"))
    assert main(["precompute", "--bars", int_bars, "--out", str(int_out), "--timestamp-unit", "s"]) == 0

    assert (read_fxcache(str(int_out)).timestamp == read_fxcache(str(iso_out)).timestamp).all()


def test_pipeline_refuses_an_unknown_timestamp_unit(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["pipeline", "--out", str(tmp_path / "run"), "--timestamp-unit", "m"])

    assert exc.value.code == EXIT_USAGE
    assert not (tmp_path / "run").exists()


def test_pipeline_refuses_an_out_that_is_its_bars_file(tmp_path, capsys):
    bars = tmp_path / "bars.csv"
    write_bars(generate_sample_bars(SAMPLE_ROWS, seed=1), bars)
    before = bars.read_bytes()

    code = main(["pipeline", "--bars", str(bars), "--out", str(bars)])

    assert code == EXIT_USAGE
    assert str(bars) in _stderr_line(capsys)
    assert bars.read_bytes() == before
