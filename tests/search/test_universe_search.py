"""`foxhunt train --fxcache A --fxcache B ... --trials N` searches over the universe: each trial is a
universe run under trials/NNNN/, its objective the book of its instruments' stitched records (equal-risk
weights), the study's files are the single search's, study.json names the best trial's universe records,
and what it does not support is refused in one line before work."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from support.universe_cases import while_held

from foxhunt.cli import main
from foxhunt.data.features import compute_features
from foxhunt.data.fxcache import read_fxcache, write_fxcache
from foxhunt.data.sample_universe import generate_universe
from foxhunt.evaluate.book import (
    book_start,
    evaluate_book,
    instrument_series,
    inverse_vol_weights,
    volatility_before,
)
from foxhunt.evaluate.evaluation import MODEL, Scoring
from foxhunt.evaluate.records import bars_per_year
from foxhunt.run.lock import LOCK_NAME
from foxhunt.run.universe_run import load_series

DAYS = 12
FOLDS = ["--train-days", "4", "--val-days", "2", "--step-days", "2", "--max-folds", "3"]
NAMES = ("fx00", "exchange01")


@pytest.fixture(scope="module")
def caches(tmp_path_factory) -> dict[str, str]:
    """Two instruments over the same dates, one trading FX hours, the other an exchange's sessions; and a
    settings file that turns the tail selection off, so every trial's policy trades (a flat book's Sharpe
    is 0 whatever the weights)."""
    folder = tmp_path_factory.mktemp("universe")
    uris = {}
    for name, bars in generate_universe(2, n_bars=DAYS * 1440, seed=7, calendars=("fx", "exchange")):
        uris[name] = str(folder / f"{name}.fxcache")
        write_fxcache(uris[name], compute_features(bars), source_uri=f"sample://{name}", source_hash=name)
    uris["params"] = str(folder / "params.json")
    (folder / "params.json").write_text(json.dumps({"dqn": {"select_tail_share": 0}}))
    return uris


def train(caches: dict[str, str], out, *flags: str) -> int:
    """`foxhunt train` over both instruments with `flags`."""
    args = ["train", "--out", str(out), "--device", "cpu", "--epochs", "1", *FOLDS]
    args += ["--hyperopt-params", caches["params"], *flags]
    for name in NAMES:
        args += ["--fxcache", caches[name]]
    return main(args)


@pytest.fixture(scope="module")
def study(caches, tmp_path_factory):
    out = tmp_path_factory.mktemp("search") / "out"
    assert train(caches, out, "--trials", "2") == 0
    return out


def rows(out) -> list[dict]:
    with open(out / "trials.csv", newline="") as f:
        return list(csv.DictReader(f))


def book_by_hand(caches: dict[str, str], trial_folder, weights: dict[str, float] | None = None) -> float:
    """The book's stitched net Sharpe from the trial's per-instrument series (evaluate/book.py), weighted
    by 1/σ per year of each instrument's 1-bar returns before the book's first bar, or by `weights`."""
    series = load_series(str(trial_folder))
    instruments, sigmas = {}, {}
    for name in NAMES:
        cache = read_fxcache(caches[name])
        returns = cache.targets[np.searchsorted(cache.timestamp, series[name]["timestamp"]), 0]
        instruments[name] = instrument_series(series[name], returns, Scoring().cost_per_unit)
    start = book_start(instruments)
    for name in NAMES:
        cache = read_fxcache(caches[name])
        per_year = bars_per_year(cache.timestamp[cache.timestamp < start])
        sigmas[name] = volatility_before(
            cache.timestamp, cache.targets[:, 0], start, periods_per_year=per_year
        )
    book = evaluate_book(instruments, weights or inverse_vol_weights(sigmas), Scoring(resamples=0))
    return book.window.policies[MODEL].net.sharpe


def test_a_two_trial_search_finishes_and_writes_the_study(study):
    table = rows(study)
    assert [(r["number"], r["state"]) for r in table] == [("0", "COMPLETE"), ("1", "COMPLETE")]
    summary = json.loads((study / "study.json").read_text())
    assert summary["finished_trials"] == 2 and summary["states"] == {"COMPLETE": 2}
    assert (study / "best_params.json").exists() and (study / "trials.json").exists()
    assert (study / "trials.png").read_bytes()[:4] == b"\x89PNG"
    for row in table:
        report = json.loads((study / row["folder"] / "trial.json").read_text())
        assert (
            report["params"]
            and report["params"]
            == json.loads((study / "trials.json").read_text())[int(row["number"])]["params"]
        )


def test_each_trial_is_a_universe_run_under_its_folder(study):
    for row in rows(study):
        folder = study / row["folder"]
        summary = json.loads((folder / "summary.json").read_text())
        assert [i["name"] for i in summary["instruments"]] == list(NAMES)
        assert (folder / "book.json").exists()
        for name in NAMES:
            assert (folder / "instruments" / name / "series.npz").exists()
            assert (folder / "instruments" / name / "fold_0" / "report.json").exists()


def test_each_trials_objective_is_the_equal_risk_book_of_its_instruments_series(study, caches):
    for row in rows(study):
        folder = study / row["folder"]
        objective = float(row["objective"])
        assert objective == pytest.approx(book_by_hand(caches, folder), rel=1e-9)
        instruments = json.loads((folder / "summary.json").read_text())["instruments"]
        sharpes = [i["stitched_net_sharpe"] for i in instruments]
        # Not one instrument's, not their mean, not the book of equal weights: the test can tell them apart.
        assert all(abs(objective - s) > 1e-3 for s in [*sharpes, float(np.mean(sharpes))])
        unweighted = book_by_hand(caches, folder, {name: 0.5 for name in NAMES})
        assert abs(objective - unweighted) > 1e-3


def test_the_best_trial_is_the_highest_objective_and_study_json_says_where_its_records_are(study):
    table = rows(study)
    highest = max(table, key=lambda r: float(r["objective"]))
    summary = json.loads((study / "study.json").read_text())
    assert summary["best"]["number"] == int(highest["number"])
    best = summary["universe"]["best_trial"]
    assert best["number"] == int(highest["number"]) and best["folder"] == highest["folder"]
    book = json.loads((study / best["book"]).read_text())
    assert book["stitched_net_sharpe"] == pytest.approx(float(highest["objective"]), rel=1e-12)
    assert (study / best["summary"]).exists() and (study / best["instruments"] / NAMES[0]).is_dir()
    assert summary["universe"]["instruments"] == list(NAMES)


def test_the_pruner_is_told_each_folds_mean_of_its_instruments_net_validation_sharpe(study):
    for row in rows(study):
        folder = study / row["folder"]
        told = json.loads((folder / "trial.json").read_text())["fold_net_sharpe"]
        assert sorted(told) == ["0", "1", "2"]
        for fold, value in told.items():
            reports = [
                json.loads((folder / "instruments" / name / f"fold_{fold}" / "report.json").read_text())
                for name in NAMES
            ]
            sharpes = [r["evaluation"]["policies"]["model"]["net"]["sharpe"] for r in reports]
            assert value == pytest.approx(np.mean(sharpes), rel=1e-12) and sharpes[0] != sharpes[1]


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--population", "2"], "--population"),
        (["--study-storage", "postgresql://user@host/db", "--study-name", "s"], "--study-storage"),
        (["--objective", "mean_fold_sharpe"], "--objective mean_fold_sharpe"),
        (["--holdout-days", "2"], "--holdout-days"),
    ],
)
def test_what_a_universe_search_does_not_do_is_refused_in_one_line_before_work(
    caches, tmp_path, capsys, flags, named
):
    out = tmp_path / "out"
    assert train(caches, out, "--trials", "2", *flags) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert named in line and "several --fxcache" in line
    assert not out.exists()


def test_the_search_flags_without_trials_are_refused_for_a_universe(caches, tmp_path, capsys):
    out = tmp_path / "out"
    assert train(caches, out, "--population", "2") == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--population" in line and "--trials" in line
    assert not out.exists()


def test_an_out_holding_a_search_is_refused_without_overwrite(caches, study, capsys):
    before = (study / "study.json").read_bytes()
    assert train(caches, study, "--trials", "2") == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--overwrite" in line and str(study) in line
    assert (study / "study.json").read_bytes() == before


def test_a_live_runs_out_is_refused_to_a_universe_search_in_one_line(caches, tmp_path, capsys):
    out = tmp_path / "out"
    assert while_held(out, lambda: train(caches, out, "--trials", "1")) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "held by run another-run" in line
    assert sorted(p.name for p in out.iterdir()) == []


def test_a_finished_universe_search_leaves_no_lock_behind(study):
    assert not (study / LOCK_NAME).exists() and (study / "study.json").exists()
