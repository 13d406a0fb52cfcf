"""Scoring a window's series with torch (`device_series`, what a GPU run uses) gives the host's figures to
1e-9, on real EURUSD bars: each series' figures, its bootstrap draws, and a window's and a stitched run's
whole evaluation. Here torch runs on the CPU (the CUDA twin is tests_gpu/test_device_series_cuda.py)."""

import dataclasses

import numpy as np
import pytest
from support.eurusd_windows import COST, STITCHED_FOLDS, eurusd_arrays, stitched_plans, window_records
from support.plain_scoring import differences

from foxhunt.evaluate import device_series
from foxhunt.evaluate.evaluation import Scoring, evaluate_run, evaluate_window
from foxhunt.evaluate.score_memo import ScoreMemo
from foxhunt.evaluate.series import series_figures, stacked_figures


@pytest.fixture(scope="module")
def eurusd():
    return eurusd_arrays()


@pytest.fixture(scope="module")
def stack(eurusd):
    """Gross and net P&L of each policy (the flat ones constant), and where each is in the market."""
    records = window_records(eurusd)
    series = np.stack([p for r in records.values() for p in (r.gross_pnl(), r.pnl(COST))])
    in_market = np.stack([r.positions != 0 for r in records.values() for _ in range(2)])
    return series, in_market


@pytest.mark.parametrize("block", [0, 1, 7, 64])
def test_the_device_figures_and_draws_equal_the_hosts_to_1e_9(stack, block):
    series, in_market = stack
    own = {"resamples": 70, "block": block, "seed": 3}
    want_figures, want_draws = stacked_figures(series, in_market, **own)
    got_figures, got_draws = stacked_figures(series, in_market, device="cpu", **own)
    np.testing.assert_allclose(got_draws, want_draws, rtol=1e-9, atol=1e-12)
    for got, want in zip(got_figures, want_figures, strict=True):
        assert not differences(got, want), (got, want)


def test_a_constant_series_keeps_the_hosts_exact_figures(stack):
    series, in_market = stack
    flat = series[4:6]  # the flat policy: gross and net both 0 at every bar
    assert not flat.any()
    figures, draws = device_series.device_figures(
        flat, in_market[4:6], resamples=20, block=0, seed=1, device="cpu"
    )
    for f in figures:
        assert (f.sharpe, f.skewness, f.kurtosis, f.hac_error, f.constant) == (0.0, 0.0, 3.0, 0.0, True)
        assert (f.max_drawdown, f.hit_rate, f.log_return) == (0.0, 0.0, 0.0)
    assert not draws.any()


def test_each_figure_is_the_one_series_figures_gives(stack):
    series, in_market = stack
    got, _ = device_series.device_figures(series, in_market, resamples=0, block=0, seed=0, device="cpu")
    for row, mask, figures in zip(series, in_market, got, strict=True):
        want = series_figures(row, mask)
        assert dataclasses.asdict(figures).keys() == dataclasses.asdict(want).keys()
        assert not differences(figures, want)


def test_a_series_that_is_not_finite_is_scored_on_the_host_bit_for_bit(stack):
    series, in_market = stack
    broken = series[:4].copy()
    broken[1, 10] = np.nan
    assert (
        device_series.device_figures(broken, in_market[:4], resamples=5, block=0, seed=0, device="cpu")
        is None
    )
    got = stacked_figures(broken, in_market[:4], resamples=5, block=0, seed=0, device="cpu")
    want = stacked_figures(broken, in_market[:4], resamples=5, block=0, seed=0)
    got_rows = np.array([dataclasses.astuple(f) for f in got[0]], dtype=np.float64)
    assert np.array_equal(got_rows, np.array([dataclasses.astuple(f) for f in want[0]]), equal_nan=True)
    assert np.array_equal(got[1], want[1], equal_nan=True)


def test_the_gathered_blocks_split_into_groups_give_the_same_draws(stack, monkeypatch):
    series, in_market = stack
    own = {"resamples": 40, "block": 0, "seed": 5, "device": "cpu"}
    whole = device_series.device_figures(series, in_market, **own)[1]
    monkeypatch.setattr(device_series, "_GATHER_CELLS", 3 * 40 * 100)  # groups of a few series, a short last
    assert np.array_equal(device_series.device_figures(series, in_market, **own)[1], whole)


def test_a_window_scored_on_the_device_equals_the_host_in_every_figure(eurusd):
    records = window_records(eurusd)
    host = Scoring(cost=COST, spread=2e-5, resamples=150, seed=4)
    got = evaluate_window(records, dataclasses.replace(host, device="cpu"), 0)
    assert got.policies["flat"].net.sharpe_ci_low == 0.0
    assert not differences(got, evaluate_window(records, host, 0))


def test_a_stitched_run_scored_on_the_device_equals_the_host_in_every_figure(eurusd):
    timestamp, features, targets = eurusd
    folds = STITCHED_FOLDS
    model, plans = stitched_plans(features)
    host = Scoring(cost=COST, resamples=100, seed=6)

    def run(scoring: Scoring):
        return evaluate_run(
            features, targets, timestamp, folds, model, scoring, baselines=plans, memo=ScoreMemo()
        )

    got, want = run(dataclasses.replace(host, device="cpu")), run(host)
    assert not differences(got.stitched, want.stitched)
    for got_fold, want_fold in zip(got.folds, want.folds, strict=True):
        assert not differences(got_fold, want_fold), got_fold.fold


def test_a_run_scores_on_its_datas_cuda_device_and_on_the_host_otherwise():
    import torch

    from foxhunt.config import EvalConfig
    from foxhunt.evaluate.run_scores import run_scoring

    class Loaded:
        features = torch.zeros(2, 2)

    assert run_scoring(EvalConfig(), 0).device is None
    assert run_scoring(EvalConfig(), 0, Loaded()).device is None  # CPU data: numpy, bit for bit as before


def test_a_device_that_fails_leaves_the_window_to_the_host(stack, monkeypatch, caplog):
    series, in_market = stack

    def out_of_memory(*args, **kwargs):
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(device_series, "device_figures", out_of_memory)
    own = {"resamples": 10, "block": 0, "seed": 1}
    got = stacked_figures(series, in_market, device="cuda:0", **own)
    want = stacked_figures(series, in_market, **own)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])
    assert "scoring this window on the host" in caplog.text
