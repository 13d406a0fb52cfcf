"""`--seeds K` and the held-out period are part of what a resume must match, and every seed's folds
are verified like the first's: a resume never quietly drops or trusts another seed's files."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from support import strict_json
from support.run_cases import ONE_FOLD, copy_run, finished_run, train_argv

from foxhunt.cli import main
from foxhunt.run.out_folder import overwrite_plan, run_file

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

TWO_SEEDS = ("--seeds", "2", "--epochs", "1", "--max-folds", "2")
OTHER_SEED = "seed_12"  # --seed 11 (run_cases.TRAIN_ARGS): the second seed is 12


@pytest.fixture(scope="module")
def two_seed_run(tiny_fxcache, tiny_params, tmp_path_factory) -> Path:
    """The --out of a finished two-fold run of two seeds, once a module; tests take a copy."""
    return finished_run(tiny_fxcache, tiny_params, tmp_path_factory, "two-seeds", *TWO_SEEDS)


def rerun(fxcache, out, params, *extra) -> tuple[int, str]:
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        code = main(train_argv(fxcache, out, params, *TWO_SEEDS, *extra))
    return code, console.getvalue()


def test_the_manifest_records_every_seeds_fold_files(two_seed_run):
    outputs = json.loads((two_seed_run / "manifest.json").read_text())["run"]["folds"]["1"]["outputs"]
    assert f"{OTHER_SEED}/fold_1/weights.pt" in outputs
    assert "fold_1/weights.pt" in outputs


def test_a_run_resumed_with_other_seeds_is_refused(two_seed_run, tiny_fxcache, tiny_params, tmp_path, capsys):
    out = copy_run(two_seed_run, tmp_path / "out")

    code, _ = rerun(tiny_fxcache, out, tiny_params, "--seeds", "3")

    assert code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "seeds: 2 → 3" in line


def test_a_run_resumed_with_another_held_out_period_is_refused(
    one_fold_run, tiny_fxcache, tiny_params, tmp_path, capsys
):
    out = copy_run(one_fold_run, tmp_path / "out")

    assert main(train_argv(tiny_fxcache, out, tiny_params, *ONE_FOLD, "--holdout-days", "2")) == 2
    assert "folds.holdout_days: 0.0 → 2.0" in capsys.readouterr().err


def test_a_deleted_fold_is_trained_again_and_the_spread_keeps_every_seed(
    two_seed_run, tiny_fxcache, tiny_params, tmp_path
):
    out = copy_run(two_seed_run, tmp_path / "out")
    (out / "fold_1" / "weights.pt").unlink()

    code, console = rerun(tiny_fxcache, out, tiny_params)

    assert code == 0, console
    assert "fold 0 skipped" in console and "fold 1: fold_1/weights.pt is missing" in console
    spread = strict_json.read(out / "summary.json")["seed_spread"]
    assert spread["seeds"] == [11, 12]


def test_a_resumed_run_of_three_seeds_votes_again_over_the_folds_it_took_over(
    tiny_fxcache, tiny_params, tmp_path_factory, tmp_path
):
    # Catches: the vote left out after a resume, or taken over folds voted on other positions than saved.
    three = ("--seeds", "3", "--epochs", "1", "--max-folds", "2")
    done = finished_run(tiny_fxcache, tiny_params, tmp_path_factory, "three-seeds", *three)
    out = copy_run(done, tmp_path / "out")
    (out / "seed_13" / "fold_1" / "weights.pt").unlink()
    (out / "summary.json").unlink()

    assert main(train_argv(tiny_fxcache, out, tiny_params, *three)) == 0
    before = strict_json.read(done / "summary.json")["seed_spread"]["majority"]
    assert strict_json.read(out / "summary.json")["seed_spread"]["majority"] == before


def test_garbage_weights_of_another_seed_are_found_and_the_fold_trained_again(
    two_seed_run, tiny_fxcache, tiny_params, tmp_path
):
    out = copy_run(two_seed_run, tmp_path / "out")
    (out / OTHER_SEED / "fold_0" / "weights.pt").write_bytes(b"garbage")

    code, console = rerun(tiny_fxcache, out, tiny_params)

    assert code == 0, console
    assert f"fold 0: {OTHER_SEED}/fold_0/weights.pt does not match its checksum" in console
    assert (out / OTHER_SEED / "fold_0" / "weights.pt").read_bytes() != b"garbage"


def test_overwrite_clears_the_earlier_runs_seed_and_holdout_folders(
    two_seed_run, tiny_fxcache, tiny_params, tmp_path
):
    out = copy_run(two_seed_run, tmp_path / "out")
    holdout = out / "holdout" / "fold_2"
    holdout.mkdir(parents=True)
    (holdout / "report.json").write_text("{}")

    assert main(train_argv(tiny_fxcache, out, tiny_params, *ONE_FOLD, "--overwrite")) == 0

    assert not (out / OTHER_SEED).exists() and not (out / "holdout").exists()
    assert (out / "fold_0" / "weights.pt").exists()


@pytest.mark.parametrize(
    ("name", "owned"),
    [
        ("seed_12/fold_0/weights.pt", True),
        ("holdout/fold_3/positions.npy", True),
        ("seed_12/weights.pt", False),
        ("seed_x/fold_0/weights.pt", False),
        ("holdout/fold_3/notes.txt", False),
    ],
)
def test_seed_and_holdout_files_are_known_by_name(name, owned):
    assert run_file(name) is owned


def test_overwrite_refuses_a_file_of_its_own_in_a_seed_folder(tmp_path):
    (tmp_path / "seed_12").mkdir()
    (tmp_path / "seed_12" / "notes.txt").write_text("mine")

    with pytest.raises(Exception, match="seed_12/notes.txt was not written by a foxhunt run"):
        overwrite_plan(str(tmp_path))
