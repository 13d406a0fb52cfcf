"""A run's evaluation, wired: per-fold and stitched reports of real runs, Argo's outputs, warnings, resume."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from support import strict_json
from support.run_cases import TINY_DQN, QuickRun, train_argv

from foxhunt.cli import main
from foxhunt.evaluate.baselines import BASELINE_NAMES
from foxhunt.evaluate.evaluation import MODEL
from foxhunt.evaluate.reports import RunSummary

ROOT = Path(__file__).resolve().parents[2]
TRAIN_TEMPLATE = ROOT / "foxhunt_workflows" / "rendered" / "train.yaml"
EPOCHS = ("--epochs", "2")


def run_main(argv: list[str]) -> tuple[int, str]:
    """`foxhunt <argv>` in this process; its exit code and console output."""
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        code = main(argv)
    return code, console.getvalue()


@pytest.fixture
def tiny_run(quick_run) -> QuickRun:
    """A 3-fold run of `foxhunt train` (2 epochs) with FOXHUNT_OUTPUTS_DIR set, as the Argo train step runs it."""
    return quick_run


def net(window: dict, policy: str = MODEL) -> dict:
    return window["policies"][policy]["net"]


# ---- the stitched record in summary.json ----------------------------------------------------------------
def test_the_stitched_record_holds_every_validation_bar_once(tiny_run):
    summary = tiny_run.summary
    folds, stitched = summary["folds"], summary["stitched"]
    assert len(folds) == 3 and stitched["fold"] == -1
    assert stitched["n_bars"] == sum(f["val_rows"] for f in folds)  # step = validation: no overlap
    assert stitched["start_ns"] == folds[0]["evaluation"]["start_ns"]
    assert stitched["end_ns"] == folds[-1]["evaluation"]["end_ns"]
    assert (stitched["start"][:16], stitched["end"][:16]) == (
        folds[0]["dates"]["val_first_bar"][:16],
        folds[-1]["dates"]["val_last_bar"][:16],
    )


@pytest.mark.parametrize("policy", [MODEL, "buy_and_hold", "last_return_sign", "ridge"])
def test_the_stitched_gross_log_return_is_the_sum_of_the_folds(tiny_run, policy):
    summary = tiny_run.summary
    folds = [f["evaluation"]["policies"][policy]["gross"]["log_return"] for f in summary["folds"]]
    stitched = summary["stitched"]["policies"][policy]["gross"]["log_return"]
    assert stitched == pytest.approx(sum(folds), rel=1e-12, abs=1e-15)


def test_buy_and_hold_pays_no_handover_between_adjacent_windows(tiny_run):
    # Each fold's window enters long from flat; stitched, only the first entry is paid (always long).
    summary = tiny_run.summary
    folds = summary["folds"]
    adjacent = sum(a["val_end"] == b["val_start"] for a, b in zip(folds, folds[1:], strict=False))
    assert adjacent == len(folds) - 1
    hold = [f["evaluation"]["policies"]["buy_and_hold"] for f in folds]
    entry = hold[0]["gross"]["log_return"] - hold[0]["net"]["log_return"]  # one unit from flat
    stitched = summary["stitched"]["policies"]["buy_and_hold"]["net"]["log_return"]
    assert stitched == pytest.approx(sum(h["net"]["log_return"] for h in hold) + adjacent * entry, rel=1e-9)


def test_every_window_stands_the_model_against_every_baseline(tiny_run):
    summary = tiny_run.summary
    for window in [*(f["evaluation"] for f in summary["folds"]), summary["stitched"]]:
        baselines = set(BASELINE_NAMES)
        assert set(window["policies"]) == {MODEL, *baselines} and set(window["standings"]) == baselines
        best = max(baselines, key=lambda name: net(window, name)["sharpe"])
        assert window["best_baseline"] == best
        for name, standing in window["standings"].items():
            assert standing["difference"] == net(window)["sharpe"] - net(window, name)["sharpe"]


def test_a_fold_report_carries_the_evaluation_and_no_second_copy_of_its_figures(tiny_run):
    for report in tiny_run.summary["folds"]:
        assert "validation" not in report and net(report["evaluation"])["n_bars"] == report["val_rows"]


def test_the_fold_report_file_holds_the_same_evaluation_as_the_summary(tiny_run):
    for report in tiny_run.summary["folds"]:
        on_disk = strict_json.read(tiny_run.out / f"fold_{report['fold']}" / "report.json")
        assert on_disk["evaluation"] == report["evaluation"]


def test_the_summary_reads_back_with_its_stitched_record(tiny_run):
    summary = RunSummary.from_dict(tiny_run.summary)
    assert summary.stitched.n_bars == tiny_run.summary["stitched"]["n_bars"]
    assert summary.to_dict() == tiny_run.summary


def test_the_printed_table_has_every_folds_dates_and_the_stitched_row(tiny_run):
    lines = tiny_run.console.splitlines()
    for report in tiny_run.summary["folds"]:
        dates = report["dates"]
        row = next(line for line in lines if line.split()[:1] == [str(report["fold"])])
        assert dates["val_first_bar"][:16] in row and dates["val_last_bar"][:16] in row
        assert f"{net(report['evaluation'])['sharpe']:.2f} ±" in row
    stitched = next(line for line in lines if line.startswith("stitched  "))
    assert f"{net(tiny_run.summary['stitched'])['sharpe']:.2f} ±" in stitched
    assert "stitched out-of-sample record:" in tiny_run.console


def test_the_run_draws_run_png_and_timings_png(tiny_run):
    for name in ("run.png", "timings.png"):
        assert (tiny_run.out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---- Argo's outputs -------------------------------------------------------------------------------------
def template_output_files() -> set[str]:
    """The file names under FOXHUNT_OUTPUTS_DIR that the rendered train template reads."""
    from foxhunt_workflows.pods import OUTPUTS_DIR

    return set(re.findall(rf"path: {re.escape(OUTPUTS_DIR)}/(\S+)", TRAIN_TEMPLATE.read_text()))


def test_a_finished_run_writes_every_file_the_train_template_reads(tiny_run):
    assert template_output_files() == {
        "summary.json",
        "run.png",
        "summary_uri",
        "stitched_sharpe",
        "holdout_sharpe",
    }
    # holdout_sharpe only with --holdout-days (the template gives it an empty default)
    assert {p.name for p in tiny_run.outputs.iterdir()} == template_output_files() - {"holdout_sharpe"}
    assert strict_json.read(tiny_run.outputs / "summary.json") == tiny_run.summary
    assert (tiny_run.outputs / "run.png").read_bytes() == (tiny_run.out / "run.png").read_bytes()
    assert (tiny_run.outputs / "summary_uri").read_text() == str((tiny_run.out / "summary.json").resolve())
    stitched_sharpe = float((tiny_run.outputs / "stitched_sharpe").read_text())
    assert stitched_sharpe == net(tiny_run.summary["stitched"])["sharpe"]


def test_a_failed_run_writes_what_exists_to_the_argo_outputs(tiny_fxcache, tmp_path, monkeypatch):
    params = tmp_path / "diverging.json"
    params.write_text(json.dumps({"dqn": {**TINY_DQN, "q_limit": 1e-6}}))
    monkeypatch.setenv("FOXHUNT_OUTPUTS_DIR", str(tmp_path / "argo"))
    code, _ = run_main(train_argv(tiny_fxcache, tmp_path / "out", params, *EPOCHS))
    assert code == 1
    assert {p.name for p in (tmp_path / "argo").iterdir()} == {"summary.json", "summary_uri"}
    assert strict_json.read(tmp_path / "argo" / "summary.json")["status"] == "failed"


# ---- diagnostics' warnings (their words: tests/train/test_epoch_figures.py) -----------------------------
class AlwaysFlat(torch.nn.Module):
    """A planted Q-network: flat is worth most from every state, whatever the features."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(()))  # trainable, but moves every action alike

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        q = torch.tensor([0.0, 1.0, 0.0], device=state.device)
        return q + self.weight * state[:, :1]


