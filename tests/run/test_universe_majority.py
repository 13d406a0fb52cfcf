"""`--result majority` with several instruments: each instrument's stitched record, the book and each
instrument's held-out record are the seeds' vote."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_universe_book import NAMES, caches, settings_for  # noqa: F401  (a module fixture, reused)

from foxhunt.evaluate.seed_spread import majority_positions
from foxhunt.run.universe_run import load_series, train_universe


@pytest.fixture(scope="module")
def voted(caches, tiny_params, tmp_path_factory):  # noqa: F811
    """A 3-seed universe run whose result is the vote, and the same run's first seed's series."""
    out = tmp_path_factory.mktemp("voted") / "out"
    flags = ("--hyperopt-params", str(tiny_params), "--seeds", "3", "--epochs", "2")
    lines: list[str] = []
    result = train_universe([caches[n] for n in NAMES], str(out), settings_for(out, *flags, "--result", "majority"),
                            lines.append)  # fmt: skip
    first = tmp_path_factory.mktemp("first") / "out"
    train_universe([caches[n] for n in NAMES], str(first), settings_for(first, *flags), lambda line: None)
    return out, result, lines, load_series(str(first))


def test_each_instruments_record_is_the_seeds_vote(voted):
    # Catches: the first seed's series written as the instrument's record under --result majority.
    out, result, _, first = voted
    assert any(not np.array_equal(result.series[n]["positions"], first[n]["positions"]) for n in NAMES)
    assert load_series(str(out)).keys() == set(NAMES)
    for name in NAMES:
        assert result.series[name]["timestamp"].tolist() == first[name]["timestamp"].tolist()


def test_the_book_is_the_book_of_the_seeds_vote(voted):
    # Catches: the first seed's book kept as the result beside the vote's figures.
    out, result, lines, _ = voted
    book = json.loads((out / "book.json").read_text())
    assert book["stitched_net_sharpe"] == book["seed_spread"]["majority"]["sharpe"]
    assert book["result"] == "majority of seeds 0, 1, 2"
    assert result.summary["book"]["stitched_net_sharpe"] == book["stitched_net_sharpe"]
    assert any(
        line.startswith(f"{NAMES[0]}: stitched net Sharpe") and "(majority of 3 seeds)" in line
        for line in lines
    )


def test_the_first_seeds_book_stays_in_the_spread(voted):
    out, _, _, _ = voted
    book = json.loads((out / "book.json").read_text())
    assert book["seed_spread"]["seeds"] == [0, 1, 2]
    assert book["seed_spread"]["sharpe"]["0"] != book["stitched_net_sharpe"]


def test_each_instruments_held_out_record_is_the_vote_of_the_seeds_held_out_folds(
    caches,  # noqa: F811
    tiny_params,
    tmp_path,
):
    # Catches: only the first seed training the held-out fold, or its positions scored as the headline.
    out = tmp_path / "out"
    flags = ("--hyperopt-params", str(tiny_params), "--seeds", "3", "--epochs", "2", "--holdout-days", "2")
    settings = settings_for(out, *flags, "--result", "majority")
    train_universe([caches[n] for n in NAMES], str(out), settings, lambda line: None)
    differ = []
    for name in NAMES:
        held = out / "holdout" / "instruments" / name
        (fold,) = held.glob("fold_*")
        members = [fold, *(held / s / fold.name for s in ("seed_1", "seed_2"))]
        voted = majority_positions([np.load(f / "positions.npy") for f in members])
        differ.append(not np.array_equal(voted, np.load(fold / "positions.npy")))
        record = json.loads((out / "instruments" / name / "holdout.json").read_text())
        model = record["evaluation"]["policies"]["model"]["net"]
        assert model["exposure"] == pytest.approx(np.abs(voted).mean())
    assert any(differ)  # the seeds disagree somewhere, so the test tells the vote from the first seed
