"""bench/speed_universe.py: the wall ratio of K instruments over one from the runs that succeeded, the
universe's load read from its console line, one instrument's steps per epoch, and the memory estimate of
32 instruments with its verdict against one H200."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import speed_universe as su  # noqa: E402
from support.background_runs import background_process, one_thread  # noqa: E402

from foxhunt.data.folds import generate_walk_forward_indices  # noqa: E402
from foxhunt.train.device_data import chunk_rows  # noqa: E402
from foxhunt.train.memory_estimate import HEADROOM, needed_bytes  # noqa: E402


def _runs(*walls: float, failed: float | None = None) -> list[dict]:
    runs = [{"wall_seconds": w, "exit_code": 0} for w in walls]
    return runs + ([{"wall_seconds": failed, "exit_code": 1}] if failed is not None else [])


def test_the_wall_ratio_is_the_median_universe_wall_over_the_median_one_instrument_wall():
    entry = su.wall_ratio(_runs(10.0, 12.0, 11.0, failed=1.0), _runs(30.0, 25.0, 20.0, failed=500.0), 8)
    assert entry["measured"] == pytest.approx(25.0 / 11.0)  # not a mean, not best-of, no failed run
    assert entry["target"] == 2.5 and entry["met"] and not entry["higher_is_better"]
    slow = su.wall_ratio(_runs(10.0), _runs(26.0), 8)
    assert slow["measured"] == pytest.approx(2.6) and not slow["met"]


def test_a_ratio_with_a_side_unmeasured_is_unmeasured_and_not_met():
    assert su.ratio(None, 3.0) is None and su.ratio(3.0, 0.0) is None
    entry = su.wall_ratio(_runs(10.0), _runs(failed=20.0), 8)
    assert entry["measured"] is None and not entry["met"]


def test_the_load_is_read_from_the_universe_runs_console_line():
    console = (
        "compile cache: off\nloaded 8 instruments, 6,022,560 rows onto cuda in 1.73s; 21 folds\nfold 0: …"
    )
    assert su.load_seconds(console) == 1.73
    assert su.load_seconds("loaded fxcache in 0.2s") is None


def _minutes(days: int) -> np.ndarray:
    start = np.datetime64("2024-01-01T00:00", "ns").astype(np.int64)
    return start + np.arange(days * 1440, dtype=np.int64) * 60_000_000_000


def test_one_instruments_steps_are_its_folds_mean_of_learning_rows_over_the_batch(tmp_path):
    settings = su.run_settings(tmp_path, ["--train-days", "8", "--val-days", "3", "--step-days", "3"])
    stamps = _minutes(20)
    folds = generate_walk_forward_indices(stamps, settings.folds)
    batch, tail = settings.dqn.batch_size, settings.dqn.select_tail_share
    by_hand = [math.ceil(round(f.train_rows * (1 - tail)) / batch) for f in folds]
    assert len(folds) > 1 and su.one_instrument_steps(stamps, settings) == round(sum(by_hand) / len(by_hand))


def test_the_memory_estimate_counts_every_instrument_and_judges_it_against_one_h200(tmp_path):
    settings = su.run_settings(tmp_path, ["--train-days", "8", "--val-days", "3", "--step-days", "3"])
    stamps = _minutes(20)
    one = su.memory_estimate([stamps], 1, 42, settings)
    many = su.memory_estimate([stamps, stamps[:-1440]], 32, 42, settings)  # the two calendars cycled
    assert many["rows"] == 16 * len(stamps) + 16 * (len(stamps) - 1440)
    assert many["max_train_rows"] == 32 * one["max_train_rows"]  # the same first fold in every instrument
    import torch

    by_hand = needed_bytes(
        many["rows"], 42, many["max_train_rows"], settings.dqn, 1, chunk_rows(torch.device("cuda"))
    )
    assert many["bytes"] == sum(by_hand.values()) and many["fits_139_gib_with_headroom"]
    assert su.H200_BYTES == 139 * 2**30 and many["headroom"] == HEADROOM


def test_train_flags_split_on_commas_as_on_spaces_so_they_survive_gpu_run_sh():
    from argparse import Namespace

    assert su.train_flags(Namespace(train_flags="--train-days,8,--val-days 3")) == [
        "--train-days",
        "8",
        "--val-days",
        "3",
    ]
    assert su.train_flags(Namespace(train_flags="")) == []


# `bench/speed.py universe` at a tiny size as a process of its own, queued in the background.
cpu_universe_speed_run = background_process("cpu_universe_speed_run", "bench-speed-universe", lambda work: [
        sys.executable, str(BENCH / "speed.py"), "universe", "--instruments", "2", "--bars", "20000", "--epochs", "1",
        "--repeats", "1", "--device", "cpu", "--steps-per-epoch", "one",
        "--train-flags", "--train-days 8 --val-days 3 --step-days 3",
        "--work", str(work / "work"), "--out", str(work / "universe.json")], lambda _: one_thread())  # fmt: skip


@pytest.mark.slow
def test_a_cpu_universe_run_times_both_sides_and_judges_the_ratio_the_load_and_the_estimate(
    cpu_universe_speed_run,
):
    import json

    done, work = cpu_universe_speed_run
    out = work / "universe.json"
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(out.read_text())
    one, many = record["one"][0], record["universe"][0]
    assert (one["instruments"], many["instruments"], one["exit_code"], many["exit_code"]) == (1, 2, 0, 0)
    targets = record["targets"]
    assert targets["universe_wall_ratio"]["measured"] == pytest.approx(
        many["wall_seconds"] / one["wall_seconds"]
    )
    assert targets["universe_load_seconds"]["measured"] == many["data_load_seconds"] is not None
    assert record["shape"]["steps_per_epoch"] >= 1 and "--hyperopt-params" in record["shape"]["flags"]
    assert record["memory_estimate"]["instruments"] == 32
