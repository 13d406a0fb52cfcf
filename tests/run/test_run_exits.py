"""Every way a command ends: exit codes, one line on stderr, and the one place that closes a run."""

from __future__ import annotations

import json
import os
import signal

import pytest
from support import strict_json
from support.run_cases import completed_folds, fold_outputs, quick_argv

from foxhunt.cli import main
from foxhunt.run import walk_forward
from foxhunt.train import DQNTrainer

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow


def summary_of(out) -> dict:
    return strict_json.read(out / "summary.json")


def fail_in_fold(monkeypatch, fold: int, action) -> None:
    """Make `action()` happen at the second epoch of `fold`, then train as usual."""
    original = DQNTrainer.train_epoch

    def train_epoch(self, epoch, epochs, active=None, on_replay=None, **options):
        if self.window.fold.fold == fold and epoch == 1:
            action()
        return original(self, epoch, epochs, active, on_replay, **options)

    monkeypatch.setattr(DQNTrainer, "train_epoch", train_epoch)


def test_an_unexpected_exception_inside_a_fold_is_a_run_failure_with_a_failed_summary(
    monkeypatch, tiny_fxcache, tiny_params, tmp_path, capsys
):
    def boom():
        raise ValueError("boom in the trainer")  # a ValueError: bad input outside a run, a failure inside

    fail_in_fold(monkeypatch, 1, boom)
    out = tmp_path / "out"
    assert main(quick_argv(tiny_fxcache, out, tiny_params)) == 1
    err = capsys.readouterr().err.strip()
    assert "fold 1 failed" in err and "boom in the trainer" in err and str(out) in err and "\n" not in err
    summary = summary_of(out)
    assert summary["status"] == "failed" and summary["error"] == "ValueError: boom in the trainer"
    assert [f["fold"] for f in summary["folds"]] == [0]
    assert not (out / "run.lock").exists()


def test_sigterm_inside_a_fold_stops_at_the_next_epoch_boundary_as_interrupted(
    monkeypatch, tiny_fxcache, tiny_params, tmp_path, capsys
):
    before = signal.getsignal(signal.SIGTERM)
    fail_in_fold(monkeypatch, 1, lambda: os.kill(os.getpid(), signal.SIGTERM))
    out = tmp_path / "out"
    assert main(quick_argv(tiny_fxcache, out, tiny_params)) == 143
    captured = capsys.readouterr()
    assert "fold 1 epoch 2/2" in captured.out  # the epoch under way finishes; the next one never starts
    assert "interrupted: stopped by SIGTERM during fold 1" in captured.err
    assert summary_of(out)["status"] == "interrupted"
    assert completed_folds(out) == [0]
    assert not (out / "fold_1" / "report.json").exists()
    assert signal.getsignal(signal.SIGTERM) is before  # the run's handler is gone with the run


HOLDOUT = ("--holdout-days", "2", "--max-folds", "2")  # the held-out fold is fold 2, after folds 0 and 1


def test_sigterm_inside_the_held_out_fold_says_it_stopped_during_the_held_out_fold(
    monkeypatch, tiny_fxcache, tiny_params, tmp_path, capsys
):
    fail_in_fold(monkeypatch, 2, lambda: os.kill(os.getpid(), signal.SIGTERM))
    out = tmp_path / "out"
    assert main(quick_argv(tiny_fxcache, out, tiny_params, *HOLDOUT)) == 143
    err = capsys.readouterr().err
    assert "interrupted: stopped by SIGTERM during the held-out fold" in err
    assert summary_of(out)["status"] == "interrupted" and completed_folds(out) == [0, 1]


def test_sigterm_between_the_folds_and_the_held_out_fold_says_after_which_fold_it_stopped(
    monkeypatch, tiny_fxcache, tiny_params, tmp_path, capsys
):
    report_run = walk_forward._report_run

    def signalled(*args, **kwargs):  # the signal comes while the folds' record is stitched
        os.kill(os.getpid(), signal.SIGTERM)
        return report_run(*args, **kwargs)

    monkeypatch.setattr(walk_forward, "_report_run", signalled)
    assert main(quick_argv(tiny_fxcache, tmp_path / "out", tiny_params, *HOLDOUT)) == 143
    assert "interrupted: stopped by SIGTERM after fold 1;" in capsys.readouterr().err


def test_an_unexpected_exception_inside_the_held_out_fold_names_it_as_what_failed(
    monkeypatch, tiny_fxcache, tiny_params, tmp_path, capsys
):
    def boom():
        raise ValueError("boom in the held-out fold")

    fail_in_fold(monkeypatch, 2, boom)
    assert main(quick_argv(tiny_fxcache, tmp_path / "out", tiny_params, *HOLDOUT)) == 1
    assert "the held-out fold failed: ValueError: boom in the held-out fold" in capsys.readouterr().err


