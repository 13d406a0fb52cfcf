"""A trial's fold, trained in a round beside other trials' folds (`--population P`: the slot loop), decides
on its own earlier folds' out-of-sample evidence, as a fold of a run does: the evidence a trial carries
between its rounds."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from support.search_cases import LR_ONLY, search_argv, space_file

from foxhunt.cli import main

# The pooled decision, with a tail to decide on (the tiny runs' default holds none back).
POOLED = {"dqn": {"hidden": 16, "batch_size": 256, "steps_per_epoch": 4, "select_tail_share": 0.2,
                  "select_pool": "pooled", "select_pool_t": 0.0}}  # fmt: skip


def pooled_windows(report: Path) -> list[list]:
    """The windows a fold's pooled decision weighed, as report.json records them."""
    return json.loads(report.read_text())["selection"]["pooled"]["windows"]


def test_each_trials_fold_in_a_round_weighs_its_own_earlier_folds_out_of_sample_windows(
    tiny_fxcache, tmp_path
):
    params, out = tmp_path / "pooled.json", tmp_path / "out"
    params.write_text(json.dumps(POOLED))
    space = space_file(tmp_path, LR_ONLY)
    argv = search_argv(tiny_fxcache, out, params, 3, "--search-space", str(space), "--pruner", "none",
                       "--population", "2", "--max-folds", "3", "--epochs", "2")  # fmt: skip
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0
    for trial in sorted((out / "trials").iterdir()):
        folds = sorted(int(p.name.split("_")[1]) for p in trial.glob("fold_*"))
        assert len(folds) == 3
        for k in folds:
            assert pooled_windows(trial / f"fold_{k}" / "report.json") == [
                [k, "tail"],
                *[[j, "out_of_sample"] for j in folds if j < k],
            ]
