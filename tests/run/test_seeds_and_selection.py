"""A run with --seeds K and with tail selection: what it writes and reports."""

import json

import numpy as np
from support import strict_json
from support.run_cases import TINY_DQN, quick_argv, train_argv

from foxhunt.cli import main

FEW_EPOCHS = ("--epochs", "3")


def _params(tmp_path, **dqn) -> str:
    path = tmp_path / "params.json"
    path.write_text(json.dumps({"dqn": {**TINY_DQN, **dqn}}))
    return path


def fold_reports(out) -> dict[int, dict]:
    return {
        int(d.name.split("_")[1]): strict_json.read(d / "report.json") for d in sorted(out.glob("fold_*"))
    }


def _positions(out, fold: int) -> np.ndarray:
    return np.load(out / f"fold_{fold}" / "positions.npy")


def test_seeds_side_by_side_keep_member_zero_as_the_run_and_report_the_spread(
    quick_run, tiny_fxcache, tiny_params, tmp_path
):
    one, three = quick_run.out, tmp_path / "three"  # the session's quick run is the run of one seed
    assert main(quick_argv(tiny_fxcache, three, tiny_params, "--seeds", "3")) == 0
    for fold in range(3):  # member 0 is the run of one, bit for bit
        assert np.array_equal(_positions(one, fold), _positions(three, fold))
    assert (three / "seed_12" / "fold_2" / "positions.npy").exists()
    assert (three / "seed_13" / "fold_2" / "weights.pt").exists()
    spread = strict_json.read(three / "summary.json")["seed_spread"]
    assert spread["seeds"] == [11, 12, 13]
    stitched = strict_json.read(one / "summary.json")["stitched"]
    assert spread["sharpe"]["11"] == stitched["policies"]["model"]["net"]["sharpe"]
    assert spread["median"] == float(np.median(list(spread["sharpe"].values())))
    assert "seed_spread" not in strict_json.read(one / "summary.json")


def test_each_fold_reports_the_epoch_chosen_on_the_training_tail(tiny_fxcache, tmp_path):
    out = tmp_path / "out"
    params = _params(tmp_path, select_tail_share=0.25, select_min_sharpe=-1e3)
    assert main(train_argv(tiny_fxcache, out, params, *FEW_EPOCHS)) == 0
    for report in fold_reports(out).values():
        selection = report["selection"]
        assert len(selection["tail_sharpes"]) == 3 and not selection["went_flat"]
        best = max(selection["tail_sharpes"])
        assert selection["tail_sharpe"] == best
        assert selection["selected_epoch"] == selection["tail_sharpes"].index(best)


def test_folds_that_find_nothing_on_the_tail_trade_nothing(tiny_fxcache, tmp_path):
    out = tmp_path / "out"
    params = _params(tmp_path, select_tail_share=0.25, select_min_sharpe=1e3)
    assert main(train_argv(tiny_fxcache, out, params, *FEW_EPOCHS)) == 0
    for fold, report in fold_reports(out).items():
        assert report["selection"]["went_flat"]
        assert not _positions(out, fold).any()


def test_a_flat_fold_names_its_gate_and_carries_no_warning_of_the_policy_it_does_not_trade(
    tiny_fxcache, tmp_path, capsys
):
    out = tmp_path / "out"
    params = _params(tmp_path, select_tail_share=0.25, select_min_sharpe=1e3, select_min_t=0.0)
    assert main(train_argv(tiny_fxcache, out, params, *FEW_EPOCHS)) == 0
    console = capsys.readouterr()
    for fold, report in fold_reports(out).items():
        assert report["selection"]["gate_sharpe"] == 1e3 and report["warnings"] == []
        assert f"fold {fold} member 0: epoch" in console.out + console.err
    assert "gate 1000.00); the policy is flat: no edge found" in console.out + console.err
