"""The epoch figures' graph cache, on the CPU: off the GPU every call computes (CI's path); the CUDA
captures and replays are checked in tests_gpu/test_epoch_graph_cuda.py."""

import torch

from foxhunt.train.epoch_graph import KEEP, ReplayedFigures, _keep


def test_off_the_gpu_every_call_computes_afresh():
    replayed = ReplayedFigures(torch.device("cpu"))
    calls = []

    def compute() -> torch.Tensor:
        calls.append(1)
        return torch.tensor([float(len(calls))])

    assert [replayed.run("fold 0", compute).item() for _ in range(3)] == [1.0, 2.0, 3.0]
    assert replayed.captures == 0 and not replayed.graphs and not replayed.seen


def test_the_cache_keeps_the_newest_keys_only():
    kept: dict = {}
    for key in range(KEEP + 2):
        _keep(kept, key, key)
    assert list(kept) == list(range(2, KEEP + 2))
