"""`--diagnostics-every K` reaches a search's trials and its holdout fold: their folds' epochs have the
greedy policy's diagnostics on epochs K, 2K, ... and the last, and record null on the others."""

import json

from support.search_cases import LR_ONLY, search_argv, space_file

from foxhunt.cli import main

DIAGNOSTICS = ("action_shares", "train_sharpe", "val_sharpe", "feature_agreement")


def _diagnosed(report_path) -> list[bool]:
    epochs = json.loads(report_path.read_text())["epochs"]
    assert all(
        all(e[k] is None for k in DIAGNOSTICS) or None not in [e[k] for k in DIAGNOSTICS] for e in epochs
    )
    return [e["val_sharpe"] is not None for e in epochs]


def test_a_searchs_trials_and_holdout_run_the_diagnostics_every_k_epochs_and_on_the_last(
    tiny_fxcache, tiny_params, tmp_path
):
    out = tmp_path / "out"
    extra = ["--search-space", str(space_file(tmp_path, LR_ONLY)), "--epochs", "5", "--max-folds", "1"]
    extra += ["--holdout-days", "2", "--pruner", "none", "--diagnostics-every", "2"]
    assert main(search_argv(tiny_fxcache, out, tiny_params, 1, *extra)) == 0
    folds = sorted(out.glob("trials/*/fold_*/report.json")) + sorted(out.glob("holdout/fold_*/report.json"))
    assert len(folds) == 2  # the trial's fold and the holdout fold
    for report in folds:
        assert _diagnosed(report) == [False, True, False, True, True], report


def test_unset_a_searchs_trials_diagnose_each_folds_last_epoch_and_its_holdout_every_epoch(
    tiny_fxcache, tiny_params, tmp_path
):
    out = tmp_path / "out"
    extra = ["--search-space", str(space_file(tmp_path, LR_ONLY)), "--epochs", "3", "--max-folds", "1"]
    extra += ["--holdout-days", "2", "--pruner", "none"]
    assert main(search_argv(tiny_fxcache, out, tiny_params, 1, *extra)) == 0
    (trial,) = sorted(out.glob("trials/*/fold_*/report.json"))
    (holdout,) = sorted(out.glob("holdout/fold_*/report.json"))
    assert (_diagnosed(trial), _diagnosed(holdout)) == ([False, False, True], [True, True, True])
