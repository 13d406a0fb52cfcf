"""dqn.n_step 0: the run holds the TD target 30 bars where a change of position costs a large share of a bar's
move, and keeps the one-bar target elsewhere, reading only the first fold's training rows."""

import json

import numpy as np
import pytest
import torch
from support import strict_json
from support.run_cases import ONE_FOLD, TINY_DQN, train_argv

from foxhunt.cli import main
from foxhunt.config import DQNConfig
from foxhunt.config.dqn import HELD_N_STEP, choose_n_step, trainer_configs
from foxhunt.data.folds import FoldRange
from foxhunt.data.fxcache import read_fxcache
from foxhunt.run.n_step_choice import first_training_returns, n_step_line, training_noise

BP = 1e-4


def test_the_shipped_n_step_is_chosen_by_the_run_at_a_switch_of_half_the_noise():
    config = DQNConfig()
    assert (config.n_step, config.n_step_switch, HELD_N_STEP) == (0, 0.5, 30)


def test_a_cost_of_fx_minute_bars_holds_the_target_thirty_bars():
    # EURUSD 2018-19 minute bars: 1.32 bp of one-bar noise in the first fold, a 1 bp cost (0.76x)
    assert choose_n_step(DQNConfig(cost=1 * BP), noise=1.32 * BP).n_step == 30


def test_a_cost_of_exactly_the_switch_holds_the_target():
    assert choose_n_step(DQNConfig(cost=1 * BP), noise=2 * BP).n_step == 30


def test_a_cost_just_under_the_switch_keeps_the_one_bar_target():
    assert choose_n_step(DQNConfig(cost=1 * BP), noise=2.001 * BP).n_step == 1


def test_a_cost_small_against_the_noise_keeps_the_one_bar_target():
    # the sample's bars: 4.7 bp of noise against 1 bp (0.21x)
    assert choose_n_step(DQNConfig(cost=1 * BP), noise=4.7 * BP).n_step == 1


def test_the_switch_setting_moves_the_choice():
    assert choose_n_step(DQNConfig(cost=1 * BP, n_step_switch=0.2), noise=4.7 * BP).n_step == 30


def test_no_cost_keeps_the_one_bar_target_even_on_still_bars():
    assert choose_n_step(DQNConfig(cost=0.0), noise=0.0).n_step == 1


def test_a_cost_on_still_bars_holds_the_target():
    assert choose_n_step(DQNConfig(cost=1 * BP), noise=0.0).n_step == 30


@pytest.mark.parametrize("given", [1, 5, 60])
def test_an_n_step_given_is_kept_whatever_the_cost(given):
    assert choose_n_step(DQNConfig(cost=1e-2, n_step=given), noise=BP).n_step == given


def test_a_trainer_given_an_unchosen_n_step_trains_the_one_bar_target():
    assert [c.n_step for c in trainer_configs([DQNConfig(), DQNConfig(n_step=5)])] == [1, 5]


def test_the_noise_is_the_population_deviation_of_the_pooled_pieces():
    a, b = np.array([0.0, 2e-4, -1e-4]), torch.tensor([3e-4, -2e-4])
    assert training_noise([a, b]) == pytest.approx(np.concatenate([a, b.numpy()]).std())


def test_only_the_first_folds_training_rows_are_read():
    targets = np.zeros((100, 4))
    first = FoldRange(0, train_start=10, train_end=40, val_start=45, val_end=60, difficulty_score=0.0)
    targets[10:40, 0] = np.tile([1.0, -1.0], 15)
    before = training_noise(first_training_returns([targets], [first]))
    targets[:10, 0] = targets[40:, 0] = 50.0  # before the slice, the gap, validation and later folds
    assert training_noise(first_training_returns([targets], [first])) == before == pytest.approx(1.0)


def test_an_instrument_outside_the_first_fold_adds_no_rows():
    a, b = np.ones((20, 4)), np.full((20, 4), 9.0)
    fold = FoldRange(0, train_start=2, train_end=7, val_start=8, val_end=10, difficulty_score=0.0)
    assert [len(r) for r in first_training_returns([a, b], [fold, None])] == [5]


