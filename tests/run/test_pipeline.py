"""The `foxhunt` command end to end: the embedded default, real EURUSD, usage errors, failures."""

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from support import strict_json
from support.data_files import EURUSD, EURUSD_ROWS

from foxhunt.cli import main
from foxhunt.data.features import LOOKAHEAD_BARS, WARMUP_BARS

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

# Two one-epoch folds of 20 training days on the CPU: seconds, not minutes.
FAST_FOLDS = "--epochs 1 --train-days 20 --val-days 5 --step-days 5 --max-folds 2 --device cpu".split()
FAST = ["--sample-bars", "60000", *FAST_FOLDS]

PHASE_NAMES = ("reset", "normalize", "collect", "train", "select", "validate", "checkpoint")


def fast_params(tmp_path: Path, **dqn) -> list[str]:
    path = tmp_path / "params.json"
    path.write_text(json.dumps({"dqn": {"hidden": 32, "batch_size": 1024, "steps_per_epoch": 5, **dqn}}))
    return ["--hyperopt-params", str(path)]


def test_pipeline_with_no_arguments_succeeds_from_the_console_script(default_pipeline):
    done, out = default_pipeline.done, default_pipeline.out
    assert done.returncode == 0, done.stderr
    summary = strict_json.read(out / "summary.json")
    assert summary["status"] == "succeeded"
    assert [f["fold"] for f in summary["folds"]] == [0, 1, 2]
    assert summary["epochs"] == 3
    assert (out / "run.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for fold in range(3):
        weights = torch.load(out / f"fold_{fold}" / "weights.pt", weights_only=True)
        assert weights["0.weight"].shape == (256, 43)
        norm = json.loads((out / f"fold_{fold}" / f"norm_stats_fold{fold}.json").read_text())
        assert len(norm["mean"]) == len(norm["std"]) == 42
        report = strict_json.read(out / f"fold_{fold}" / "report.json")
        assert list(report["phases"]) == [*PHASE_NAMES]
    assert "sharpe" in done.stdout and str(out) in done.stdout
    assert summary["stitched"]["n_bars"] == sum(f["val_rows"] for f in summary["folds"])
    assert (out / "timings.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert any(line.startswith("stitched  ") for line in done.stdout.splitlines())


def test_the_pipeline_trains_with_its_own_dqn_defaults_unless_given_a_params_file(tmp_path):
    from foxhunt.cli.commands import run_config
    from foxhunt.cli.parser import build_parser
    from foxhunt.config import PIPELINE_DQN, DQNConfig

    parser = build_parser()
    assert run_config(parser.parse_args(["pipeline"])).dqn == PIPELINE_DQN != DQNConfig()
    assert run_config(parser.parse_args(["train", "--fxcache", "x", "--out", "o"])).dqn == DQNConfig()
    params = tmp_path / "p.json"
    params.write_text(json.dumps({"dqn": {"lr": 5e-4}}))
    given = ["--hyperopt-params", str(params)]
    expected = dataclasses.replace(DQNConfig(), lr=5e-4)  # the file means the same in every command
    assert run_config(parser.parse_args(["pipeline", *given])).dqn == expected
    assert run_config(parser.parse_args(["train", "--fxcache", "x", "--out", "o", *given])).dqn == expected


def test_second_precompute_of_the_same_bars_is_a_no_op(tmp_path, capsys):
    bars = tmp_path / "bars.parquet"
    from foxhunt.data.bars import generate_sample_bars, write_bars

    write_bars(generate_sample_bars(5000, seed=1), bars)
    out = tmp_path / "bars.fxcache"
    assert main(["precompute", "--bars", str(bars), "--out", str(out)]) == 0
    first = out.stat().st_mtime_ns
    capsys.readouterr()
    assert main(["precompute", "--bars", str(bars), "--out", str(out)]) == 0
    assert "fxcache hit" in capsys.readouterr().out
    assert out.stat().st_mtime_ns == first


def test_trials_with_a_search_space_that_names_no_dqn_setting_is_a_usage_error(tmp_path, capsys):
    # `--trials N` is a search (tests/search/test_trials_run.py); its space is checked before any work.
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"learning_rate": {"type": "float", "low": 1e-4, "high": 1e-2}}))
    argv = ["pipeline", "--out", str(tmp_path / "o"), "--trials", "3", "--search-space", str(space), *FAST]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "learning_rate: not a DQN setting" in err and "\n" not in err
    assert not (tmp_path / "o").exists()


