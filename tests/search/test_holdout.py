"""An untouched final period: the cut by hand, and a search on real EURUSD bars whose folds and trials
are bit-identical when every held-out bar is changed, while the held-out headline moves."""

import contextlib
import csv
import io
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support import strict_json
from support.data_files import EURUSD  # noqa: E402
from support.run_cases import PICTURES, train_argv
from test_trials_run import LR_ONLY, search_argv, space_file

from foxhunt.cli import main
from foxhunt.config import FoldConfig
from foxhunt.data.fxcache import read_fxcache
from foxhunt.errors import BadInput
from foxhunt.run.holdout import (
    HOLDOUT_GAP,
    checked_holdout_range,
    holdout_range,
    holdout_start,
    planning_rows,
)
from foxhunt.run.precompute import precompute

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

MINUTE = 60_000_000_000
DAY = 1440 * MINUTE
HOLDOUT = ("--holdout-days", "2", "--pruner", "none")


# ---- the cut, by hand ----------------------------------------------------------------------------------
TS = np.arange(10 * 1440, dtype=np.int64) * MINUTE  # ten days of minute bars from 0


def test_the_held_out_bars_are_those_after_last_minus_d_days():
    # last = 14,399 min; last − 2 days = 11,519 min: rows 11,520 … 14,399 are held out (2 days of bars).
    assert holdout_start(TS, 2.0) == 11_520
    assert planning_rows(TS, 2.0) == 11_520 - HOLDOUT_GAP == 11_460
    assert planning_rows(TS, 0.0) == TS.size


def test_the_holdout_fold_trains_just_before_the_held_out_period():
    config = FoldConfig(
        train_days=3.0, val_days=1.0, step_days=1.0, purge_bars=60, mode="rolling", holdout_days=2.0
    )
    got = holdout_range(TS, config, 5, max_train_rows=100_000)
    # training window: the 3 days before minute 11,520 → rows 7,200 … 11,460 (purge 60); validation: the rest.
    assert (got.fold, got.train_start, got.train_end, got.val_start, got.val_end) == (
        5,
        7_200,
        11_460,
        11_520,
        14_400,
    )
    assert holdout_range(TS, config, 5, max_train_rows=1_000).train_start == 10_460  # the trainer's capacity
    expanding = FoldConfig(train_days=3.0, val_days=1.0, step_days=1.0, mode="expanding", holdout_days=2.0)
    assert holdout_range(TS, expanding, 0, max_train_rows=100_000).train_start == 0


@pytest.mark.parametrize("days", [20.0, 1e-9])
def test_a_holdout_that_leaves_no_folds_or_holds_no_bar_is_bad_input(days):
    with pytest.raises(BadInput, match="--holdout-days"):
        planning_rows(TS[::1440], days)  # one bar a day


def test_a_held_out_period_of_exactly_a_folds_validation_bars_is_accepted():
    # 2 days of minute bars are held out: 2,880 bars, as many as --min-val-rows asks; one more is refused.
    assert planning_rows(TS, 2.0, min_bars=2_880) == 11_460
    with pytest.raises(BadInput, match="holds 2880 bars, fewer than --min-val-rows 2881"):
        planning_rows(TS, 2.0, min_bars=2_881)


def test_a_held_out_fold_of_exactly_a_folds_training_rows_is_accepted():
    # rows 7,200 … 11,460 (3 days before the cut, purge 60): 4,260 rows, as many as --min-train-rows asks.
    config = FoldConfig(train_days=3.0, val_days=1.0, step_days=1.0, purge_bars=60, mode="rolling",
                        holdout_days=2.0, min_train_rows=4_260)  # fmt: skip
    assert checked_holdout_range(TS, config, 5, 100_000, 0.0).train_rows == 4_260
    with pytest.raises(BadInput, match="fewer than --min-train-rows 4261"):
        checked_holdout_range(TS, replace(config, min_train_rows=4_261), 5, 100_000, 0.0)


