"""A run with --seeds K and with tail selection: what it writes and reports."""

import json

import numpy as np
import pytest
import torch
from support import strict_json
from support.run_cases import ONE_FOLD, TINY_DQN, diverge_in_fold, quick_argv, train_argv

from foxhunt.cli import main
from foxhunt.evaluate.seed_spread import majority_positions

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

FEW_EPOCHS = ("--epochs", "3")


def _params(tmp_path, **dqn) -> str:
    path = tmp_path / "params.json"
    path.write_text(json.dumps({"dqn": {**TINY_DQN, **dqn}}))
    return path


def _flat_run(tiny_fxcache, tmp_path, *extra: str):
    """A run the tail gate makes flat in every fold (a gate of Sharpe 1000, decided fold by fold); its out."""
    out = tmp_path / "out"
    params = _params(
        tmp_path, select_tail_share=0.25, select_min_sharpe=1e3, select_min_t=0.0, select_pool="fold"
    )
    assert main(train_argv(tiny_fxcache, out, params, *extra)) == 0
    return out


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


def test_three_seeds_score_their_majority_from_the_seeds_own_positions(
    quick_run, tiny_fxcache, tiny_params, tmp_path, capsys
):
    # Catches: the majority voted on one seed's positions, or its figures left out of the summary.
    three = tmp_path / "three"
    assert main(quick_argv(tiny_fxcache, three, tiny_params, "--seeds", "3")) == 0
    majority = strict_json.read(three / "summary.json")["seed_spread"]["majority"]
    assert majority["members"] == [11, 12, 13]
    folders = [three, three / "seed_12", three / "seed_13"]
    voted = np.concatenate([majority_positions([_positions(f, fold) for f in folders]) for fold in range(3)])
    assert majority["exposure"] == pytest.approx(np.abs(voted).mean())
    assert (
        f"majority of 3 seeds (the side more than half hold, else flat): stitched net Sharpe {majority['sharpe']:.2f}"
        in capsys.readouterr().out
    )


def test_a_seed_that_diverged_is_named_as_left_out_of_the_spread(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch, capsys
):
    # Seed 13 (member 2) diverges in fold 1: the spread is of seeds 11 and 12, and says 13 was left out.
    diverge_in_fold(monkeypatch)
    out = tmp_path / "out"
    assert main(train_argv(tiny_fxcache, out, tiny_params, "--epochs", "1", "--seeds", "3")) == 0
    spread = strict_json.read(out / "summary.json")["seed_spread"]
    assert spread["seeds"] == [11, 12]
    assert spread["left_out"] == [{"seed": 13, "reason": "diverged in fold 1"}]
    assert "1 of 3 seeds left out of the spread: seed 13 (diverged in fold 1)" in capsys.readouterr().out


def test_each_extra_seed_trains_as_a_run_of_its_own_seed(tiny_fxcache, tiny_params, tmp_path):
    # --seeds 2 from seed 11: seed_12's fold is bit for bit a run with --seed 12, and not the seed-11 one.
    # Catches: every member trained from the run's seed (the folders named by seed, the weights all alike).
    both, alone = tmp_path / "both", tmp_path / "alone"
    assert main(train_argv(tiny_fxcache, both, tiny_params, *ONE_FOLD, "--seeds", "2")) == 0
    assert main(train_argv(tiny_fxcache, alone, tiny_params, *ONE_FOLD, "--seed", "12")) == 0
    extra, own = (torch.load(d / "fold_0" / "weights.pt") for d in (both / "seed_12", alone))
    assert extra.keys() == own.keys() and all(torch.equal(extra[k], own[k]) for k in own)
    first = torch.load(both / "fold_0" / "weights.pt")
    assert not torch.equal(first["0.weight"], extra["0.weight"])


def test_a_run_flat_in_every_fold_says_its_cost_against_the_validation_bars_one_bar_noise(
    tiny_fxcache, tmp_path, capsys
):
    # Catches: the noise of every row, or of another horizon than one bar, or no line under a flat run.
    from foxhunt.data.fxcache import read_fxcache

    out = _flat_run(tiny_fxcache, tmp_path, "--epochs", "1")
    summary = strict_json.read(out / "summary.json")
    one_bar = read_fxcache(str(tiny_fxcache)).targets[:, 0].astype(np.float64)
    rows = np.concatenate([one_bar[f["val_start"] : f["val_end"]] for f in summary["folds"]])
    cost, noise = summary["eval_config"]["cost"], rows.std()
    said = f"cost: {cost * 1e4:.2f} bp a unit of position change, {cost / noise:.2f}× the validation bars' "
    assert f"{said}one-bar noise ({noise * 1e4:.2f} bp, their standard deviation)" in capsys.readouterr().out


