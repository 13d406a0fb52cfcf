"""Bounds before work: every size setting has an upper bound, search spaces meet the same bounds, and
a run whose device memory would not hold it is refused, naming the setting, before it allocates."""

from __future__ import annotations

import json

import pytest
from support.run_cases import train_argv

from foxhunt.cli import main
from foxhunt.config import DQNConfig, FoldConfig, RunConfig
from foxhunt.errors import ConfigError, UsageError
from foxhunt.search.space import parse_search_space
from foxhunt.train import memory_estimate
from foxhunt.train.memory_estimate import check_device_memory, needed_bytes


@pytest.mark.parametrize(
    ("cls", "name", "value"),
    [
        (DQNConfig, "batch_size", 2**63),
        (DQNConfig, "hidden", 10**6),
        (DQNConfig, "steps_per_epoch", 10**9),
        (DQNConfig, "steps_per_graph", 10**6),
        (DQNConfig, "lr", 1e300),
        (DQNConfig, "reward_scale", 1e300),
        (FoldConfig, "train_days", 1e9),
        (FoldConfig, "val_days", 1e9),
        (FoldConfig, "min_train_rows", 10**12),
        (FoldConfig, "max_folds", 10**9),
        (RunConfig, "epochs", 10**9),
        (RunConfig, "trials", 10**9),
    ],
)
def test_every_size_setting_has_an_upper_bound(cls, name, value):
    with pytest.raises(ConfigError, match=rf"{name} must be .* in [\[(]"):
        cls(**{name: value})


@pytest.mark.parametrize(
    ("space", "named"),
    [
        ({"hidden": {"type": "int", "low": 16, "high": 10**6}}, "hidden"),
        ({"batch_size": {"type": "int", "low": 256, "high": 2**40}}, "batch_size"),
        ({"lr": {"type": "float", "low": 1e-300, "high": 1e300, "log": True}}, "lr"),
        ({"steps_per_epoch": {"type": "categorical", "choices": [10, 10**9]}}, "steps_per_epoch"),
    ],
)
def test_a_search_space_beyond_the_bounds_is_refused(space, named):
    with pytest.raises(ValueError, match=rf"outside what {named} allows"):
        parse_search_space(space, "space.json")


def test_the_estimate_grows_with_each_setting_as_its_buffers_do():
    base = needed_bytes(10_000, 42, 8_000, DQNConfig(hidden=64, batch_size=1024), chunk=4096)
    wider = needed_bytes(10_000, 42, 8_000, DQNConfig(hidden=128, batch_size=1024), chunk=4096)
    bigger = needed_bytes(10_000, 42, 8_000, DQNConfig(hidden=64, batch_size=2048), chunk=4096)
    assert bigger["batch_size"] == 2 * base["batch_size"] and bigger["hidden"] == base["hidden"]
    assert 2 * base["hidden"] < wider["hidden"] < 4 * base["hidden"]  # weights ~hidden², chunk ~hidden
    # n_step 0 (the run chooses, maybe a held target) counts the held returns' float
    assert base["rows"] == 10_000 * (46 * 4 + 8 + 4) and base["train_days"] == 8_000 * (28 + 16)
    assert (
        needed_bytes(10_000, 42, 8_000, DQNConfig(hidden=64, batch_size=1024), population=3, chunk=4096)[
            "hidden"
        ]
        == 3 * base["hidden"]
    )


def test_held_action_targets_add_one_float_per_training_row_and_member():
    one_bar = needed_bytes(10_000, 42, 8_000, DQNConfig(n_step=1), population=2, chunk=4096)
    for n_step in (5, 0):  # 0: the run may choose a held target
        held = needed_bytes(10_000, 42, 8_000, DQNConfig(n_step=n_step), population=2, chunk=4096)
        assert held["train_days"] - one_bar["train_days"] == 2 * 8_000 * 4


def test_a_run_that_would_not_fit_is_refused_naming_its_largest_setting(monkeypatch):
    monkeypatch.setattr(memory_estimate, "free_bytes", lambda device: 2**30)
    import torch

    with pytest.raises(
        UsageError, match=r"^batch_size: this run needs about .* GiB is free; lower batch_size"
    ):
        check_device_memory(torch.device("cpu"), 1000, 42, 800, DQNConfig(hidden=64, batch_size=2**24))
    assert check_device_memory(torch.device("cpu"), 1000, 42, 800, DQNConfig(hidden=64)) < 2**30


def test_a_train_too_big_for_the_machine_exits_2_before_work(tiny_fxcache, tmp_path, capsys):
    params = tmp_path / "huge.json"
    params.write_text(json.dumps({"dqn": {"hidden": 16384, "batch_size": 2**24}}))
    out = tmp_path / "out"
    assert main(train_argv(tiny_fxcache, out, params)) == 2
    err = capsys.readouterr().err.strip()
    assert "GiB is free; lower batch_size" in err and len(err.splitlines()) == 1
    assert not out.exists()  # a refused run leaves no --out behind


def test_val_days_longer_than_the_data_is_an_error_not_a_cut(tiny_fxcache, tiny_params, tmp_path, capsys):
    argv = train_argv(tiny_fxcache, tmp_path / "out", tiny_params)
    argv[argv.index("--val-days") + 1] = "10000"
    assert main(argv) == 2
    assert "val_days 10000 is longer than the data, which spans" in capsys.readouterr().err
