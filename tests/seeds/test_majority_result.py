"""`--result majority`: the seeds' vote is the run's result: its stitched record, tables and held-out
headline are the vote's, each seed stays in the spread."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from support import strict_json
from support.run_cases import copy_run, diverge_in_fold, finished_run, quick_argv, train_argv

from foxhunt.cli import main
from foxhunt.evaluate.seed_spread import majority_positions

# Real runs in fresh processes: seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

MAJORITY = ("--seeds", "3", "--result", "majority")
SEED_FOLDERS = ("", "seed_12", "seed_13")  # seeds 11, 12, 13: the tiny runs' --seed 11 and the next two


def _positions(folder, fold: int) -> np.ndarray:
    return np.load(folder / f"fold_{fold}" / "positions.npy")


def _vote(out, fold: int, under: str = "") -> np.ndarray:
    return majority_positions([_positions(out / under / s, fold) for s in SEED_FOLDERS])


@pytest.fixture(scope="module")
def voted_run(tiny_fxcache, tiny_params, tmp_path_factory):
    """A quick 3-seed run whose result is the seeds' vote: its out and console."""
    out = tmp_path_factory.mktemp("majority") / "out"
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        assert main(quick_argv(tiny_fxcache, out, tiny_params, *MAJORITY)) == 0
    return out, console.getvalue()


def test_the_runs_stitched_record_is_the_seeds_vote_not_the_first_seeds(voted_run):
    # Catches: the first seed's positions stitched as the result, or the vote's figures left in the spread only.
    out, _ = voted_run
    summary = strict_json.read(out / "summary.json")
    voted = np.concatenate([_vote(out, fold) for fold in range(3)])
    first = np.concatenate([_positions(out, fold) for fold in range(3)])
    assert not np.array_equal(voted, first)  # the tiny run's seeds disagree, so the test tells them apart
    model = summary["stitched"]["policies"]["model"]["net"]
    assert model["exposure"] == pytest.approx(np.abs(voted).mean())
    assert model["sharpe"] == summary["seed_spread"]["majority"]["sharpe"]
    assert summary["result"] == "majority of seeds 11, 12, 13"


def test_the_first_seed_keeps_its_own_figure_in_the_spread(voted_run, quick_run):
    # Catches: member 0's spread entry replaced by the vote's figure.
    out, _ = voted_run
    spread = strict_json.read(out / "summary.json")["seed_spread"]
    one = strict_json.read(quick_run.out / "summary.json")["stitched"]["policies"]["model"]["net"]["sharpe"]
    assert spread["sharpe"]["11"] == one


def test_the_console_names_the_vote_as_the_runs_result(voted_run):
    _, console = voted_run
    assert (
        "the run's result: the majority of seeds 11, 12, 13 (the side more than half hold, else flat)"
        in console
    )


def test_the_trade_list_is_the_votes(voted_run):
    # Catches: trades.parquet written from the first seed's record (the trades hold every bar in a position).
    import pyarrow.parquet as pq

    out, _ = voted_run
    held = sum(pq.read_table(out / "trades.parquet").column("bars_held").to_pylist())
    assert held == sum(int(np.count_nonzero(_vote(out, fold))) for fold in range(3))


def test_majority_needs_three_seeds(tiny_fxcache, tiny_params, tmp_path, capsys):
    assert (
        main(train_argv(tiny_fxcache, tmp_path / "out", tiny_params, "--seeds", "2", "--result", "majority"))
        == 2
    )
    assert "majority needs --seeds 3 or more, got 2" in capsys.readouterr().err


def test_with_a_seed_diverged_the_result_falls_back_to_the_first_seed_and_says_so(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch, capsys
):
    # Seed 13 diverges in fold 1: two seeds cannot vote, so the result is seed 11's, with a warning.
    diverge_in_fold(monkeypatch)
    out = tmp_path / "out"
    assert main(train_argv(tiny_fxcache, out, tiny_params, "--epochs", "1", *MAJORITY)) == 0
    summary = strict_json.read(out / "summary.json")
    assert summary["result"] == "seed 11 (the majority needs 3 seeds)"
    first = np.concatenate([_positions(out, fold) for fold in range(3)])
    assert summary["stitched"]["policies"]["model"]["net"]["exposure"] == pytest.approx(np.abs(first).mean())
    assert "WARNING --result majority: only seeds 11, 12 walked every fold" in capsys.readouterr().out


