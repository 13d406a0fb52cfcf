"""`--overlay-drift` and `--overlay-seed` on `foxhunt precompute` and `foxhunt pipeline`: the sample's news
over the user's bars, recorded in the fxcache and the run's summary."""

import json

import pytest
from support import strict_json
from support.data_files import EURUSD, YNDX

from foxhunt.cli import main
from foxhunt.cli.parser import build_parser
from foxhunt.data.fxcache import read_fxcache
from foxhunt.data.sample import NEWS_BARS, NEWS_JUMP_SIGMAS, SAMPLE_NEWS_RATE


def test_the_overlay_is_off_unless_asked_for_in_both_commands():
    parser = build_parser()
    for argv in (["precompute", "--bars", "b", "--out", "o"], ["pipeline"]):
        args = parser.parse_args(argv)
        assert args.overlay_drift is None and args.overlay_seed is None
    args = parser.parse_args(["pipeline", "--overlay-drift", "0", "--overlay-seed", "3"])
    assert (args.overlay_drift, args.overlay_seed) == (0.0, 3)


def test_the_help_states_the_news_process_of_the_sample(capsys):
    with pytest.raises(SystemExit):
        main(["precompute", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"1 in {1 / SAMPLE_NEWS_RATE:g}" in text
    assert f"{NEWS_JUMP_SIGMAS:g}-sigma jump" in text
    assert f"for {NEWS_BARS} bars" in text


@pytest.mark.parametrize(
    "argv",
    [
        ["pipeline", "--overlay-drift", "1"],  # no --bars: the sample has its own news
        ["precompute", "--bars", str(EURUSD), "--overlay-seed", "2"],  # a seed without an overlay
        ["precompute", "--bars", str(EURUSD), "--overlay-drift", "-1"],
        ["precompute", "--bars", str(EURUSD), "--overlay-drift", "nan"],
    ],
)
def test_an_overlay_that_cannot_be_planted_is_a_usage_error_before_work(argv, tmp_path, capsys):
    out = tmp_path / "out"
    assert main([*argv, "--out", str(out)]) == 2
    assert "--overlay" in capsys.readouterr().err
    assert not out.exists()


def test_an_overlaid_precompute_never_takes_the_plain_bars_fxcache_for_its_own(tmp_path, capsys):
    out = tmp_path / "y.fxcache"
    assert main(["precompute", "--bars", str(YNDX), "--out", str(out)]) == 0
    plain = read_fxcache(str(out)).metadata
    assert main(["precompute", "--bars", str(YNDX), "--out", str(out), "--overlay-drift", "1"]) == 0
    assert "fxcache hit" not in capsys.readouterr().out
    overlaid = read_fxcache(str(out)).metadata
    assert overlaid["source_hash"] != plain["source_hash"]
    assert overlaid["checksum"] != plain["checksum"]
    assert "overlay(drift=1.0x,seed=0" in overlaid["source_uri"]


@pytest.mark.slow
def test_a_pipeline_with_the_overlay_on_real_eurusd_runs_and_records_it(tmp_path):
    params = tmp_path / "params.json"
    params.write_text(json.dumps({"dqn": {"hidden": 32, "batch_size": 1024, "steps_per_epoch": 5}}))
    out = tmp_path / "run"
    argv = ["pipeline", "--bars", str(EURUSD), "--out", str(out), "--overlay-drift", "1"]
    fast = ["--epochs", "1", "--max-folds", "2", "--device", "cpu", "--hyperopt-params", str(params)]
    assert main([*argv, "--overlay-seed", "5", *fast]) == 0
    summary = strict_json.read(out / "summary.json")
    overlay = summary["precompute"]["overlay"]
    assert (overlay["drift_multiple"], overlay["seed"], overlay["jump_sigmas"]) == (1.0, 5, NEWS_JUMP_SIGMAS)
    assert overlay["drift_per_bar"] > 0 and overlay["news_bars"] > 100
    assert summary["status"] == "succeeded" and len(summary["folds"]) == 2
    assert "overlay(drift=1.0x,seed=5" in read_fxcache(str(out / "features.fxcache")).metadata["source_uri"]
