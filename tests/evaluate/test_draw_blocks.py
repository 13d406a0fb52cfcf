"""The block starts drawn ahead of scoring (`series.draw_blocks`) are the ones the window's scoring
resamples: scoring then draws nothing more."""

import numpy as np
import pytest

from foxhunt.evaluate import sharpe as sr
from foxhunt.evaluate.series import draw_blocks, stacked_figures


@pytest.mark.parametrize(
    "block", [0, 9, 10_000]
)  # the default length, a given one, one longer than the series
def test_scoring_after_the_blocks_are_drawn_draws_nothing_more(block):
    series = np.random.default_rng(3).normal(0, 1e-3, (2, 700))
    sr.bootstrap_starts.cache_clear()
    draw_blocks(700, resamples=40, block=block, seed=6)
    drawn = sr.bootstrap_starts.cache_info().misses
    stacked_figures(series, series != 0, resamples=40, block=block, seed=6)
    assert drawn == 1 and sr.bootstrap_starts.cache_info().misses == 1


def test_nothing_is_drawn_without_resamples_or_for_a_single_bar():
    sr.bootstrap_starts.cache_clear()
    draw_blocks(700, resamples=0, block=0, seed=6)
    draw_blocks(1, resamples=40, block=0, seed=6)
    assert sr.bootstrap_starts.cache_info().misses == 0
