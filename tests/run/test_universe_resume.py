"""An interrupted universe run resumes: the same command again takes over the universe folds the first
attempt completed (recorded in manifest.json, their files verified) and trains the rest, to the records of
a run never interrupted, bit for bit on the CPU; the later folds' pooled decisions weigh the taken-over
folds' out-of-sample evidence read back from the files. Other inputs, other settings or a changed fold
file are refused in one line, with nothing written; a finished run is refused, `--overwrite` starts over."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from dataclasses import replace

import numpy as np
import pytest
from support.universe_cases import three_instruments, write_caches

from foxhunt.cli import main
from foxhunt.data.sample_universe import generate_universe
from foxhunt.run import universe_resume, universe_run, universe_walk
from foxhunt.train.fold_selection import FoldSelection

DAYS = 12
FOLDS = ["--train-days", "4", "--val-days", "2", "--step-days", "2", "--max-folds", "3"]
# The gate and the guard lowered to these learners' level, so that folds trade on pooled decisions.
POOLED = {"select_pool": "pooled", "select_min_sharpe": -200.0, "select_pool_guard": -400.0}
INSTRUMENTS = ("fx00", "exchange01", "late")
STOP_AT = 2  # the first attempt is interrupted as fold 2 begins: folds 0 and 1 are complete


@pytest.fixture(scope="module")
def caches(tmp_path_factory) -> dict[str, str]:
    """fx00 and exchange01 over the same dates; `late`, whose bars start 4 days later (not in fold 0);
    `other/fx00`, another fx00 (other bars, the same name)."""
    (other,) = generate_universe(1, n_bars=DAYS * 1440, seed=7)
    instruments = [*three_instruments(DAYS), ("other/fx00", other[1])]
    return write_caches(tmp_path_factory.mktemp("universe"), instruments)


@pytest.fixture(scope="module")
def params(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("params") / "params.json"
    path.write_text(json.dumps({"dqn": {"hidden": 16, "steps_per_epoch": 20, **POOLED}}))
    return str(path)


def train(caches: dict[str, str], params: str, out, *extra: str, names=INSTRUMENTS) -> tuple[int, str]:
    """`foxhunt train` on the instruments `names` with `extra` flags: its exit code and its console."""
    args = ["train", "--out", str(out), "--device", "cpu", "--pictures", "off", "--epochs", "2", *FOLDS]
    args += ["--hyperopt-params", params]
    for name in names:
        args += ["--fxcache", caches[name]]
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        code = main([*args, *extra])
    return code, console.getvalue()


def interrupted(caches, params, out, at: int = STOP_AT, *extra: str) -> int:
    """The first attempt, stopped at once (as by a second Ctrl-C) when fold `at` begins."""
    trained = universe_walk.train_universe_fold

    def stop(trainer, fold, *args, **kwargs):
        if fold.fold == at:
            raise KeyboardInterrupt
        return trained(trainer, fold, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(universe_walk, "train_universe_fold", stop)
        code, _ = train(caches, params, out, *extra)
    return code


@pytest.fixture(scope="module")
def reference(caches, params, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "out"
    assert train(caches, params, out)[0] == 0
    return out


@pytest.fixture(scope="module")
def first_attempt(caches, params, tmp_path_factory):
    """An --out the first attempt left (kept untouched: tests copy it)."""
    out = tmp_path_factory.mktemp("first") / "out"
    assert interrupted(caches, params, out) == 130
    return out


@pytest.fixture(scope="module")
def resumed(caches, params, first_attempt, tmp_path_factory):
    """The same command again on a copy of the first attempt's --out: the folder and its console."""
    out = tmp_path_factory.mktemp("resumed") / "out"
    shutil.copytree(first_attempt, out)
    code, console = train(caches, params, out)
    assert code == 0, console
    return out, console


def files(out) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def report(out, name: str, fold: int) -> dict:
    return json.loads((out / "instruments" / name / f"fold_{fold}" / "report.json").read_text())


def test_the_first_attempt_recorded_the_folds_it_completed_and_an_interrupted_summary(first_attempt):
    manifest = json.loads((first_attempt / "manifest.json").read_text())
    assert sorted(manifest["folds"]) == ["0", "1"]
    stopped = json.loads((first_attempt / "summary.json").read_text())
    assert stopped["status"] == "interrupted"
    assert stopped["error"] == "stopped by SIGINT at once (second signal)"
    recorded = manifest["folds"]["1"]["outputs"]
    assert "instruments/late/fold_1/positions.npy" in recorded
    assert "instruments/late/fold_0/report.json" not in manifest["folds"]["0"]["outputs"]


def test_the_same_command_takes_over_exactly_the_completed_folds_and_trains_the_rest(resumed):
    _, console = resumed
    assert "resuming: 2 universe fold(s) completed by an earlier attempt taken over" in console
    assert "fold 0 epoch" not in console and "fold 1 epoch" not in console
    assert "fold 2 epoch 2/2" in console
    assert console.count("taken over: completed by an earlier attempt") == 2