def test_unknown_hyperparameter_lists_the_valid_keys(tmp_path, capsys):
    params = tmp_path / "p.json"
    params.write_text(json.dumps({"dqn": {"learning_rate": 1e-3}}))
    assert main(["pipeline", "--out", str(tmp_path / "o"), "--hyperopt-params", str(params), *FAST]) == 2
    err = capsys.readouterr().err
    assert "learning_rate" in err and "lr" in err and "batch_size" in err


def test_bad_bars_are_a_one_line_error_naming_the_file(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "timestamp,open,high,low,close,volume\n2024-01-01T00:00:00,1,2,0.5,1.5,10\n"
        "2024-01-01T00:01:00,1,0.9,1.2,1,10\n"
    )
    assert main(["precompute", "--bars", str(bad), "--out", str(tmp_path / "x.fxcache")]) == 2
    err = capsys.readouterr().err.strip()
    assert str(bad) in err and "row 1" in err and "\n" not in err
    assert not (tmp_path / "x.fxcache").exists()


def test_a_diverging_fold_fails_the_run_and_keeps_what_was_done(tmp_path, capsys):
    out = tmp_path / "o"
    code = main(["pipeline", "--out", str(out), *FAST, *fast_params(tmp_path, q_limit=1e-6)])
    assert code == 1
    err = capsys.readouterr().err
    assert "fold 0" in err and str(out) in err
    summary = strict_json.read(out / "summary.json")
    assert summary["status"] == "failed" and "|Q| reached" in summary["error"]


def test_real_eurusd_runs_end_to_end(tmp_path):
    out = tmp_path / "eurusd"
    code = main(
        [
            "pipeline",
            "--bars",
            str(EURUSD),
            "--out",
            str(out),
            "--epochs",
            "2",
            "--max-folds",
            "2",
            "--device",
            "cpu",
            *fast_params(tmp_path),
        ]
    )
    assert code == 0
    summary = strict_json.read(out / "summary.json")
    assert summary["rows"] == EURUSD_ROWS - WARMUP_BARS - LOOKAHEAD_BARS  # the feature table's rows
    assert len(summary["folds"]) == 2
    for report in summary["folds"]:
        assert report["train_rows"] > 50_000
        assert all(v >= 0 for v in report["phases"].values())
        assert report["evaluation"]["start"].startswith("2018-")
    assert summary["stitched"]["n_bars"] == sum(f["val_rows"] for f in summary["folds"])


@pytest.mark.parametrize("argv", [["train", "--help"], ["pipeline", "--help"], ["precompute", "--help"]])
def test_help_describes_every_command(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    assert "--out" in capsys.readouterr().out


def test_train_reads_an_s3_fxcache_and_writes_every_output_to_s3(seaweed_s3, tmp_path):
    from foxhunt import storage

    local = tmp_path / "run"
    assert main(["pipeline", "--out", str(local), *FAST, *fast_params(tmp_path)]) == 0
    fxcache_uri, out_uri = seaweed_s3.uri("features.fxcache"), seaweed_s3.uri("runs", "r1")
    storage.upload_file(local / "features.fxcache", fxcache_uri)
    code = main(
        [
            "train",
            "--fxcache",
            fxcache_uri,
            "--out",
            out_uri,
            *FAST_FOLDS,
            *fast_params(tmp_path),
        ]
    )
    assert code == 0
    summary = strict_json.loads(storage.read_bytes(storage.join(out_uri, "summary.json")))
    assert summary["status"] == "succeeded" and len(summary["folds"]) == 2
    local_summary = strict_json.read(local / "summary.json")
    assert [f["evaluation"] for f in summary["folds"]] == [f["evaluation"] for f in local_summary["folds"]]
    import io

    weights = torch.load(
        io.BytesIO(storage.read_bytes(storage.join(out_uri, "fold_1", "weights.pt"))), weights_only=True
    )
    assert weights["0.weight"].shape[1] == 43
    assert storage.exists(storage.join(out_uri, "fold_0", "norm_stats_fold0.json"))
    assert storage.exists(storage.join(out_uri, "run.png"))