def _window():
    """A held-out window by hand: each policy's net record with its own Sharpe, ridge_60 the best baseline."""
    from types import SimpleNamespace

    def net(sharpe: float):
        return SimpleNamespace(sharpe=sharpe, sharpe_ci_low=sharpe - 0.5, sharpe_ci_high=sharpe + 0.5,
                               sharpe_se=0.25, psr_zero=0.9, total_return=0.01, max_drawdown=0.02, n_bars=300)  # fmt: skip

    policies = {"model": 1.0, "buy_and_hold": -0.3, "flat": 0.0, "ridge_60": 0.7}
    return SimpleNamespace(
        policies={name: SimpleNamespace(net=net(s)) for name, s in policies.items()},
        best_baseline="ridge_60",
        standings={"buy_and_hold": SimpleNamespace(verdict="better")},
    )


@pytest.mark.parametrize(
    ("figure", "expected"),
    [
        ("net_sharpe", 1.0),
        ("net_sharpe_ci", [0.5, 1.5]),
        ("buy_and_hold_sharpe", -0.3),
        ("best_baseline_sharpe", 0.7),
    ],
)
def test_the_headline_figures_read_each_policys_own_net_record(figure, expected):
    from foxhunt.run.holdout import window_figures

    assert window_figures(_window())[figure] == pytest.approx(expected)


# ---- a search on real bars --------------------------------------------------------------------------------
def _bars(tmp: Path, changed_from_ns: int | None) -> Path:
    """The first 12 days of the EURUSD slice; with `changed_from_ns`, every bar from then on moved by a
    trend of +0.1% a bar (OHLC scaled together, so every bar stays valid)."""
    table = pq.read_table(EURUSD)
    ts = table.column("timestamp").cast(pa.int64()).to_numpy() * 1000
    table = table.slice(0, int(np.searchsorted(ts, ts[0] + 12 * DAY)))
    if changed_from_ns is not None:
        ts = ts[: table.num_rows]
        factor = np.where(ts >= changed_from_ns, np.exp(1e-3 * np.cumsum(ts >= changed_from_ns)), 1.0)
        for name in ("open", "high", "low", "close"):
            i = table.column_names.index(name)
            table = table.set_column(i, name, pa.array(table.column(name).to_numpy() * factor))
    path = tmp / ("changed.parquet" if changed_from_ns is not None else "bars.parquet")
    pq.write_table(table, path)
    return path


@pytest.fixture(scope="module")
def two_searches(tiny_params, tmp_path_factory):
    """The same 2-trial search with --holdout-days 2 on the real bars, and on them with the held-out bars changed."""
    tmp = tmp_path_factory.mktemp("holdout")
    outs = {}
    first = tmp / "real.fxcache"
    precompute([str(_bars(tmp, None))], str(first), progress=lambda _: None)
    cache = read_fxcache(str(first))
    start = holdout_start(cache.timestamp, 2.0)
    changed = tmp / "changed.fxcache"
    precompute([str(_bars(tmp, int(cache.timestamp[start])))], str(changed), progress=lambda _: None)
    space = space_file(tmp, LR_ONLY)
    for name, fxcache in (("real", first), ("changed", changed)):
        out = tmp / name
        drawn = PICTURES if name == "real" else ()  # the real search's holdout.png is read below
        argv = search_argv(fxcache, out, tiny_params, 2, "--search-space", str(space), *HOLDOUT, *drawn)
        assert main([*argv, "--train-days", "3"]) == 0  # the last flag given wins
        outs[name] = out
    return outs, start, len(cache)


def test_no_fold_of_any_trial_reaches_the_held_out_bars(two_searches):
    outs, start, rows = two_searches
    reports = sorted(outs["real"].glob("trials/*/fold_*/report.json"))
    assert len(reports) == 4  # two trials × two folds
    for path in reports:
        fold = json.loads(path.read_text())
        assert fold["val_end"] <= start - HOLDOUT_GAP and fold["train_end"] <= fold["val_start"]
    holdout = strict_json.read(outs["real"] / "holdout.json")
    assert holdout["rows"] == [start, rows]


def test_changing_every_held_out_bar_changes_nothing_the_search_saw(two_searches):
    outs, _, _ = two_searches

    def table(out):
        return [
            (r["number"], r["objective"], r["lr"])
            for r in csv.DictReader(io.StringIO((out / "trials.csv").read_text()))
        ]

    assert table(outs["real"]) == table(outs["changed"])
    for path in sorted(outs["real"].glob("trials/*/fold_*/positions.npy")):
        other = outs["changed"] / path.relative_to(outs["real"])
        assert np.array_equal(np.load(path), np.load(other)), path