def test_a_run_that_traded_says_nothing_of_its_cost_against_the_noise(tiny_fxcache, tmp_path, capsys):
    out = tmp_path / "out"
    params = _params(tmp_path, select_tail_share=0.25, select_min_sharpe=-1e3, select_pool="fold")
    assert main(train_argv(tiny_fxcache, out, params, "--epochs", "1")) == 0
    assert "the validation bars' one-bar noise" not in capsys.readouterr().out


def test_each_fold_reports_the_epoch_chosen_on_the_training_tail(tiny_fxcache, tmp_path):
    out = tmp_path / "out"
    params = _params(tmp_path, select_tail_share=0.25, select_min_sharpe=-1e3, select_pool="fold")
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
    out = _flat_run(tiny_fxcache, tmp_path, *FEW_EPOCHS)
    console = capsys.readouterr()
    for fold, report in fold_reports(out).items():
        assert report["selection"]["gate_sharpe"] == 1e3 and report["warnings"] == []
        assert f"fold {fold} member 0: epoch" in console.out + console.err
    assert "gate 1000.00); the policy is flat: no edge found" in console.out + console.err


def test_a_run_flat_in_every_fold_says_so_with_each_folds_tail_sharpe_and_gate(
    tiny_fxcache, tmp_path, capsys
):
    # Catches: the run's console reading `PSR(>0) 0.00` and `hit rate 0.0%` for a run that never traded.
    out = _flat_run(tiny_fxcache, tmp_path, "--epochs", "1")
    console = capsys.readouterr().out
    figures = ", ".join(
        f"{r['selection']['tail_sharpe']:.2f} against 1000.00 (fold {fold})"
        for fold, r in fold_reports(out).items()
    )
    words = f"flat in every fold: the gate found no edge; learned tail Sharpe {figures}"
    assert words in console and "PSR(>0)" not in console and "hit rate 0.0%" not in console
    assert strict_json.read(out / "summary.json")["flat_reading"] == words
    table = [
        line for line in console.splitlines() if "flat: the gate found no edge; learned tail Sharpe" in line
    ]
    assert len(table) == 3  # each fold's row of the table says it in words


def test_the_seeds_fold_policies_voted_bar_by_bar_give_the_positions_their_majority_scored(
    tiny_fxcache, tiny_params, tmp_path
):
    # Catches: an extra seed's fold folder that cannot be loaded, or a vote of one policy's rollout.
    from foxhunt.data.fxcache import read_fxcache
    from foxhunt.evaluate.fold_policy import load_policy, majority_rollout

    three = tmp_path / "three"
    assert main(quick_argv(tiny_fxcache, three, tiny_params, "--seeds", "3")) == 0
    features = read_fxcache(str(tiny_fxcache)).features
    folders = [three, three / "seed_12", three / "seed_13"]
    folds = range(len(strict_json.read(three / "summary.json")["folds"]))
    differ = [
        not np.array_equal(_positions(three, f), majority_positions([_positions(d, f) for d in folders]))
        for f in folds
    ]
    assert any(differ)  # the vote is not the first seed's, so this test tells them apart
    for report in strict_json.read(three / "summary.json")["folds"]:
        fold = report["fold"]
        policies = [load_policy(str(f / f"fold_{fold}")) for f in folders]
        rows = features[report["val_start"] : report["val_end"]]
        voted = majority_positions([_positions(f, fold) for f in folders])
        assert np.array_equal(majority_rollout(policies, rows), voted)


def test_the_seeds_vote_is_scored_once_on_the_stitched_record_not_fold_by_fold(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    # Catches: the vote's fold windows scored too (one window a fold, none of them read).
    from foxhunt.run import walk_forward

    windows: list[int] = []
    score = walk_forward.evaluate_window
    monkeypatch.setattr(walk_forward, "evaluate_window", lambda *a, **k: windows.append(1) or score(*a, **k))
    assert main(quick_argv(tiny_fxcache, tmp_path / "three", tiny_params, "--seeds", "3")) == 0
    assert len(windows) == 1
