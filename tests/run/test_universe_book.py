"""A universe run's book: the instruments' stitched records combined with equal-risk weights measured
before the book's first out-of-sample bar, written to summary.json and book.json, printed beside each
instrument's line, and told to the metrics under `instrument="book"` beside each instrument's figures."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from support.telemetry_cases import new_metrics

from foxhunt.cli.commands import run_config
from foxhunt.cli.parser import build_parser
from foxhunt.data.features import compute_features
from foxhunt.data.fxcache import read_fxcache, write_fxcache
from foxhunt.data.sample_universe import generate_universe
from foxhunt.evaluate.book import book_to_dict, evaluate_book, instrument_series
from foxhunt.evaluate.evaluation import Scoring
from foxhunt.evaluate.records import bars_per_year
from foxhunt.evaluate.supervised import SUPERVISED_NAMES, oracle_label
from foxhunt.run.universe_run import load_series, train_universe

DAYS = 12
FOLDS = ["--train-days", "4", "--val-days", "2", "--step-days", "2", "--max-folds", "3"]
NAMES = ("fx00", "exchange01")


def settings_for(out, *flags: str):
    args = build_parser().parse_args(
        [
            "train",
            "--fxcache",
            "parsed-not-read",
            "--out",
            str(out),
            "--device",
            "cpu",
            "--pictures",
            "off",
            "--epochs",
            "1",
            *FOLDS,
            *flags,
        ]
    )
    return run_config(args)


@pytest.fixture(scope="module")
def caches(tmp_path_factory) -> dict[str, str]:
    """Two instruments over the same dates, one trading FX hours, the other an exchange's sessions."""
    folder = tmp_path_factory.mktemp("book")
    uris = {}
    for name, bars in generate_universe(2, n_bars=DAYS * 1440, seed=7, calendars=("fx", "exchange")):
        uris[name] = str(folder / f"{name}.fxcache")
        write_fxcache(uris[name], compute_features(bars), source_uri=f"sample://{name}", source_hash=name)
    return uris


@pytest.fixture(scope="module")
def run(caches, tmp_path_factory):
    """The run's folder, its result, its console lines and its metrics (no Pushgateway: the registry)."""
    out = tmp_path_factory.mktemp("run") / "out"
    lines: list[str] = []
    metrics = new_metrics("universe-book", None)
    result = train_universe([caches[n] for n in NAMES], str(out), settings_for(out), lines.append, metrics)
    return out, result, lines, metrics


def by_hand_weights(caches: dict[str, str], start_ns: int) -> dict[str, float]:
    """1 / (σ of the 1-bar returns before `start_ns` × √ their bars per year), normalised to sum to 1."""
    inverse = {}
    for name in NAMES:
        cache = read_fxcache(caches[name])
        before = cache.timestamp < start_ns
        returns = cache.targets[before, 0].astype(np.float64)
        inverse[name] = 1.0 / (returns.std() * np.sqrt(bars_per_year(cache.timestamp[before])))
    total = sum(inverse.values())
    return {name: value / total for name, value in inverse.items()}


def test_the_summarys_book_is_the_book_of_the_series_written_with_weights_from_before_its_start(run, caches):
    out, result, _, _ = run
    series = load_series(str(out))
    start = min(int(s["timestamp"][0]) for s in series.values())
    cost = Scoring().cost_per_unit  # the run's evaluation costs are the defaults
    instruments = {}
    for name in NAMES:
        cache = read_fxcache(caches[name])
        returns = cache.targets[np.searchsorted(cache.timestamp, series[name]["timestamp"]), 0]
        instruments[name] = instrument_series(series[name], returns, cost)
    book = evaluate_book(instruments, by_hand_weights(caches, start), Scoring(seed=0))
    written = json.loads((out / "summary.json").read_text())["book"]
    expected = json.loads(json.dumps(book_to_dict(book)))
    assert written["weights"] == pytest.approx(expected["weights"], rel=1e-12)
    assert written["window"] == expected["window"]


def test_book_json_holds_the_summarys_book(run):
    out, _, _, _ = run
    summary = json.loads((out / "summary.json").read_text())
    assert json.loads((out / "book.json").read_text()) == summary["book"]
    assert (
        summary["book"]["stitched_net_sharpe"]
        == summary["book"]["window"]["policies"]["model"]["net"]["sharpe"]
    )


def test_the_books_baselines_are_buy_and_hold_flat_and_the_supervised_models_compared_paired(run):
    window = run[1].summary["book"]["window"]
    assert set(window["policies"]) == {"model", "buy_and_hold", "flat", *SUPERVISED_NAMES}
    assert set(window["standings"]) == {"buy_and_hold", "flat", *SUPERVISED_NAMES}
    assert window["policies"]["flat"]["net"]["log_return"] == 0.0


