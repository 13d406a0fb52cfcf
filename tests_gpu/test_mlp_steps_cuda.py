"""On CUDA: the supervised MLP's fit as replayed CUDA graphs gives the eager fit's predictions bit for bit."""

import torch
from support.signal_arrays import signal_arrays

from foxhunt.evaluate import mlp_steps
from foxhunt.evaluate import supervised as sv

CUDA = torch.device("cuda")


def test_a_graphed_fit_equals_the_eager_fit_bit_for_bit_and_reuses_its_graphs_for_the_next_fit():
    arrays = signal_arrays(40_000, seed=3)
    x = torch.from_numpy(arrays.features).to(CUDA)
    y = torch.from_numpy(arrays.targets).to(CUDA)
    val = x[36_000:]
    for seed, (lo, hi) in enumerate(
        [(0, 30_000), (5_000, 35_000)]
    ):  # two fits: the second replays the graphs
        for h in sv.SUPERVISED_HORIZONS:
            target = y[lo:hi, sv.target_column(h)]
            graphed = sv.fit_mlp(x[lo:hi], target, h, seed=seed).predict(val)
            eager = sv.fit_mlp(x[lo:hi], target, h, seed=seed, graphs=False).predict(val)
            assert torch.equal(graphed, eager), (seed, h)
    plans = [plan for plan, graphs in mlp_steps._GRAPHS.items() if graphs is not None]
    assert len(plans) == 1 and plans[0].device.type == "cuda"
    assert len(mlp_steps._GRAPHS[plans[0]].graphs) == sv.MLP_STEPS // sv.MLP_CHECK_EVERY


def test_a_graphed_fit_moves_the_weights_and_keeps_the_best_checkpoint():
    arrays = signal_arrays(40_000, seed=4)
    x = torch.from_numpy(arrays.features).to(CUDA)
    target = torch.from_numpy(arrays.targets[:, sv.target_column(15)]).to(CUDA)
    fit = sv.fit_mlp(x[:30_000], target[:30_000], 15)
    first = fit.net[0].weight.detach().clone()
    second = sv.fit_mlp(x[:30_000], target[:30_000], 15, seed=1).net[0].weight
    assert not torch.equal(first, second)  # each fit starts from its own weights, not the last fit's