def test_an_unexpected_error_outside_a_run_is_one_line_exit_1_with_the_debug_hint(
    monkeypatch, tmp_path, capsys
):
    def broken(*args, **kwargs):
        raise RuntimeError("something nobody expected")

    monkeypatch.setattr("foxhunt.run.precompute.precompute", broken)
    assert main(["precompute", "--bars", "x.csv", "--out", str(tmp_path / "x.fxcache")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        "foxhunt precompute: unexpected error: RuntimeError: something nobody expected "
        "(set FOXHUNT_DEBUG=1 for the traceback)"
    )


def test_foxhunt_debug_prints_the_traceback_of_an_unexpected_error(monkeypatch, tmp_path, capsys):
    def broken(*args, **kwargs):
        raise RuntimeError("something nobody expected")

    monkeypatch.setattr("foxhunt.run.precompute.precompute", broken)
    monkeypatch.setenv("FOXHUNT_DEBUG", "1")
    assert main(["precompute", "--bars", "x.csv", "--out", str(tmp_path / "x.fxcache")]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--train-days", "0"], "--train-days"),
        (["--eval-cost", "-0.1"], "--eval-cost"),
        (["--eval-spread", "nan"], "--eval-spread"),
        (["--min-val-rows", "0"], "--min-val-rows"),
        (["--run-id", ".."], "--run-id"),
        (["--run-id", "a/b"], "--run-id"),
    ],
)
def test_a_bad_flag_value_is_exit_2_naming_the_flag_and_writes_nothing(
    flags, named, tiny_fxcache, tiny_params, tmp_path, capsys
):
    out = tmp_path / "out"
    assert main(quick_argv(tiny_fxcache, out, tiny_params, *flags)) == 2
    err = capsys.readouterr().err.strip()
    assert named in err and "must be" in err and "\n" not in err
    assert not out.exists()


def test_a_bad_run_id_from_the_environment_names_the_variable(
    monkeypatch, tiny_fxcache, tiny_params, tmp_path, capsys
):
    monkeypatch.setenv("FOXHUNT_RUN_ID", "..")
    assert main(quick_argv(tiny_fxcache, tmp_path / "out", tiny_params)) == 2
    assert "$FOXHUNT_RUN_ID" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("dqn", "named"),
    [
        ({"compile": "false"}, "compile must be true or false, got str 'false'"),
        ({"batch_size": 8192.9}, "batch_size must be an integer in [1, 16777216], got float 8192.9"),
        ({"batch_size": True}, "batch_size must be an integer in [1, 16777216], got bool True"),
        ({"gamma": 1.5}, "gamma must be a finite number in [0, 1), got 1.5"),
    ],
)
def test_a_hyperparameter_of_the_wrong_type_or_range_is_exit_2_naming_file_and_field(
    dqn, named, tiny_fxcache, tmp_path, capsys
):
    params = tmp_path / "p.json"
    params.write_text(json.dumps({"dqn": dqn}))
    assert main(quick_argv(tiny_fxcache, tmp_path / "out", params)) == 2
    err = capsys.readouterr().err
    assert str(params) in err and named in err


def test_evaluation_costs_in_a_hyperparameter_file_are_refused(tiny_fxcache, tmp_path, capsys):
    params = tmp_path / "p.json"
    params.write_text(json.dumps({"dqn": {}, "eval": {"cost": 0.0}}))
    assert main(quick_argv(tiny_fxcache, tmp_path / "out", params)) == 2
    assert "--eval-cost" in capsys.readouterr().err


def test_the_evaluation_cost_scores_validation_and_never_changes_training(
    quick_run, tiny_fxcache, tiny_params, tmp_path
):
    default, free = quick_run.out, tmp_path / "free"  # the quick run is at the default cost
    assert main(quick_argv(tiny_fxcache, free, tiny_params, "--eval-cost", "0")) == 0
    a, b = fold_outputs(default), fold_outputs(free)
    assert [a[f]["weights"] for f in a] == [b[f]["weights"] for f in b]
    for fold in b:
        validation = b[fold]["validation"]
        assert validation["sharpe"] == validation["gross_sharpe"]  # no cost: net equals gross
        if validation["turnover"] > 0:
            assert validation["total_return"] > a[fold]["validation"]["total_return"]
    assert summary_of(free)["eval_config"]["cost"] == 0.0 and summary_of(free)["eval_config"]["spread"] == 0.0


def test_the_spread_costs_half_of_itself_per_unit_of_position_change(tiny_fxcache, tiny_params, tmp_path):
    fee, spread = tmp_path / "fee", tmp_path / "spread"
    assert main(quick_argv(tiny_fxcache, fee, tiny_params, "--eval-cost", "0.0002")) == 0
    assert (
        main(quick_argv(tiny_fxcache, spread, tiny_params, "--eval-cost", "0", "--eval-spread", "0.0004"))
        == 0
    )
    a, b = fold_outputs(fee), fold_outputs(spread)
    assert [a[f]["validation"]["total_return"] for f in a] == pytest.approx(
        [b[f]["validation"]["total_return"] for f in b], rel=1e-9
    )


def test_min_val_rows_drops_folds_with_too_few_validation_rows(
    quick_run, tiny_fxcache, tiny_params, tmp_path
):
    assert main(quick_argv(tiny_fxcache, tmp_path / "some", tiny_params, "--min-val-rows", "2000")) == 0
    rows = [f["val_rows"] for f in summary_of(quick_run.out)["folds"]]  # every fold: the default minimum
    kept = [f["val_rows"] for f in summary_of(tmp_path / "some")["folds"]]
    assert min(rows) < 2000 and kept and min(kept) >= 2000


def test_json_log_format_gives_one_json_object_per_line_with_the_run_id(
    tiny_fxcache, tiny_params, tmp_path, capsys
):
    argv = quick_argv(
        tiny_fxcache, tmp_path / "out", tiny_params, "--log-format", "json", "--run-id", "json-run"
    )
    assert main(argv) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines and all(line["run_id"] == "json-run" and line["time"].endswith("+00:00") for line in lines)
    messages = [line["message"] for line in lines]
    assert any(m.startswith("fold 2 done") for m in messages) and messages[-1].startswith("outputs: ")


def test_an_out_that_cannot_hold_files_is_exit_2_before_any_work(tiny_fxcache, tiny_params, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert main(quick_argv(tiny_fxcache, blocker / "out", tiny_params)) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    # The output check before work names the file in the way, before any lock or load.
    assert f"{blocker} is a file, not a folder" in err and "\n" not in err
    assert "loaded" not in captured.out
