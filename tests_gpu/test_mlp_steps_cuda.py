"""On CUDA: the supervised MLP's fit as replayed CUDA graphs gives the eager fit's predictions bit for bit, and
fits made side by side (one stream each) give each fit's own."""

import torch
from support.signal_arrays import signal_arrays

from foxhunt.data.folds import FoldRange
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
    captured = {key: graphs for key, graphs in mlp_steps._GRAPHS.items() if graphs is not None}
    assert len({plan for plan, _ in captured}) == 1 and next(iter(captured))[0].device.type == "cuda"
    assert all(len(graphs.graphs) == sv.MLP_STEPS // sv.MLP_CHECK_EVERY for graphs in captured.values())


def test_fits_made_side_by_side_on_their_own_streams_equal_each_fit_made_alone_bit_for_bit():
    # Catches: a slot replaying another slot's graphs (their static buffers), or the main stream reading a
    # fit's weights before its stream has finished them.
    arrays = signal_arrays(40_000, seed=5)
    x = torch.from_numpy(arrays.features).to(CUDA)
    y = torch.from_numpy(arrays.targets).to(CUDA)
    fold = FoldRange(1, 0, 32_000, 32_000, 40_000, 0.0)
    for _ in range(2):  # the second time replays each slot's graphs
        together = sv.mlp_predictions(x, y, fold)
        for h in sv.SUPERVISED_HORIZONS:
            alone = sv.fit_mlp(x[:32_000], y[:32_000, sv.target_column(h)], h, seed=sv.SUPERVISED_SEED + 1)
            assert torch.equal(together[f"mlp_{h}"], alone.predict(x[32_000:])), h
    slots = {slot for (_, slot), graphs in mlp_steps._GRAPHS.items() if graphs is not None}
    assert slots == set(range(len(sv.SUPERVISED_HORIZONS)))


def test_a_graphed_fit_moves_the_weights_and_keeps_the_best_checkpoint():
    arrays = signal_arrays(40_000, seed=4)
    x = torch.from_numpy(arrays.features).to(CUDA)
    target = torch.from_numpy(arrays.targets[:, sv.target_column(15)]).to(CUDA)
    fit = sv.fit_mlp(x[:30_000], target[:30_000], 15)
    first = fit.net[0].weight.detach().clone()
    second = sv.fit_mlp(x[:30_000], target[:30_000], 15, seed=1).net[0].weight
    assert not torch.equal(first, second)  # each fit starts from its own weights, not the last fit's