def test_the_held_out_headline_is_reported_beside_the_in_search_figure(two_searches):
    outs, _, _ = two_searches
    real = strict_json.read(outs["real"] / "holdout.json")
    changed = strict_json.read(outs["changed"] / "holdout.json")
    assert real["net_sharpe"] != changed["net_sharpe"]  # measured on the held-out bars, which differ
    assert real["net_sharpe"] != real["in_search"]["value"]
    study = strict_json.read(outs["real"] / "study.json")
    assert (
        study["holdout"]["net_sharpe"] == real["net_sharpe"]
        and "selected" in study["holdout"]["in_search"]["what"]
    )
    summary = strict_json.read(outs["real"] / "summary.json")
    assert summary["holdout"]["headline"] == "held-out final period"
    assert (outs["real"] / "holdout.png").stat().st_size > 0


def test_a_search_with_a_holdout_writes_the_held_out_periods_trades_daily_and_monthly(two_searches):
    # Catches: the files of the best trial's in-search record standing for the headline.
    outs, start, rows = two_searches
    study = json.loads((outs["real"] / "study.json").read_text())
    assert study["headline_tables"]["record"].startswith("the held-out final period")
    daily = list(csv.DictReader(io.StringIO((outs["real"] / "daily.csv").read_text())))
    monthly = list(csv.DictReader(io.StringIO((outs["real"] / "monthly.csv").read_text())))
    assert sum(int(d["bars"]) for d in daily) == rows - start  # the held-out bars, and only they
    holdout = json.loads((outs["real"] / "holdout.json").read_text())
    compounded = np.prod([1 + float(m["return"]) for m in monthly]) - 1
    assert compounded == pytest.approx(holdout["net_return"], abs=1e-9)  # the headline's own net return
    trades = pq.read_table(outs["real"] / "trades.parquet")
    first = np.datetime64(holdout["start"].rstrip("Z"), "ns").astype(np.int64)
    assert trades.num_rows == 0 or trades.column("entry").cast(pa.int64()).to_numpy().min() >= first


def test_a_searchs_headline_trains_on_the_trainer_that_trained_its_trials(tiny_params, tmp_path, monkeypatch):
    # Catches: a second trainer built for the headline (on CUDA a compile and a capture: seconds of a search).
    import foxhunt.search.driver as driver

    built: list[int] = []
    builder = driver.trainer_builder

    def counting(*args, **kwargs):
        build = builder(*args, **kwargs)
        return lambda configs: (built.append(len(configs)), build(configs))[1]

    monkeypatch.setattr(driver, "trainer_builder", counting)
    fxcache = tmp_path / "real.fxcache"
    precompute([str(_bars(tmp_path, None))], str(fxcache), progress=lambda _: None)
    space = space_file(tmp_path, LR_ONLY)
    argv = search_argv(fxcache, tmp_path / "out", tiny_params, 3, "--search-space", str(space), *HOLDOUT)
    assert main([*argv, "--train-days", "3", "--population", "2"]) == 0
    assert built == [2]  # the population of 2, built once; the headline trains its member 0
    holdout = strict_json.read(tmp_path / "out" / "holdout.json")
    assert holdout["settings"].startswith("best trial")


def test_a_plain_run_reports_its_settings_on_the_held_out_period(tiny_fxcache, tiny_params, tmp_path, capsys):
    out = tmp_path / "out"
    assert (
        main(
            [
                *train_argv(tiny_fxcache, out, tiny_params),
                "--holdout-days",
                "2",
                "--max-folds",
                "1",
                "--epochs",
                "2",
            ]
        )
        == 0
    )
    console = capsys.readouterr().out
    summary = strict_json.read(out / "summary.json")
    cache = read_fxcache(str(tiny_fxcache))
    start = holdout_start(cache.timestamp, 2.0)
    assert (
        summary["holdout"]["rows"] == [start, len(cache)]
        and summary["holdout"]["settings"] == "the run's settings"
    )
    assert all(f["val_end"] <= start - HOLDOUT_GAP for f in summary["folds"])
    assert (
        summary["holdout"]["in_search"]["value"] == summary["stitched"]["policies"]["model"]["net"]["sharpe"]
    )
    headline = next(line for line in console.splitlines() if "HEADLINE (held-out final period" in line)
    assert f"model net Sharpe {summary['holdout']['net_sharpe']:.2f}" in headline
    assert (
        "in-search figure (net Sharpe of the run's stitched folds; optimistic, not the headline)" in console
    )


