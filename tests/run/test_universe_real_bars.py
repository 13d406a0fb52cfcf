"""A universe of the repository's real bars: EURUSD (FX, 24 hours five days a week, 2018) and YNDX (MOEX
sessions, 2015). As the repository holds them they share no minute, so `foxhunt pipeline` refuses them
before writing anything. With YNDX's bars moved 156 weeks later (weekdays and session hours kept, so its
real session calendar lies over EURUSD's 2018 dates: a calendar fixture, not a market claim) the two
train as one universe end to end and report each instrument and the book."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.data_files import EURUSD, YNDX

from foxhunt.cli import main
from foxhunt.data.bars import read_bars
from foxhunt.run.universe_run import load_series

WEEKS_LATER = 156  # 2015-01-05 (a Monday) + 156 weeks = 2018-01-01 (a Monday)
FOLDS = ["--train-days", "30", "--val-days", "10", "--step-days", "10", "--max-folds", "3"]


def pipeline(out, params, *bars) -> int:
    """`foxhunt pipeline` on the CPU, one epoch of the tiny network (`params`), over the `--bars` files."""
    args = ["pipeline", "--out", str(out), "--device", "cpu", "--epochs", "1", "--hyperopt-params", str(params), *FOLDS]  # fmt: skip
    for file in bars:
        args += ["--bars", str(file)]
    return main(args)


def test_eurusd_and_yndx_as_held_are_refused_for_no_common_time_with_nothing_written(
    tiny_params, tmp_path, capsys
):
    out = tmp_path / "out"
    assert pipeline(out, tiny_params, EURUSD, YNDX) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no time in common with any other instrument" in err[0]
    # the spans of the fxcaches' rows, past each file's warm-up and before its last targets' bars
    assert f"{EURUSD}: no time in common" in err[0]
    assert "spans 2018-01-02T02:01:00Z to 2018-04-29T22:56:00Z" in err[0]
    assert "the others 2015-01-05T11:01:00Z to 2015-04-24T11:23:00Z" in err[0]
    assert not out.exists()  # the instruments' bars were read and checked before a fxcache was written


@pytest.fixture(scope="module")
def shifted_yndx(tmp_path_factory):
    """YNDX's bars, every timestamp 156 weeks later, as YNDX.parquet."""
    table = pq.read_table(YNDX)
    moved = table["timestamp"].to_numpy() + np.timedelta64(WEEKS_LATER * 7, "D")
    path = tmp_path_factory.mktemp("yndx") / "YNDX.parquet"
    pq.write_table(table.set_column(0, "timestamp", pa.array(moved, pa.timestamp("us", tz="UTC"))), path)
    return path


@pytest.fixture(scope="module")
def run(shifted_yndx, tiny_params, tmp_path_factory):
    out = tmp_path_factory.mktemp("real") / "out"
    eurusd = tmp_path_factory.mktemp("eurusd") / "EURUSD.parquet"
    eurusd.write_bytes(EURUSD.read_bytes())
    assert pipeline(out, tiny_params, eurusd, shifted_yndx) == 0
    return out


def test_the_two_real_calendars_train_together_and_each_takes_part_in_every_fold(run):
    summary = json.loads((run / "summary.json").read_text())
    assert [i["name"] for i in summary["instruments"]] == ["EURUSD", "YNDX"]
    assert all(i["folds"] == [0, 1, 2] for i in summary["instruments"])


def test_each_instruments_out_of_sample_bars_are_its_own_bars(run, shifted_yndx):
    series = load_series(str(run))
    yndx = read_bars([str(shifted_yndx)]).timestamp
    eurusd = read_bars([str(EURUSD)]).timestamp
    assert np.isin(series["YNDX"]["timestamp"], yndx).all()
    assert np.isin(series["EURUSD"]["timestamp"], eurusd).all()
    # MOEX's sessions hold far fewer minutes than FX's 24 hours: the same dates, fewer bars
    assert 0 < len(series["YNDX"]["timestamp"]) < len(series["EURUSD"]["timestamp"]) / 2


def test_the_book_weighs_both_and_its_record_covers_every_bar_either_traded(run):
    book = json.loads((run / "book.json").read_text())
    series = load_series(str(run))
    assert set(book["weights"]) == {"EURUSD", "YNDX"} and sum(book["weights"].values()) == pytest.approx(1)
    either = np.union1d(series["EURUSD"]["timestamp"], series["YNDX"]["timestamp"])
    assert book["window"]["n_bars"] == len(either)
    assert (run / "book.png").exists()
    for name in ("EURUSD", "YNDX"):
        assert (run / "instruments" / name / "stitched.json").exists()
