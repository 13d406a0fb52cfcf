"""bench/real_shape.py: a plain `foxhunt train` at the default folds, the per-fold medians and the run medians."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import real_shape  # noqa: E402

from foxhunt.cli.commands import run_config  # noqa: E402
from foxhunt.cli.parser import build_parser  # noqa: E402
from foxhunt.config import FoldConfig  # noqa: E402


def test_the_command_trains_at_the_default_folds_and_sets_diagnostics_every_only_when_asked():
    plain = real_shape.train_command(Path("fx.arrow"), Path("out"), 50, "cuda", 1)
    config = run_config(build_parser().parse_args(plain[3:]))
    assert config.folds == FoldConfig() and config.epochs == 50 and config.diagnostics_every == 1
    assert "--diagnostics-every" not in plain
    spaced = real_shape.train_command(Path("fx.arrow"), Path("out"), 50, "cuda", 10)
    assert run_config(build_parser().parse_args(spaced[3:])).diagnostics_every == 10


def _fold(validate: float, untimed: float, epochs: int = 50) -> dict:
    return {
        "validate_seconds": validate, "untimed_seconds": untimed, "fold_seconds": 1.0, "train_rows": 100,
        "epochs": epochs, "collect_seconds_median": 0.01, "train_seconds_median": 0.03,
    }  # fmt: skip


def test_fold_medians_are_medians_over_the_folds_and_training_counts_every_epoch():
    got = real_shape.fold_medians({"folds": [_fold(0.1, 1.0), _fold(0.5, 2.0), _fold(0.2, 9.0)]})
    assert got["fold_count"] == 3
    assert got["validate_seconds_median"] == 0.2 and got["validate_seconds_max"] == 0.5
    assert got["untimed_seconds_median"] == 2.0
    assert abs(got["training_seconds_total"] - 3 * 50 * 0.04) < 1e-12


def _run(wall: float, run: float, exit_code: int = 0) -> dict:
    figures = {"run_seconds": run, "data_load_seconds": 0.5, "build_seconds": 5.0, "validate_seconds_median": 0.1,
               "untimed_seconds_total": 1.0, "outside_folds_seconds": 2.0}  # fmt: skip
    return {"exit_code": exit_code, "wall_seconds": wall, **figures}


def test_run_medians_leave_out_failed_runs_and_the_time_before_run_seconds_is_wall_less_run():
    got = real_shape.summarise(
        [_run(30.0, 24.0), _run(40.0, 31.0), _run(35.0, 28.0), _run(1.0, 0.0, exit_code=2)]
    )
    assert got["runs"] == 3
    assert got["wall_seconds"] == 35.0 and got["run_seconds"] == 28.0
    assert got["before_run_seconds"] == 7.0  # median of 6, 9, 7
    assert real_shape.summarise([_run(1.0, 0.0, exit_code=1)]) == {"runs": 0}