def test_with_a_seed_diverged_the_held_out_headline_is_the_first_seeds_and_says_so(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch, capsys
):
    # Catches: two seeds' agreement scored as the held-out headline without a word. Seed 13 diverges in
    # the held-out fold (fold 2, after the walk's 0 and 1), so two seeds walked it.
    diverge_in_fold(monkeypatch, fold=2)
    out = tmp_path / "out"
    argv = train_argv(
        tiny_fxcache, out, tiny_params, "--epochs", "1", "--max-folds", "2", "--holdout-days", "2"
    )
    assert main([*argv, *MAJORITY]) == 0
    assert "WARNING holdout: 2 seeds walked the held-out fold; its headline is the first seed's" in (
        capsys.readouterr().out
    )
    (fold,) = (int(d.name.split("_")[1]) for d in (out / "holdout").glob("fold_*"))
    first = _positions(out / "holdout", fold)
    model = strict_json.read(out / "holdout.json")["evaluation"]["policies"]["model"]["net"]
    assert model["exposure"] == pytest.approx(np.abs(first).mean())


def test_the_held_out_headline_is_the_vote_of_the_seeds_held_out_folds(tiny_fxcache, tiny_params, tmp_path):
    # Catches: only the first seed trained on the held-out fold, or its positions scored as the headline.
    out = tmp_path / "out"
    argv = train_argv(
        tiny_fxcache, out, tiny_params, "--epochs", "2", "--max-folds", "2", "--holdout-days", "2"
    )
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*argv, *MAJORITY]) == 0
    (fold,) = (int(d.name.split("_")[1]) for d in (out / "holdout").glob("fold_*"))
    voted = _vote(out, fold, "holdout")
    assert not np.array_equal(voted, _positions(out / "holdout", fold))
    holdout = strict_json.read(out / "holdout.json")
    model = holdout["evaluation"]["policies"]["model"]["net"]
    assert model["exposure"] == pytest.approx(np.abs(voted).mean())
    assert holdout["net_sharpe"] == model["sharpe"]


def test_a_resumed_run_votes_again_to_the_same_result_over_folds_it_took_over(
    tiny_fxcache, tiny_params, tmp_path_factory, tmp_path
):
    # Catches: the taken-over folds' saved positions left out of the vote, or the first seed's record as the result.
    flags = ("--epochs", "1", "--max-folds", "2", *MAJORITY)
    done = finished_run(tiny_fxcache, tiny_params, tmp_path_factory, "majority", *flags)
    out = copy_run(done, tmp_path / "out")
    (out / "seed_13" / "fold_1" / "weights.pt").unlink()
    (out / "summary.json").unlink()

    with contextlib.redirect_stdout(io.StringIO()):
        assert main(train_argv(tiny_fxcache, out, tiny_params, *flags)) == 0
    before, after = (strict_json.read(d / "summary.json") for d in (done, out))
    vote = before["stitched"]["policies"]["model"]["net"]
    assert vote["sharpe"] != before["seed_spread"]["sharpe"]["11"]  # the vote is not seed 11's record
    assert after["result"] == "majority of seeds 11, 12, 13"
    assert after["stitched"]["policies"]["model"]["net"] == before["stitched"]["policies"]["model"]["net"]


def test_a_run_resumed_with_another_result_is_refused(
    tiny_fxcache, tiny_params, tmp_path_factory, tmp_path, capsys
):
    flags = ("--epochs", "1", "--max-folds", "2", "--seeds", "3")
    out = copy_run(
        finished_run(tiny_fxcache, tiny_params, tmp_path_factory, "first", *flags), tmp_path / "out"
    )
    assert main(train_argv(tiny_fxcache, out, tiny_params, *flags, "--result", "majority")) == 2
    assert "(result: 'first-seed' → 'majority')" in capsys.readouterr().err


def test_two_members_are_no_vote_the_fold_keeps_the_first_members_outcome():
    # Catches: a "vote" of two seeds (their agreement) scored as a held-out headline.
    from foxhunt.run.fold import voted_outcome

    first, second = object(), object()
    assert voted_outcome(None, None, [first, second], None, None) is first  # type: ignore[arg-type]
