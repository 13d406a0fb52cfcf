"""A run's stitched evaluation keeps each fold's evaluation as the fold ended instead of scoring its window
again, and what it keeps is what scoring again gives, figure for figure."""

from __future__ import annotations

import contextlib
import io

import pytest
from support.run_cases import quick_argv

from foxhunt.cli import main
from foxhunt.evaluate import evaluation
from foxhunt.evaluate.reports import window_to_dict
from foxhunt.evaluate.score_memo import ScoreMemo
from foxhunt.run import walk_forward

pytestmark = pytest.mark.slow  # a real run in-process


@pytest.fixture(scope="module")
def stitched(tiny_fxcache, tiny_params, tmp_path_factory):
    """A quick run's stitch: its arguments, its evaluation, and the windows `evaluate_window` scored in it."""
    seen: dict = {}
    real_stitch, real_window = walk_forward.stitch_outcomes, evaluation.evaluate_window

    def stitch(data, folds, outcomes, scoring, memo, baselines_from=None):
        seen["args"] = (data, folds, outcomes, scoring)
        seen["windows"] = []
        seen["evaluation"] = real_stitch(data, folds, outcomes, scoring, memo, baselines_from)
        return seen["evaluation"]

    def window(records, scoring, fold=-1, memo=None):
        if "windows" in seen:
            seen["windows"].append(fold)
        return real_window(records, scoring, fold, memo)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(walk_forward, "stitch_outcomes", stitch)
        patch.setattr(evaluation, "evaluate_window", window)
        with contextlib.redirect_stdout(io.StringIO()):
            out = tmp_path_factory.mktemp("kept") / "out"
            assert main(quick_argv(tiny_fxcache, out, tiny_params)) == 0
    return seen


def test_the_stitch_scores_only_the_stitched_record_not_the_folds_windows_again(stitched):
    # Catches: the folds' own evaluations dropped on the way to `evaluate_run` (each window scored twice).
    assert stitched["windows"] == [-1]


def test_the_folds_kept_are_what_scoring_their_windows_again_gives(stitched):
    # Catches: an evaluation kept for the wrong fold, or one of other positions or baselines than stitched.
    data, folds, outcomes, scoring = stitched["args"]
    # Beside baselines named apart (here the folds' own), every window is scored again, with a memo of its own.
    again = walk_forward.stitch_outcomes(data, folds, outcomes, scoring, ScoreMemo(), baselines_from=outcomes)
    kept = stitched["evaluation"]
    assert [window_to_dict(w) for w in kept.folds] == [window_to_dict(w) for w in again.folds]
    assert window_to_dict(kept.stitched) == window_to_dict(again.stitched)
    assert [w.fold for w in kept.folds] == sorted(outcomes)
