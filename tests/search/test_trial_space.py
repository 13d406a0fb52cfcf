"""Search spaces: read from YAML or JSON, checked strictly against the DQN settings, sampled inside them."""

from __future__ import annotations

import json

import optuna
import pytest

from foxhunt.config import DQNConfig
from foxhunt.config.search import DEFAULT_SEARCH_SPACE
from foxhunt.search.space import (
    SHAPE_SETTINGS,
    SearchSpaceError,
    load_search_space,
    parse_search_space,
    suggest,
)


def test_default_search_space_names_only_shape_free_dqn_settings_and_passes_its_own_checks():
    assert set(DEFAULT_SEARCH_SPACE) <= set(DQNConfig.__dataclass_fields__)
    assert not set(DEFAULT_SEARCH_SPACE) & SHAPE_SETTINGS
    as_file = {key: d.to_dict() for key, d in DEFAULT_SEARCH_SPACE.items()}
    assert parse_search_space(as_file, "default") == DEFAULT_SEARCH_SPACE


def test_yaml_and_json_files_give_the_same_space_with_exponent_numbers_read_as_numbers(tmp_path):
    spec = {
        "dqn": {
            "lr": {"type": "float", "low": 1e-5, "high": 1e-3, "log": True},
            "hidden": {"type": "int", "low": 64, "high": 512, "step": 64},
            "batch_size": {"type": "categorical", "choices": [4096, 8192]},
        }
    }
    (tmp_path / "s.json").write_text(json.dumps(spec))
    (tmp_path / "s.yaml").write_text(
        "dqn:\n  lr: {type: float, low: 1e-5, high: 1e-3, log: true}\n"
        "  hidden: {type: int, low: 64, high: 512, step: 64}\n"
        "  batch_size: {type: categorical, choices: [4096, 8192]}\n"
    )
    from_json, from_yaml = (
        load_search_space(str(tmp_path / "s.json")),
        load_search_space(str(tmp_path / "s.yaml")),
    )
    assert from_json == from_yaml
    assert from_yaml["lr"].low == 1e-5 and from_yaml["hidden"].step == 64


@pytest.mark.parametrize(
    "key, spec, expected",
    [
        ("learning_rate", {"type": "float", "low": 0.1, "high": 0.2}, "not a DQN setting"),
        ("hidden", {"type": "float", "low": 64.0, "high": 512.0}, "a float distribution for a int setting"),
        ("lr", {"type": "int", "low": 1, "high": 3}, "a int distribution for a float setting"),
        ("hidden", {"type": "int", "low": 64.0, "high": 512}, "low must be an integer"),
        ("batch_size", {"type": "categorical", "choices": [4096, "8192"]}, "choice '8192' is not a int"),
        ("batch_size", {"type": "categorical", "choices": [True, 8192]}, "choice True is not a int"),
        ("gamma", {"type": "float", "low": 0.99, "high": 0.8}, "low (0.99) must be below high (0.8)"),
        ("gamma", {"type": "float", "low": 0.9, "high": 0.9}, "must be below high"),
        ("lr", {"type": "float", "low": 0.0, "high": 1e-3, "log": True}, "log distribution needs low > 0"),
        ("hidden", {"type": "int", "low": 64, "high": 500, "step": 64}, "not a multiple of step"),
        ("hidden", {"type": "int", "low": 64, "high": 512, "step": 64, "log": True}, "step and log"),
        ("gamma", {"type": "float", "low": 0.8, "hgh": 0.9}, "unknown field(s) hgh"),
        ("gamma", {"type": "normal", "low": 0.8, "high": 0.9}, "type is 'normal'"),
        ("gamma", {"type": "float", "low": 0.8, "high": float("nan")}, "high must be a finite number"),
        ("gamma", {"type": "float", "low": 0.9, "high": 1.0}, "high 1.0 is outside what gamma allows: "),
        ("lr", {"type": "categorical", "choices": [0.0, 1e-3]}, "choice 0.0 is outside what lr allows: "),
        ("eval_cost", {"type": "float", "low": 0.0, "high": 1e-3}, "evaluation setting"),
        ("spread", {"type": "float", "low": 0.0, "high": 1e-3}, "evaluation setting"),
        ("compile", {"type": "categorical", "choices": [True, False]}, "not a hyperparameter"),
        ("n_step", {"type": "int", "low": 0, "high": 15}, "n_step 0 is the run's own choice"),
        ("n_step", {"type": "categorical", "choices": [0, 5]}, "n_step 0 is the run's own choice"),
    ],
)
def test_a_search_space_that_cannot_be_searched_is_refused_naming_the_file_and_key(
    tmp_path, key, spec, expected
):
    path = tmp_path / "space.json"
    path.write_text(json.dumps({key: spec}))
    with pytest.raises(SearchSpaceError) as err:
        load_search_space(str(path))
    assert str(err.value).startswith(f"{path}: {key}: ")
    assert expected in str(err.value)