def test_the_console_says_the_cost_against_the_noise_and_the_switch():
    line = n_step_line(30, 1 * BP, 1.32 * BP, 0.5)
    assert line == (
        "n_step 30 (dqn.n_step 0 chooses): the reward's cost 1.00 bp is 0.76× the first fold's training "
        "bars' one-bar noise (1.32 bp), at or above n_step_switch 0.5"
    )
    assert "under n_step_switch 0.5" in n_step_line(1, 1 * BP, 4.7 * BP, 0.5)


def _one_fold(tiny_fxcache, tmp_path, *flags: str, **dqn) -> tuple[dict, str]:
    tmp_path.mkdir(exist_ok=True)
    params = tmp_path / "params.json"
    params.write_text(json.dumps({"dqn": {**TINY_DQN, **dqn}}))
    out = tmp_path / "out"
    assert main(train_argv(tiny_fxcache, out, params, *(flags or ONE_FOLD))) == 0
    return strict_json.read(out / "summary.json"), strict_json.read(out / "manifest.json")


@pytest.mark.slow
def test_a_run_whose_cost_is_near_the_noise_trains_the_held_target_and_says_so(
    tiny_fxcache, tmp_path, capsys
):
    summary, _ = _one_fold(tiny_fxcache, tmp_path, "--epochs", "1", cost=50 * BP)  # 3 folds: the first's rows
    fold = summary["folds"][0]
    assert len(summary["folds"]) == 3
    one_bar = read_fxcache(str(tiny_fxcache)).targets[fold["train_start"] : fold["train_end"], 0]
    noise = one_bar.astype(np.float64).std()
    assert summary["dqn_config"]["n_step"] == 30
    choice = summary["n_step_choice"]
    assert (choice["n_step"], choice["cost"], choice["n_step_switch"]) == (30, 50 * BP, 0.5)
    assert choice["noise"] == pytest.approx(noise) and choice["cost_over_noise"] == pytest.approx(
        50 * BP / noise
    )
    assert f"n_step 30 (dqn.n_step 0 chooses): the reward's cost 50.00 bp is {50 * BP / noise:.2f}×" in (
        capsys.readouterr().out
    )


@pytest.mark.slow
def test_a_run_on_the_sample_at_the_shipped_cost_keeps_the_one_bar_target(tiny_fxcache, tmp_path, capsys):
    summary, manifest = _one_fold(tiny_fxcache, tmp_path)
    assert summary["dqn_config"]["n_step"] == 1
    assert "n_step 1 (dqn.n_step 0 chooses)" in capsys.readouterr().out
    assert manifest["config"]["dqn"]["n_step"] == 0  # the setting as given: a resume chooses again


@pytest.mark.slow
def test_a_run_given_an_n_step_says_nothing_of_the_choice(tiny_fxcache, tmp_path, capsys):
    summary, _ = _one_fold(tiny_fxcache, tmp_path, n_step=5)
    assert summary["dqn_config"]["n_step"] == 5 and "n_step_choice" not in summary
    assert "dqn.n_step 0 chooses" not in capsys.readouterr().out


@pytest.mark.slow
def test_the_chosen_held_target_trains_as_a_given_n_step_of_thirty_does(tiny_fxcache, tmp_path):
    weights = {}
    for name, dqn in {"chosen": {}, "given": {"n_step": 30}, "one_bar": {"n_step": 1}}.items():
        _one_fold(tiny_fxcache, tmp_path / name, cost=50 * BP, **dqn)
        weights[name] = torch.load(tmp_path / name / "out" / "fold_0" / "weights.pt")
    same = [torch.equal(weights["chosen"][k], weights["given"][k]) for k in weights["given"]]
    differ = [torch.equal(weights["chosen"][k], weights["one_bar"][k]) for k in weights["one_bar"]]
    assert all(same) and not all(differ)


@pytest.mark.slow
def test_a_universe_run_chooses_on_its_instruments_first_fold_and_records_the_choice(tmp_path):
    from support.two_instruments import train, write_two_caches

    caches = write_two_caches(tmp_path)
    params = tmp_path / "held.json"
    params.write_text(json.dumps({"dqn": {"hidden": 16, "steps_per_epoch": 20, "cost": 50 * BP}}))
    code, console, errors = train(caches, str(params), tmp_path / "out")
    assert code == 0, errors
    assert "n_step 30 (dqn.n_step 0 chooses): the reward's cost 50.00 bp" in console
    summary = strict_json.read(tmp_path / "out" / "summary.json")
    assert summary["run_config"]["dqn"]["n_step"] == summary["n_step_choice"]["n_step"] == 30
