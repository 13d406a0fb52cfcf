"""The held-out fold decides as every fold of the walk did: its pooled decision weighs the out-of-sample
windows of the folds that walked before it (all end before the held-out period), for a run and for a
search's best trial, not its own training tail alone."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from support.run_cases import train_argv
from support.search_cases import LR_ONLY, search_argv, space_file

from foxhunt.cli import main

# The pooled decision, with a tail to decide on (the tiny runs' default holds none back).
POOLED = {"dqn": {"hidden": 16, "batch_size": 256, "steps_per_epoch": 4, "select_tail_share": 0.2,
                  "select_pool": "pooled", "select_pool_t": 0.0}}  # fmt: skip
FOLDS = ("--holdout-days", "2", "--max-folds", "3", "--epochs", "2")  # after the tiny runs' own folds


def pooled_windows(report: Path) -> list[list]:
    """The windows a fold's pooled decision weighed, as report.json records them."""
    return json.loads(report.read_text())["selection"]["pooled"]["windows"]


def earlier_windows(folder: Path, folds: int) -> list[list]:
    """The out-of-sample windows `folds` folds under `folder` recorded, in fold order."""
    return [[k, "out_of_sample"] for k in range(folds) if (folder / f"fold_{k}").is_dir()]


@pytest.fixture
def params(tmp_path) -> Path:
    path = tmp_path / "pooled.json"
    path.write_text(json.dumps(POOLED))
    return path


def test_a_runs_held_out_fold_weighs_the_runs_out_of_sample_windows(tiny_fxcache, params, tmp_path):
    out = tmp_path / "out"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(train_argv(tiny_fxcache, out, params, *FOLDS)) == 0
    (holdout,) = (out / "holdout").glob("fold_*")
    assert pooled_windows(holdout / "report.json") == [
        [int(holdout.name.split("_")[1]), "tail"],
        *earlier_windows(out, 3),
    ]


def test_a_searchs_held_out_fold_weighs_its_best_trials_out_of_sample_windows(tiny_fxcache, params, tmp_path):
    out = tmp_path / "out"
    space = space_file(tmp_path, LR_ONLY)
    argv = search_argv(tiny_fxcache, out, params, 2, "--search-space", str(space), "--pruner", "none", *FOLDS)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0
    best = json.loads((out / "study.json").read_text())["best"]["number"]
    (holdout,) = (out / "holdout").glob("fold_*")
    assert pooled_windows(holdout / "report.json")[1:] == earlier_windows(out / "trials" / f"{best:04d}", 3)
