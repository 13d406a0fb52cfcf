"""`foxhunt train --fxcache A --fxcache B ... --holdout-days D`: the last D days by calendar across the
universe (one cut: the latest bar of any instrument less D days) are seen by no fold; one more universe
fold trains before the cut and validates each instrument on its rows after it; each instrument's held-out
record and the book's (combined with the run's book's weights) are written, printed and put in
summary.json. An instrument without enough held-out bars takes no part, with a warning naming it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.telemetry_cases import new_metrics
from support.universe_cases import three_instruments, write_caches

from foxhunt.cli.commands import run_config
from foxhunt.cli.parser import build_parser
from foxhunt.config import NS_PER_DAY, FoldConfig
from foxhunt.data.fxcache import read_fxcache
from foxhunt.data.sample_universe import generate_universe
from foxhunt.errors import BadInput
from foxhunt.evaluate.book import evaluate_book, instrument_series
from foxhunt.evaluate.evaluation import BUY_AND_HOLD, Scoring
from foxhunt.run.holdout import HOLDOUT_GAP
from foxhunt.run.universe_holdout import plan_universe
from foxhunt.run.universe_run import train_universe

DAYS = 12
HOLDOUT_DAYS = 2
# Three folds of 3 validation days; without the cut a fourth would validate on the last days.
FOLDS = ["--train-days", "4", "--val-days", "3", "--step-days", "3", "--holdout-days", str(HOLDOUT_DAYS)]
TAKING_PART = ("fx00", "exchange01", "late")
COST = 1e-4  # the run's --eval-cost (its default), no spread: each instrument's cost per unit


@pytest.fixture(scope="module")
def caches(tmp_path_factory) -> dict[str, str]:
    """fx00 and exchange01 over the same dates; `late`, whose bars start 4 days later; `early`, whose bars
    end days before the held-out period."""
    (early,) = generate_universe(1, n_bars=(DAYS - 4) * 1440, seed=11)
    instruments = [*three_instruments(DAYS), ("early", early[1])]
    return write_caches(tmp_path_factory.mktemp("universe_holdout"), instruments)


@pytest.fixture(scope="module")
def cut(caches) -> int:
    """The held-out period's cut, by hand: the latest bar of any instrument less D days."""
    return max(int(read_fxcache(uri).timestamp[-1]) for uri in caches.values()) - HOLDOUT_DAYS * NS_PER_DAY


@pytest.fixture(scope="module")
def run(caches, tmp_path_factory):
    """The run's folder, its result, its console lines and its metrics (no Pushgateway: the registry)."""
    out = tmp_path_factory.mktemp("run") / "out"
    args = ["train", "--fxcache", "x", "--out", str(out), "--device", "cpu", "--pictures", "off", "--epochs", "1",
            *FOLDS]  # fmt: skip
    settings = run_config(build_parser().parse_args(args))
    lines: list[str] = []
    metrics = new_metrics("universe-holdout", None)
    result = train_universe([caches[n] for n in caches], str(out), settings, lines.append, metrics)
    return out, result, lines, metrics


def first_after(uri: str, cut: int) -> int:
    """An instrument's first held-out row, by hand."""
    ts = read_fxcache(uri).timestamp
    return int(np.flatnonzero(ts > cut)[0]) if ts[-1] > cut else len(ts)


def test_no_fold_trains_or_validates_on_a_held_out_row(run, caches, cut):
    out, result, _, _ = run
    for name in TAKING_PART:
        held = first_after(caches[name], cut)
        for fold in next(i for i in result.summary["instruments"] if i["name"] == name)["folds"]:
            report = json.loads((out / "instruments" / name / f"fold_{fold}" / "report.json").read_text())
            assert report["train_end"] <= report["val_start"] < report["val_end"] <= held - HOLDOUT_GAP


def test_the_held_out_fold_validates_exactly_each_instruments_rows_after_the_cut(run, caches, cut):
    out, result, _, _ = run
    number = result.summary["folds"]
    for name in TAKING_PART:
        rows = len(read_fxcache(caches[name]))
        report = json.loads(
            (out / "holdout" / "instruments" / name / f"fold_{number}" / "report.json").read_text()
        )
        assert (report["val_start"], report["val_end"]) == (first_after(caches[name], cut), rows)
        assert report["train_start"] == 0 and report["train_end"] < report["val_start"]  # expanding
        record = json.loads((out / "instruments" / name / "holdout.json").read_text())
        assert (
            record["rows"] == [report["val_start"], rows] and record["n_bars"] == rows - report["val_start"]
        )


def test_every_instrument_shares_the_held_out_dates_after_one_cut(run, cut):
    holdout = run[1].summary["holdout"]
    starts = {name: figures["start"] for name, figures in holdout["instruments"].items()}
    assert starts.keys() == set(TAKING_PART)
    assert all(np.datetime64(s.rstrip("Z"), "ns").astype(np.int64) > cut for s in starts.values())


def held_out_series(out, caches: dict[str, str], name: str, number: int) -> dict[str, np.ndarray]:
    """An instrument's held-out series rebuilt from its fxcache and the held-out fold's positions."""
    cache = read_fxcache(caches[name])
    start, end = json.loads((out / "instruments" / name / "holdout.json").read_text())["rows"]
    positions = np.load(out / "holdout" / "instruments" / name / f"fold_{number}" / "positions.npy")
    returns = cache.targets[start:end, 0].astype(np.float64)
    net = positions * returns - COST * np.abs(np.diff(positions, prepend=0.0))
    return {
        "timestamp": cache.timestamp[start:end],
        "positions": positions,
        "net_returns": net,
        "returns": returns,
    }


