"""On CUDA: a window's series scored on the device give the host's figures to 1e-9 at issue 23's shape
(a 185,000-bar validation window, every baseline), and a run on the GPU scores there."""

import dataclasses

import numpy as np
import torch
from support.plain_scoring import differences

from foxhunt.config import EvalConfig
from foxhunt.data.bars import generate_sample_bars
from foxhunt.data.features import compute_features
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.evaluation import MODEL, Scoring, evaluate_window
from foxhunt.evaluate.records import fold_record
from foxhunt.evaluate.run_scores import fold_baselines, run_scoring
from foxhunt.evaluate.series import stacked_figures

CUDA = torch.device("cuda")


def test_a_185k_bar_fold_window_scored_on_the_device_equals_the_host_to_1e_9():
    table = compute_features(generate_sample_bars(260_000))
    n, val = len(table), 185_000
    fold = FoldRange(0, 0, n - val - 60, n - val, n, 0.0)
    features, targets = torch.from_numpy(table.features).to(CUDA), torch.from_numpy(table.targets).to(CUDA)
    host = Scoring(cost=1e-4, seed=0)
    others = fold_baselines(features, targets, fold, host)
    positions = np.random.default_rng(0).integers(-1, 2, val).astype(np.float64)
    records = {
        name: fold_record(0, fold.val_start, pos, table.timestamp, table.targets[:, 0])
        for name, pos in {MODEL: positions, **others}.items()
    }
    got = evaluate_window(records, dataclasses.replace(host, device="cuda"), 0)
    assert not differences(got, evaluate_window(records, host, 0))


def test_the_device_draws_equal_the_hosts_for_series_far_from_zero():
    rng = np.random.default_rng(1)
    series = rng.normal(2e-5, 3e-4, size=(6, 50_000)) + np.array([[0.0], [0.05], [-0.02], [0], [0], [1e-3]])
    series[3] = 0.0  # a flat policy's P&L
    in_market = series != 0
    own = {"resamples": 500, "block": 0, "seed": 2}
    want_figures, want_draws = stacked_figures(series, in_market, **own)
    got_figures, got_draws = stacked_figures(series, in_market, device="cuda", **own)
    np.testing.assert_allclose(got_draws, want_draws, rtol=1e-9, atol=1e-12)
    for got, want in zip(got_figures, want_figures, strict=True):
        assert not differences(got, want)


def test_a_run_on_the_gpu_scores_its_windows_on_its_device():
    class Loaded:
        features = torch.zeros(2, 2, device=CUDA)

    assert run_scoring(EvalConfig(), 0, Loaded()).device == "cuda:0"
