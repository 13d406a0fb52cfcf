"""Settings that explain and check themselves, one source of defaults, and a CLI that loads nothing heavy."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import MISSING, dataclass, fields

import pytest
from support.fresh_process import loaded_after

import foxhunt
from foxhunt.cli.commands import run_config
from foxhunt.cli.parser import build_parser
from foxhunt.config import (
    PIPELINE_EPOCHS,
    PIPELINE_FOLDS,
    DQNConfig,
    EvalConfig,
    FoldConfig,
    RunConfig,
    override,
)
from foxhunt.config.flags import ENUMS, FLAGS, describe, run_defaults
from foxhunt.config.setting import Bounds, check_fields, setting
from foxhunt.errors import BadInput, ConfigError

CONFIGS = (FoldConfig, DQNConfig, EvalConfig, RunConfig)


@pytest.mark.parametrize("cls", CONFIGS)
def test_every_field_has_a_one_line_doc(cls):
    for f in fields(cls):
        doc = f.metadata.get("doc", "")
        assert doc.endswith(".") and "\n" not in doc and len(doc) > 10, f"{cls.__name__}.{f.name}"


@pytest.mark.parametrize("cls", CONFIGS)
def test_every_default_passes_its_own_checks(cls):
    assert cls() == cls(**{f.name: getattr(cls(), f.name) for f in fields(cls)})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"compile": "false"}, "compile must be true or false, got str 'false'"),
        ({"compile": 0}, "compile must be true or false, got int 0"),
        ({"batch_size": 8192.9}, "batch_size must be an integer in [1, 16777216], got float 8192.9"),
        ({"batch_size": 8192.0}, "batch_size must be an integer in [1, 16777216], got float 8192.0"),
        ({"hidden": True}, "hidden must be an integer in [1, 16384] (units), got bool True"),
        ({"lr": "3e-4"}, "lr must be a finite number in (0, 10], got str '3e-4'"),
        ({"lr": True}, "lr must be a finite number in (0, 10], got bool True"),
        ({"hidden": None}, "hidden must be an integer in [1, 16384] (units), got NoneType None"),
    ],
)
def test_a_value_of_the_wrong_type_is_an_error_not_a_coercion(changes, message):
    with pytest.raises(ConfigError) as caught:
        DQNConfig(**changes)
    assert str(caught.value) == f"dqn config: {message}"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"gamma": 1.0}, "gamma must be a finite number in [0, 1), got 1.0"),
        ({"tau": 0.0}, "tau must be a finite number in (0, 1], got 0.0"),
        ({"eps_end": 1.5}, "eps_end must be a finite number in [0, 1], got 1.5"),
        ({"lr": float("nan")}, "lr must be a finite number in (0, 10], got nan"),
        ({"q_limit": float("inf")}, "q_limit must be a finite number in (0, 1e.30], got inf"),
        ({"cost": -1e-4}, "cost must be a finite number in [0, 1] (log-return units), got -0.0001"),
        ({"steps_per_graph": 0}, "steps_per_graph must be an integer in [1, 1024], got 0"),
    ],
)
def test_a_value_out_of_range_names_the_field_and_the_allowed_range(changes, message):
    with pytest.raises(
        ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
    ):
        DQNConfig(**changes)


def test_a_float_setting_without_an_upper_bound_still_refuses_infinity():
    @dataclass(frozen=True)
    class Unbounded:
        size: float = setting(1.0, "A size with no upper bound.", low=0)

        def __post_init__(self) -> None:
            check_fields(self, "unbounded config")

    with pytest.raises(ConfigError, match="size must be a finite number >= 0, got inf"):
        Unbounded(size=float("inf"))


def test_an_int_is_a_fine_float_and_is_stored_as_one():
    config = DQNConfig(lr=1, weight_decay=0)
    assert config.lr == 1.0 and type(config.lr) is float and type(config.weight_decay) is float


def test_the_range_edges_are_inclusive_or_open_as_declared():
    assert DQNConfig(gamma=0.0, tau=1.0, eps_start=0.0, eps_end=1.0).gamma == 0.0
    assert Bounds(0, 1, high_open=True).contains(0.999) and not Bounds(0, 1, high_open=True).contains(1.0)
    assert not Bounds(0, low_open=True).contains(0.0) and not Bounds(0).contains(float("nan"))


def test_evaluation_settings_are_checked_and_give_the_cost_per_unit_of_change():
    assert EvalConfig(cost=1e-4, spread=2e-4).cost_per_change == pytest.approx(2e-4)
    with pytest.raises(ConfigError, match=r"spread must be a finite number in \[0, 1\]"):
        EvalConfig(spread=-1e-4)


def test_a_nested_section_of_the_wrong_type_is_an_error():
    with pytest.raises(ConfigError, match="folds must be FoldConfig, got dict"):
        RunConfig(folds={"train_days": 3})


def test_override_names_the_source_and_lists_the_valid_keys():
    with pytest.raises(BadInput) as caught:
        override(DQNConfig(), {"learning_rate": 1e-3}, what="p.json")
    assert str(caught.value).startswith(
        "p.json: unknown key(s) learning_rate; valid keys: lr, gamma, batch_size"
    )


def test_override_checks_values_strictly():
    with pytest.raises(BadInput, match="p.json: dqn config: compile must be true or false"):
        override(DQNConfig(), {"compile": "false"}, what="p.json")
    assert override(DQNConfig(), {"batch_size": 1024, "lr": 1}, what="p.json").batch_size == 1024


def test_describe_gives_doc_range_and_default_per_field():
    line = next(x for x in describe(DQNConfig) if x.startswith("gamma:"))
    assert (
        line
        == "gamma: Discount factor of the TD target, per bar. Allowed: a finite number in [0, 1). Default: 0.9."
    )


def test_run_defaults_are_the_train_commands_defaults():
    args = build_parser().parse_args(["train", "--fxcache", "f", "--out", "o"])
    assert run_config(args) == RunConfig()
    assert run_defaults()["train-days"] == "120" and run_defaults()["eval-cost"] == "0.0001"
    assert run_defaults()["window"] == "expanding" and run_defaults()["epochs"] == "50"


def test_every_run_default_parses_back_to_the_default_config():
    argv = ["train", "--fxcache", "f", "--out", "o"]
    for flag, value in run_defaults().items():
        if value in ("", "false"):
            continue  # unset options and off switches are passed by leaving the flag out
        argv += [f"--{flag}"] if value == "true" else [f"--{flag}", value]
    assert run_config(build_parser().parse_args(argv)) == RunConfig()


def test_enums_are_the_parsers_choices():
    parser = build_parser()
    train = next(
        a for a in parser._subparsers._group_actions[0].choices["train"]._actions if a.dest == "window"
    )
    assert tuple(train.choices) == ENUMS["window"] == ("rolling", "expanding")
    assert set(ENUMS) == {"model", "device", "result", "window", "log-format", "eval-fill", "pictures"}
    assert ENUMS["pictures"] == ("on", "off")


def test_every_flag_sets_the_field_it_names():
    args = build_parser().parse_args(
        [
            "train",
            "--fxcache",
            "f",
            "--out",
            "o",
            "--val-days",
            "7",
            "--min-val-rows",
            "321",
            "--eval-spread",
            "0.0002",
            "--window",
            "expanding",
        ]
    )
    config = run_config(args)
    assert (config.folds.val_days, config.folds.min_val_rows, config.folds.mode) == (7.0, 321, "expanding")
    assert config.eval.spread == 0.0002 and config.dqn == DQNConfig()
    assert set(FLAGS) >= {"min-val-rows", "eval-cost", "eval-spread", "run-id", "overwrite"}


def test_the_pipeline_command_has_the_pipeline_defaults():
    config = run_config(build_parser().parse_args(["pipeline"]))
    assert config.folds == PIPELINE_FOLDS and config.epochs == PIPELINE_EPOCHS


@pytest.mark.parametrize("cls", CONFIGS)
def test_no_field_default_is_missing(cls):
    assert all(f.default is not MISSING or f.default_factory is not MISSING for f in fields(cls))


def test_building_the_parser_imports_nothing_heavy():
    heavy = ["torch", "numpy", "scipy", "pyarrow", "matplotlib"]
    assert loaded_after("from foxhunt.cli.parser import build_parser; build_parser()", heavy) == []


def test_version_prints_the_package_version_without_loading_torch():
    code = (
        "import sys; from foxhunt.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit as e:\n    print('exit', e.code)\n"
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split("\n")[:3] == [f"foxhunt {foxhunt.__version__}", "exit 0", "False"]
