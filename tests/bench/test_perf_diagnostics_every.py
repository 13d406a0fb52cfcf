"""bench/perf_targets.py's `--diagnostics-every` variant: the command lines the CLI accepts, the folds'
diagnosed epochs and untimed seconds read from summary.json, medians over the succeeded runs only."""

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import perf_runs  # noqa: E402
import perf_targets  # noqa: E402

from foxhunt.cli.commands import run_config  # noqa: E402
from foxhunt.cli.parser import build_parser  # noqa: E402
from foxhunt.config import FoldConfig  # noqa: E402


def _config_of(command: list[str]):
    assert command[1:4] == ["-m", "foxhunt", "train"]
    return run_config(build_parser().parse_args(command[3:]))


def test_the_benchmarks_command_sets_diagnostics_every_as_the_cli_reads_it(tmp_path):
    params = tmp_path / "params.json"
    params.write_text('{"dqn": {"batch_size": 8192}}')
    args = (Path("fx.arrow"), Path("out"), FoldConfig(), 50, "cuda", params)
    assert _config_of(perf_runs.train_command(*args, 10)).diagnostics_every == 10
    default = perf_runs.train_command(*args)
    assert "--diagnostics-every" not in default  # so a commit from before the flag runs it too
    assert _config_of(default).diagnostics_every == 1


def test_a_folds_untimed_seconds_are_its_seconds_outside_the_phases_and_diagnosed_epochs_count():
    epoch = {"collect_seconds": 0.1, "train_seconds": 0.2, "steps": 5}
    fold = {
        "fold": 0,
        "train_start": 0,
        "train_end": 100,
        "epochs": [
            {**epoch, "val_sharpe": None},
            {**epoch, "val_sharpe": 0.0},
            {**epoch, "val_sharpe": -1.5},
        ],
        "phases": dict.fromkeys(("reset", "normalize", "collect", "train", "validate", "checkpoint"), 0.5),
        "fold_seconds": 4.25,
    }
    figures = perf_runs.fold_figures(fold)
    assert figures["diagnosed_epochs"] == 2  # a Sharpe of 0.0 is a diagnosed epoch, None is not
    assert figures["untimed_seconds"] == pytest.approx(1.25)


def _run(wall: float, untimed: float, status: str = "succeeded") -> dict:
    return {
        "status": status,
        "wall_seconds": wall,
        "run_seconds": wall - 5,
        "untimed_seconds_total": untimed,
        "folds": [{"diagnosed_epochs": 17}, {"diagnosed_epochs": 17}],
    }


def test_each_value_is_compared_by_medians_over_its_succeeded_runs():
    table = perf_targets.diagnostics_comparison(
        {1: [_run(50, 9), _run(52, 11), _run(10, 0, "failed")], 10: [_run(40, 1), _run(44, 3), _run(42, 2)]}
    )
    assert table["1"] == {
        "runs": 2,
        "wall_seconds_median": 51,
        "run_seconds_median": 46,
        "untimed_seconds_median": 10,
        "diagnosed_epochs": 34,
    }
    assert table["10"]["wall_seconds_median"] == 42 and table["10"]["runs"] == 3


@pytest.mark.parametrize(("text", "values"), [("1", [1]), ("1,10", [1, 10]), ("5,1", [5, 1])])
def test_the_values_are_read_in_order(text, values):
    assert perf_targets._epoch_counts(text) == values


@pytest.mark.parametrize("text", ["0", "1,0", "1,x", ""])
def test_a_value_below_one_or_not_a_number_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        perf_targets._epoch_counts(text)