@pytest.mark.parametrize("best", ["ridge_60", "buy_and_hold"])
def test_holdout_png_draws_the_best_baseline_its_title_names(best, tmp_path, monkeypatch):
    from types import SimpleNamespace

    import foxhunt.evaluate.plot as plot
    from foxhunt.evaluate.evaluation import Scoring
    from foxhunt.run import holdout

    drawn = []
    monkeypatch.setattr(plot, "fold_sharpe", lambda window, selections=(): None)
    monkeypatch.setattr(plot, "render_run_png", lambda picture, *_, **__: drawn.append(picture) or b"png")
    returns = np.random.default_rng(0).normal(0, 1e-3, size=(200, 4))
    data = SimpleNamespace(targets=returns, timestamp=np.arange(200, dtype=np.int64) * MINUTE)
    fold = holdout.FoldRange(3, 0, 100, 100, 200, 1.0)
    outcome = SimpleNamespace(
        positions=np.zeros(100),
        baselines={"ridge_60": -np.ones(100), "buy_and_hold": np.ones(100)},
        report=SimpleNamespace(evaluation=SimpleNamespace(best_baseline=best), selection=None),
    )
    run = SimpleNamespace(out_uri=str(tmp_path), progress=print)
    holdout._draw(run, data, outcome, fold, Scoring(cost=0.0, resamples=0), "t")
    lines = {line.label: line.log_pnl for line in drawn[0].lines}
    if best == "buy_and_hold":  # named once, drawn once
        assert list(lines) == ["model", "buy and hold"]
    else:
        assert list(lines) == ["model", "buy and hold", "best baseline: ridge_60"]
        assert np.allclose(lines["best baseline: ridge_60"], -returns[100:, 0])  # short every bar, no cost
    assert (tmp_path / "holdout.png").read_bytes() == b"png"


def fx_minutes(days: int) -> np.ndarray:
    """FX minute timestamps (Sunday 22:00 to Friday 22:00 UTC) over `days` calendar days from a Sunday open."""
    day = 86_400 * 10**9
    t0 = np.datetime64("2023-12-31T22:00", "ns").astype(np.int64)
    ts = np.arange(t0, t0 + days * day, MINUTE)
    weekday, hour = ((ts // day) + 3) % 7, (ts % day) // (3_600 * 10**9)  # Monday = 0
    closed = (weekday == 5) | ((weekday == 4) & (hour >= 22)) | ((weekday == 6) & (hour < 22))
    return ts[~closed]


@pytest.mark.parametrize(
    ("train_days", "refusal"), [(2.0, "no training rows"), (2.05, "fewer than --min-train-rows")]
)
def test_a_held_out_fold_without_a_folds_training_rows_is_refused_before_any_fold_trains(train_days, refusal):
    # rolling folds whose held-out period opens on a Sunday: its training window falls on the weekend
    ts = fx_minutes(45)
    open_row = int(np.flatnonzero(np.diff(ts) > 3_600 * 10**9)[-1]) + 1
    days = (int(ts[-1]) - int(ts[open_row])) / 86_400e9 + 1e-6
    config = FoldConfig(train_days=train_days, val_days=2, step_days=2, mode="rolling", holdout_days=days)
    with pytest.raises(BadInput, match=refusal):
        checked_holdout_range(ts, config, 13, 10**6, 0.0)


def test_a_held_out_fold_too_short_for_its_selection_tail_is_refused():
    ts = np.arange(3_000, dtype=np.int64) * MINUTE
    config = FoldConfig(train_days=1, val_days=0.1, step_days=0.1, mode="rolling", holdout_days=0.1,
                        min_train_rows=1)  # fmt: skip
    with pytest.raises(BadInput, match="select_tail_share"):
        checked_holdout_range(ts, config, 0, 65, 0.5)


def test_the_run_checks_its_held_out_fold_before_the_first_fold_trains(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    from foxhunt.run import pipeline

    def refused(*args):
        raise BadInput("--holdout-days 2: the held-out fold would train on 12 rows")

    monkeypatch.setattr(pipeline, "checked_holdout_range", refused)
    out = tmp_path / "out"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main([*train_argv(tiny_fxcache, out, tiny_params), "--holdout-days", "2"]) == 2
    assert not list(out.glob("fold_*"))