def test_n_step_from_one_is_searchable():
    assert parse_search_space({"n_step": {"type": "int", "low": 1, "high": 15}}, "f")["n_step"].low == 1


def test_the_training_reward_cost_is_searchable():
    space = parse_search_space({"cost": {"type": "float", "low": 0.0, "high": 2e-4}}, "f")
    assert space["cost"].high == 2e-4


def test_a_duplicated_key_is_refused_in_yaml_and_in_json(tmp_path):
    (tmp_path / "d.yaml").write_text(
        "lr: {type: float, low: 1e-5, high: 1e-3}\nlr: {type: float, low: 1, high: 2}\n"
    )
    (tmp_path / "d.json").write_text('{"lr": {"type": "float", "low": 1e-5, "high": 1e-3}, "lr": {}}')
    for name in ("d.yaml", "d.json"):
        with pytest.raises(SearchSpaceError, match="duplicate key"):
            load_search_space(str(tmp_path / name))


def test_suggest_draws_every_setting_inside_its_distribution(tmp_path):
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    space = parse_search_space(
        {
            "hidden": {"type": "int", "low": 64, "high": 512, "step": 64},
            "lr": {"type": "float", "low": 1e-5, "high": 1e-3, "log": True},
            "batch_size": {"type": "categorical", "choices": [4096, 8192]},
        },
        "f",
    )
    for _ in range(20):
        params = suggest(study.ask(), space)
        assert params["hidden"] % 64 == 0 and 64 <= params["hidden"] <= 512
        assert 1e-5 <= params["lr"] <= 1e-3 and params["batch_size"] in (4096, 8192)


def test_a_step_of_zero_is_refused_as_not_positive():
    with pytest.raises(SearchSpaceError, match="f: gamma: step must be positive, found 0"):
        parse_search_space({"gamma": {"type": "float", "low": 0.8, "high": 0.9, "step": 0}}, "f")


def test_choices_that_repeat_a_value_are_refused():
    with pytest.raises(SearchSpaceError, match="f: batch_size: choices repeat a value"):
        parse_search_space({"batch_size": {"type": "categorical", "choices": [4096, 8192, 4096]}}, "f")


def test_a_dqn_key_beside_other_settings_is_refused_not_unwrapped():
    gamma = {"type": "float", "low": 0.8, "high": 0.9}
    with pytest.raises(SearchSpaceError, match="f: dqn: not a DQN setting"):
        parse_search_space({"dqn": {"gamma": gamma}, "lr": {"type": "float", "low": 1e-5, "high": 1e-3}}, "f")


@pytest.mark.parametrize(
    "key", ["compile", "bf16", "steps_per_graph", "paired_next_state", "fused_activation", "q_limit"]
)
def test_machinery_and_guard_settings_are_not_searchable(key):
    with pytest.raises(SearchSpaceError, match=f"f: {key}: not searchable, a .* not a hyperparameter"):
        parse_search_space({key: {"type": "categorical", "choices": [1]}}, "f")


def test_suggest_samples_a_log_distribution_on_the_log_scale():
    trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1)).ask()
    suggest(trial, parse_search_space({"lr": {"type": "float", "low": 1e-5, "high": 1e-3, "log": True}}, "f"))
    assert trial.distributions["lr"] == optuna.distributions.FloatDistribution(1e-5, 1e-3, log=True)


def test_suggest_draws_an_int_range_without_a_step_as_whole_numbers():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    space = parse_search_space({"n_step": {"type": "int", "low": 1, "high": 15}}, "f")
    drawn = [suggest(study.ask(), space)["n_step"] for _ in range(20)]
    assert all(isinstance(n, int) and 1 <= n <= 15 for n in drawn)