def test_the_books_held_out_record_combines_the_instruments_held_out_series_with_the_runs_weights(
    run, caches
):
    out, result, _, _ = run
    number = result.summary["folds"]
    weights = {n: result.summary["book"]["weights"][n] for n in TAKING_PART}  # early takes no part
    weights = {n: w / sum(weights.values()) for n, w in weights.items()}
    instruments = {}
    for name in TAKING_PART:
        s = held_out_series(out, caches, name, number)
        instruments[name] = instrument_series(s, s["returns"], COST)
    book = evaluate_book(instruments, weights, Scoring(cost=COST, spread=0.0, seed=0, execution=None))
    held = result.summary["holdout"]["book"]
    assert held["buy_and_hold_sharpe"] == pytest.approx(
        book.window.policies[BUY_AND_HOLD].net.sharpe, rel=1e-9
    )
    assert held["n_bars"] == book.window.n_bars and held["weights"] == pytest.approx(weights)
    written = json.loads((out / "holdout.json").read_text())
    assert written["book"]["net_sharpe"] == held["net_sharpe"]


def test_an_instrument_without_held_out_bars_is_left_out_with_a_warning(run):
    out, result, lines, _ = run
    assert result.summary["holdout"]["left_out"] == ["early"]
    assert "early" in {i["name"] for i in result.summary["instruments"] if i["folds"]}  # in the folds, though
    warned = [line for line in lines if line.startswith("WARNING instrument early")]
    assert len(warned) == 1 and "held-out period" in warned[0] and "0 bars" in warned[0]
    assert not (out / "instruments" / "early" / "holdout.json").exists()


def test_the_books_held_out_figure_is_one_console_line_and_a_gauge(run):
    _, result, lines, metrics = run
    net = result.summary["holdout"]["book"]["net_sharpe"]
    book_lines = [line for line in lines if line.startswith("book: held-out net Sharpe")]
    assert len(book_lines) == 1 and f"{net:.2f}" in book_lines[0]
    labels = {"days": f"{HOLDOUT_DAYS:g}", "instrument": "book"}
    assert metrics.registry.get_sample_value("foxhunt_holdout_net_sharpe", labels) == net


def minutes(start_day: float, days: float) -> np.ndarray:
    """A bar a minute from day `start_day` for `days` days (int64 ns)."""
    first = round(start_day * NS_PER_DAY)
    return first + np.arange(round(days * 1440), dtype=np.int64) * 60_000_000_000


def test_a_held_out_period_no_instrument_can_take_part_in_is_refused_before_work():
    # a ends before the cut; b has 5 bars after it, fewer than the 100 a validation needs.
    a, b = minutes(0, 10), np.concatenate([minutes(0, 10), minutes(11.9, 5 / 1440)])
    config = FoldConfig(train_days=4, val_days=2, step_days=2, holdout_days=1)
    warnings: list[str] = []
    with pytest.raises(BadInput, match="--holdout-days 1: no instrument can take part"):
        plan_universe([a, b], [np.zeros(len(a)), np.zeros(len(b))], ["a", "b"], config, warnings.append)
    assert [w.split(" takes")[0] for w in warnings] == ["WARNING instrument a", "WARNING instrument b"]


def test_the_held_out_folds_pooled_decision_weighs_the_runs_out_of_sample_windows(run):
    # as every fold's did: the run's folds' windows all end before the held-out period
    out = run[0]
    (held,) = (out / "holdout" / "instruments" / "fx00").glob("fold_*")
    report = json.loads((held / "report.json").read_text())
    folds = sorted((out / "instruments" / "fx00").glob("fold_*"), key=lambda p: int(p.name.split("_")[1]))
    recorded = [json.loads((f / "report.json").read_text())["selection"]["out_of_sample"] for f in folds]
    expected = [[w["fold"], "out_of_sample"] for w in recorded if w is not None]
    assert expected and report["selection"]["pooled"]["windows"][1:] == expected


def test_a_bar_exactly_at_the_cut_is_not_held_out():
    # held out: the bars after the cut, last − D days = day 9; the bar of day 9 itself is not held out
    from foxhunt.run.universe_holdout import first_held_out, holdout_cut

    ts = (np.array([0.0, 9.0, 9.5, 10.0]) * NS_PER_DAY).astype(np.int64)
    cut = holdout_cut([ts], 1.0)
    assert cut == 9 * NS_PER_DAY and first_held_out(ts, cut) == 2


def test_the_held_out_fold_validates_from_the_nanosecond_after_the_cut():
    from foxhunt.run.universe_holdout import holdout_fold

    ts = minutes(0, 10)
    cut = int(ts[-200])  # 199 bars after the cut
    config = FoldConfig(train_days=4, val_days=2, step_days=2, min_val_rows=100, min_train_rows=100)
    fold, left_out = holdout_fold([ts], config, cut, 7, {0})
    assert left_out == {} and fold.val_window == (cut + 1, int(ts[-1]) + 1)


@pytest.mark.parametrize(("held", "takes_part"), [(100, True), (99, False)])
def test_an_instrument_with_exactly_min_val_rows_after_the_cut_takes_part(held, takes_part):
    from foxhunt.run.universe_holdout import holdout_fold

    ts = minutes(0, 10)
    cut = int(ts[-held - 1])
    config = FoldConfig(train_days=4, val_days=2, step_days=2, min_val_rows=100, min_train_rows=100)
    fold, left_out = holdout_fold([ts], config, cut, 7, {0})
    assert (fold.ranges[0] is not None, 0 in left_out) == (takes_part, not takes_part)