def test_the_books_feature_oracle_is_its_best_combined_supervised_model(run):
    out, result, _, _ = run
    book = json.loads((out / "summary.json").read_text())["book"]
    policies = book["window"]["policies"]
    best = max(SUPERVISED_NAMES, key=lambda name: policies[name]["net"]["sharpe"])
    net = policies[best]["net"]
    oracle = book["feature_oracle"]
    assert (oracle["name"], oracle["sharpe"]) == (best, net["sharpe"])
    assert oracle["ci"] == [net["sharpe_ci_low"], net["sharpe_ci_high"]]
    assert oracle["label"] == oracle_label(len(SUPERVISED_NAMES))
    share = book["stitched_net_sharpe"] / net["sharpe"] if net["sharpe"] > 0 else None
    assert oracle["share"] == (None if share is None else pytest.approx(share, rel=1e-12))
    assert json.loads((out / "book.json").read_text())["feature_oracle"] == oracle


def test_the_books_console_line_names_its_feature_oracle(run):
    oracle = run[1].summary["book"]["feature_oracle"]
    line = [line for line in run[2] if line.startswith("book:")][-1]
    assert f"feature oracle ({oracle['label']}: {oracle['name']}) {oracle['sharpe']:.2f}" in line


def test_the_console_names_the_book_after_each_instruments_line(run):
    lines = run[2]
    stitched = [i for i, line in enumerate(lines) if "stitched net Sharpe" in line]
    assert [lines[i].split(":")[0] for i in stitched] == [*NAMES, "book"]
    assert "buy-and-hold" in lines[stitched[-1]] and "weights" in lines[stitched[-1]]


def test_the_metrics_carry_each_instruments_figures_and_the_books_under_its_label(run):
    _, result, _, metrics = run

    def sample(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(name, labels)

    for entry in result.summary["instruments"]:
        assert (
            sample("foxhunt_stitched_validation_sharpe", instrument=entry["name"])
            == entry["stitched_net_sharpe"]
        )
        assert sample("foxhunt_fold_seconds", fold="0", instrument=entry["name"], trial="") is not None
    book = result.summary["book"]["stitched_net_sharpe"]
    assert sample("foxhunt_stitched_validation_sharpe", instrument="book") == book
    assert sample("foxhunt_run_finished", status="succeeded") == 1


def test_with_seeds_the_book_reports_the_seeds_spread_of_its_net_sharpe(caches, tmp_path):
    out = tmp_path / "seeds"
    settings = replace(settings_for(out), seeds=2)
    result = train_universe([caches[n] for n in NAMES], str(out), settings, lambda line: None)
    spread = result.summary["book"]["seed_spread"]
    assert spread["seeds"] == [0, 1]
    assert spread["sharpe"]["0"] == result.summary["book"]["stitched_net_sharpe"]


def test_with_three_seeds_the_book_reports_the_book_of_their_majority(caches, tmp_path):
    out = tmp_path / "seeds"
    lines: list[str] = []
    settings = replace(settings_for(out), seeds=3)
    result = train_universe([caches[n] for n in NAMES], str(out), settings, lines.append)
    majority = result.summary["book"]["seed_spread"]["majority"]
    assert majority["members"] == [0, 1, 2]
    assert json.loads((out / "book.json").read_text())["seed_spread"]["majority"] == majority
    said = f"book: majority of 3 seeds (the side more than half hold, else flat): stitched net Sharpe {majority['sharpe']:.2f}"
    assert any(line.startswith(said) for line in lines)


def _evaluation(positions: list[float], cost: float = 1e-3):
    from foxhunt.evaluate.evaluation import MODEL, RunEvaluation
    from foxhunt.evaluate.records import Record

    n = len(positions)
    returns = np.linspace(-2e-3, 3e-3, n)

    def record(p) -> Record:
        return Record(index=np.arange(n), timestamp=np.arange(n, dtype=np.int64) * 60_000_000_000,
                      positions=np.asarray(p, dtype=np.float64), returns=returns, fold=np.zeros(n, np.int64),
                      bars_per_year=98_280.0)  # fmt: skip

    records = {MODEL: record(positions), "buy_and_hold": record([1.0] * n)}
    return RunEvaluation(folds=[], stitched=None, records=records, cost_per_unit=cost)  # type: ignore[arg-type]


def test_an_instruments_majority_series_votes_the_seeds_positions_and_pays_the_votes_own_costs():
    # Catches: the first seed's positions or net returns kept, or the cost of the seeds' own changes paid.
    from foxhunt.evaluate.evaluation import MODEL
    from foxhunt.run.universe_book import majority_series

    seeds = [_evaluation([1, 1, 0, -1, -1]), _evaluation([1, 0, 0, -1, 1]), _evaluation([0, 1, 1, -1, 1])]
    series = majority_series(seeds)
    voted = _evaluation([1, 1, 0, -1, 1])
    assert series["positions"].tolist() == [1.0, 1.0, 0.0, -1.0, 1.0]
    want = voted.records[MODEL].pnl(voted.cost_per_unit, None)
    assert np.allclose(series["net_returns"], want)
    assert np.array_equal(
        series["buy_and_hold/net_returns"], seeds[0].records["buy_and_hold"].pnl(1e-3, None)
    )