def test_every_instruments_records_equal_an_uninterrupted_runs_bit_for_bit(resumed, reference):
    out, _ = resumed
    for name in INSTRUMENTS:
        for record in ("stitched.json", "series.npz", "fold_2/positions.npy", "fold_2/weights.pt"):
            assert (out / "instruments" / name / record).read_bytes() == (
                reference / "instruments" / name / record
            ).read_bytes(), f"{name}/{record}"
    assert (out / "book.json").read_bytes() == (reference / "book.json").read_bytes()


def test_the_summary_equals_an_uninterrupted_runs_but_for_its_timings(resumed, reference):
    timings = ("run_seconds", "data_load_seconds")
    mine, theirs = (
        {k: v for k, v in json.loads((o / "summary.json").read_text()).items() if k not in timings}
        for o in (resumed[0], reference)
    )
    assert mine == theirs and mine["status"] == "completed"


def test_the_later_fold_weighs_the_taken_over_folds_evidence_and_decides_the_same(resumed, reference):
    out, _ = resumed
    for name in INSTRUMENTS:
        selection = report(out, name, 2)["selection"]
        assert selection == report(reference, name, 2)["selection"]
        assert [0, "out_of_sample"] in selection["pooled"]["windows"]
        assert [1, "out_of_sample"] in selection["pooled"]["windows"]
    traded = [not report(reference, "fx00", f)["selection"]["went_flat"] for f in range(3)]
    assert any(traded)  # the settings let folds trade: the decisions are worth comparing


def test_a_resume_that_lost_the_taken_over_folds_evidence_would_decide_otherwise(
    caches, params, first_attempt, reference, tmp_path
):
    # The control: were the recorded choices read back without their out-of-sample windows, fold 2 would
    # pool less and its record would differ, so the test above can fail.
    out = tmp_path / "out"
    shutil.copytree(first_attempt, out)
    read = FoldSelection.from_dict

    def stripped(record):
        return replace(read(record), out_of_sample=None)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(universe_resume.FoldSelection, "from_dict", stripped)
        assert train(caches, params, out)[0] == 0
    mine, theirs = report(out, "fx00", 2)["selection"], report(reference, "fx00", 2)["selection"]
    assert mine["pooled"]["pooled_sharpe"] != theirs["pooled"]["pooled_sharpe"]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"extra": ("--epochs", "3")}, "epochs: 2 → 3"),
        ({"extra": ("--seed", "4")}, "seed: 0 → 4"),
        ({"names": ("fx00", "exchange01")}, "instruments: fx00, exchange01, late → fx00, exchange01"),
        ({"names": ("other/fx00", "exchange01", "late")}, "of fx00: checksum"),
    ],
)
def test_other_inputs_or_settings_are_refused_in_one_line_with_nothing_written(
    caches, params, first_attempt, tmp_path, capsys, change, named
):
    out = tmp_path / "out"
    shutil.copytree(first_attempt, out)
    before = files(out)
    code, _ = train(caches, params, out, *change.get("extra", ()), names=change.get("names", INSTRUMENTS))
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and named in line and "interrupted universe run" in line
    assert files(out) == before


def test_a_changed_fold_file_is_refused_naming_it_with_nothing_written(
    caches, params, first_attempt, tmp_path, capsys
):
    out = tmp_path / "out"
    shutil.copytree(first_attempt, out)
    changed = out / "instruments" / "exchange01" / "fold_1" / "positions.npy"
    positions = np.load(changed)
    np.save(changed, -positions + 1)  # other positions, a file of the same form
    before = files(out)
    code, _ = train(caches, params, out)
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and str(changed) in line and "sha256" in line
    assert files(out) == before


def test_a_finished_run_is_refused_without_overwrite(caches, params, reference, capsys):
    before = files(reference)
    assert train(caches, params, reference)[0] == 2
    assert "holds a run already" in capsys.readouterr().err and files(reference) == before


def test_overwrite_starts_over_taking_over_nothing(caches, params, first_attempt, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(first_attempt, out)
    assert interrupted(caches, params, out, 1, "--overwrite") == 130
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest["folds"]) == ["0"]  # fold 0 trained again, fold 1 not reached: nothing taken


def test_a_run_stopped_after_its_last_fold_takes_over_every_fold_and_trains_the_held_out_one_alike(
    caches, params, tmp_path
):
    # Stopped in the book, after every fold: the resume trains no walk fold, only the held-out one, on a
    # trainer that trained nothing before it, and its held-out records equal an uninterrupted run's.
    held = ("--holdout-days", "2")
    plain, out = tmp_path / "plain", tmp_path / "out"
    assert train(caches, params, plain, *held)[0] == 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(universe_run, "write_book", _stop)
        assert train(caches, params, out, *held)[0] == 130
    code, console = train(caches, params, out, *held)
    assert code == 0 and "resuming: 3 universe fold(s)" in console and " epoch 1/2" in console
    assert console.count(" epoch 1/2") == 1  # the held-out fold alone
    for name in ("fx00", "late"):
        folder = f"holdout/instruments/{name}"
        (fold,) = (p.name for p in (plain / folder).iterdir())
        for record in (f"{folder}/{fold}/positions.npy", f"{folder}/{fold}/weights.pt"):
            assert (out / record).read_bytes() == (plain / record).read_bytes(), record
    assert (out / "holdout.json").read_bytes() == (plain / "holdout.json").read_bytes()


def _stop(*args, **kwargs):
    raise KeyboardInterrupt