def test_a_planted_constant_policy_is_reported_as_collapsed_and_blind(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    planted = lambda params, member, hidden: torch.nn.Sequential(AlwaysFlat())  # noqa: E731
    monkeypatch.setattr("foxhunt.train.dqn.member_network", planted)
    argv = train_argv(tiny_fxcache, tmp_path / "out", tiny_params, "--epochs", "1", "--max-folds", "1")
    code, console = run_main(argv)
    assert code == 0, console
    summary = strict_json.read(tmp_path / "out" / "summary.json")
    collapsed = "fold 0: the policy collapsed to one action: flat on 100.0% of validation bars"
    assert [w[: len(collapsed)] for w in summary["folds"][0]["warnings"]][:1] == [collapsed]
    assert any("fold 0: the policy ignores the features: 100.0%" in w for w in summary["warnings"])
    assert f"WARNING {collapsed}" in console


# ---- resume ------------------------------------------------------------------------------------------------
def test_a_resumed_run_ends_with_the_uninterrupted_runs_stitched_record(tiny_run, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(tiny_run.out, out)
    # As if killed inside fold 2: the manifest records folds 0 and 1, fold 2 left no report.
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["run"]["folds"]["2"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    shutil.rmtree(out / "fold_2")
    (out / "summary.json").unlink()
    argv = [str(out) if a == str(tiny_run.out) else a for a in tiny_run.argv]
    code, console = run_main(argv)
    assert code == 0, console
    resumed = strict_json.read(out / "summary.json")
    assert resumed["resumed_folds"] == [0, 1]
    assert resumed["stitched"] == tiny_run.summary["stitched"]
    assert [f["evaluation"] for f in resumed["folds"]] == [f["evaluation"] for f in tiny_run.summary["folds"]]


# ---- using a trained fold ------------------------------------------------------------------------------
def test_a_loaded_fold_policy_reproduces_the_runs_validation_positions(tiny_run, tiny_fxcache):
    from foxhunt.data.fxcache import read_fxcache
    from foxhunt.evaluate.fold_policy import load_policy

    features = read_fxcache(str(tiny_fxcache)).features
    for report in tiny_run.summary["folds"]:
        fold_dir = tiny_run.out / f"fold_{report['fold']}"
        saved = np.load(fold_dir / "positions.npy")
        policy = load_policy(str(fold_dir))
        rows = features[report["val_start"] : report["val_end"]]
        assert np.array_equal(policy.rollout(rows), saved)
        # One step at a time: each bar's position from the one held coming in.
        incoming = np.concatenate([[0], saved[:-1]])
        assert np.array_equal(policy(rows, incoming), saved)


def test_loading_a_folder_that_is_not_a_fold_names_it(tiny_run):
    from foxhunt.errors import BadInput
    from foxhunt.evaluate.fold_policy import load_policy

    with pytest.raises(BadInput, match="not a fold folder"):
        load_policy(str(tiny_run.out))


def test_evaluate_on_the_runs_own_fxcache_reproduces_its_figures(tiny_run, tiny_fxcache, tmp_path):
    code, console = run_main(
        [
            "evaluate",
            "--run",
            str(tiny_run.out),
            "--fxcache",
            str(tiny_fxcache),
            "--out",
            str(tmp_path / "ev"),
        ]
    )
    assert code == 0, console
    scored = strict_json.read(tmp_path / "ev" / "evaluation.json")
    assert scored["folds"] == [f["evaluation"] for f in tiny_run.summary["folds"]]
    assert scored["stitched"] == tiny_run.summary["stitched"]
    assert (tmp_path / "ev" / "run.png").exists()
    assert next(line for line in console.splitlines() if line.startswith("stitched  ")) in tiny_run.console


def test_evaluate_at_no_cost_gives_net_figures_equal_to_gross(tiny_run, tiny_fxcache, tmp_path):
    argv = ["evaluate", "--run", str(tiny_run.out), "--fxcache", str(tiny_fxcache), "--out", str(tmp_path)]
    assert run_main([*argv, "--eval-cost", "0"])[0] == 0
    stitched = strict_json.read(tmp_path / "evaluation.json")["stitched"]
    assert net(stitched)["log_return"] == stitched["policies"][MODEL]["gross"]["log_return"]
    assert net(stitched)["log_return"] != net(tiny_run.summary["stitched"])["log_return"]


def test_evaluate_on_a_folder_that_is_not_a_run_is_a_usage_error(tiny_fxcache, tmp_path, capsys):
    assert main(["evaluate", "--run", str(tmp_path), "--fxcache", str(tiny_fxcache)]) == 2
    err = capsys.readouterr().err.strip()
    assert "not a foxhunt run" in err and str(tmp_path) in err and "\n" not in err


def test_a_saved_fold_trades_the_bars_of_its_own_dates_in_another_file(tiny_run, tiny_fxcache):
    from foxhunt.data.fxcache import read_fxcache
    from foxhunt.evaluate.reports import FoldReport
    from foxhunt.run.rescore import saved_fold_range

    timestamp = read_fxcache(str(tiny_fxcache)).timestamp
    for data in tiny_run.summary["folds"]:
        report = FoldReport.from_dict(data)
        same = saved_fold_range(report, timestamp)
        assert (same.train_start, same.train_end, same.val_start, same.val_end) == (
            report.train_start,
            report.train_end,
            report.val_start,
            report.val_end,
        )
        # A file that starts 1,000 bars later holds the same dates 1,000 rows earlier.
        later = saved_fold_range(report, timestamp[1000:])
        assert (later.val_start, later.val_end) == (report.val_start - 1000, report.val_end - 1000)
        assert later.train_start == max(report.train_start - 1000, 0)


def test_evaluate_on_an_fxcache_outside_the_runs_dates_is_a_usage_error(tiny_run, tmp_path, capsys):
    from foxhunt.data.bars import generate_sample_bars, write_bars
    from foxhunt.run.precompute import precompute

    bars = tmp_path / "later.parquet"
    write_bars(generate_sample_bars(2000, seed=4, start="2025-06-02T00:00:00"), bars)
    later = tmp_path / "later.fxcache"
    precompute([str(bars)], str(later), progress=lambda _: None)
    assert (
        main(["evaluate", "--run", str(tiny_run.out), "--fxcache", str(later), "--allow-other-fxcache"]) == 2
    )
    err = capsys.readouterr().err.strip()
    assert f"{later}: no bars in the validation dates of any fold" in err and "\n" not in err


def test_a_run_writes_its_trades_and_daily_and_monthly_tables(tiny_run):
    import pyarrow.parquet as pq

    trades = pq.read_table(tiny_run.out / "trades.parquet").to_pydict()
    net_log = net(tiny_run.summary["stitched"])["log_return"]
    daily = [line.split(",") for line in (tiny_run.out / "daily.csv").read_text().splitlines()[1:]]
    assert sum(float(row[2]) for row in daily) == pytest.approx(net_log, rel=1e-9, abs=1e-12)
    assert sum(int(row[1]) for row in daily) == tiny_run.summary["stitched"]["n_bars"]
    assert sum(trades["pnl"]) == pytest.approx(net_log, rel=1e-9, abs=1e-12)  # flat bars pay nothing
    assert (tiny_run.out / "monthly.csv").read_text().startswith("month,bars,log_pnl,return,")


def test_the_console_gives_the_verdict_and_the_relative_figures(tiny_run):
    assert re.search(
        r"verdict: model net Sharpe -?\d+\.\d\d vs best baseline \w+ -?\d+\.\d\d: ", tiny_run.console
    )
    assert "against buy-and-hold: alpha " in tiny_run.console
    assert re.search(r"vs buy_and_hold.*paired 95% interval \[", tiny_run.console)


# ---- how a run scores ------------------------------------------------------------------------------------
def test_a_runs_bootstrap_is_seeded_with_the_runs_seed():
    from foxhunt.config import EvalConfig
    from foxhunt.evaluate.run_scores import run_scoring

    assert run_scoring(EvalConfig(), 7).seed == 7
