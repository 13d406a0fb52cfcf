"""`--seeds K` shares what depends on the data and the fold alone: each fold window's baselines are fitted
once for every seed, and each baseline's record is scored once, not once a seed; every seed's figures are
those of a run that shared nothing."""

from __future__ import annotations

import contextlib
import io
from collections import Counter
from pathlib import Path

import pytest
from support import strict_json
from support.run_cases import copy_run, quick_argv

from foxhunt.cli import main
from foxhunt.evaluate import evaluation, run_scores, score_memo
from foxhunt.run import walk_forward

# Real runs in-process: seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

FOLDS = 3  # the quick run's folds (run_cases.TRAIN_ARGS)
SEEDS = ("--seeds", "3")
BASELINE = "ridge"  # one of the fitted baselines, scored in every fold window and in the stitched record


class Counted:
    """Every fold window's baseline fit and every record scored (by name), during one run."""

    def __init__(self, monkeypatch) -> None:
        self.fits: list[int] = []
        self.scored: Counter[str] = Counter()
        fit, score = run_scores.fold_baselines, evaluation.score_records

        def counted_fit(features, targets, fold_range, scoring):
            self.fits.append(fold_range.fold)
            return fit(features, targets, fold_range, scoring)

        def counted_score(records, scoring, benchmark=None):
            self.scored.update(list(records))  # the names scored
            return score(records, scoring, benchmark)

        monkeypatch.setattr(run_scores, "fold_baselines", counted_fit)
        monkeypatch.setattr(evaluation, "score_records", counted_score)


def _train(argv: list[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0


@pytest.fixture(scope="module")
def three_seeds(tiny_fxcache, tiny_params, tmp_path_factory) -> tuple[Path, Counted]:
    """A quick run of three seeds, once a module, with its baseline fits and scored records counted: its
    --out (tests that continue it take a copy) and the counts."""
    out = tmp_path_factory.mktemp("three-seeds") / "out"
    with pytest.MonkeyPatch.context() as patch:
        counted = Counted(patch)
        _train(quick_argv(tiny_fxcache, out, tiny_params, *SEEDS))
    return out, counted


def test_a_run_of_three_seeds_fits_each_folds_baselines_once(three_seeds):
    _, counted = three_seeds
    assert sorted(counted.fits) == list(range(FOLDS))


def test_a_run_of_three_seeds_scores_each_baseline_record_as_a_run_of_one_does(
    three_seeds, tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    counted = Counted(monkeypatch)
    _train(quick_argv(tiny_fxcache, tmp_path / "one", tiny_params))
    one_seed = counted.scored[BASELINE]

    # A seed's own memo would score the baseline's records again for every other seed.
    assert three_seeds[1].scored[BASELINE] == one_seed > 0


def test_a_resumed_run_of_three_seeds_fits_each_folds_baselines_once(
    three_seeds, tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    out = copy_run(three_seeds[0], tmp_path / "out")
    counted = Counted(monkeypatch)

    _train(quick_argv(tiny_fxcache, out, tiny_params, *SEEDS))  # every fold taken over: no baseline kept

    assert sorted(counted.fits) == list(range(FOLDS))


def test_every_seeds_figures_equal_those_of_seeds_that_share_nothing(
    three_seeds, tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    shared = three_seeds[0]
    alone = copy_run(shared, tmp_path / "alone")
    (alone / "summary.json").unlink()
    real = walk_forward.stitch_outcomes

    def own_memo(data, folds, outcomes, scoring, memo, baselines_from=None):  # nothing shared
        return real(data, folds, outcomes, scoring, score_memo.ScoreMemo(), None)

    monkeypatch.setattr(walk_forward, "stitch_outcomes", own_memo)
    _train(quick_argv(tiny_fxcache, alone, tiny_params, *SEEDS))  # the folds taken over, stitched alone

    figures = [strict_json.read(out / "summary.json") for out in (shared, alone)]
    assert figures[0]["seed_spread"] == figures[1]["seed_spread"]
    assert figures[0]["stitched"] == figures[1]["stitched"]
