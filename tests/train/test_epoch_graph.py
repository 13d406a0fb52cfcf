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


class FakeGraph:
    """Stands in for a captured CUDA graph: counts its replays."""

    def __init__(self) -> None:
        self.replays = 0

    def replay(self) -> None:
        self.replays += 1


def counting_compute():
    calls: list[int] = []

    def compute() -> torch.Tensor:
        calls.append(1)
        return torch.tensor([float(len(calls))])

    return calls, compute


def test_a_key_runs_eagerly_then_is_captured_then_replays(monkeypatch):
    from foxhunt.train import epoch_graph

    graphs: list[FakeGraph] = []

    def capture(compute):
        graphs.append(FakeGraph())
        return graphs[-1], compute()

    monkeypatch.setattr(epoch_graph, "_capture", capture)
    replayed = ReplayedFigures(torch.device("cpu"))
    replayed.graphed = True  # as on a GPU
    calls, compute = counting_compute()
    for _ in range(4):
        replayed.run("fold 0", compute)
    assert len(calls) == 2 and replayed.captures == 1 and graphs[0].replays == 2
    replayed.run("fold 1", compute)  # another fold: eager again, its own capture next time
    replayed.run("fold 1", compute)
    assert len(calls) == 4 and replayed.captures == 2
    replayed.run("fold 0", compute)  # still kept: replayed
    assert len(calls) == 4 and graphs[0].replays == 3


def test_a_failed_capture_leaves_the_trainer_computing_eagerly(monkeypatch, caplog):
    from foxhunt.train import epoch_graph

    def capture(compute):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(epoch_graph, "_capture", capture)
    replayed = ReplayedFigures(torch.device("cpu"))
    replayed.graphed = True
    calls, compute = counting_compute()
    values = [replayed.run("fold 0", compute).item() for _ in range(4)]
    assert values == [1.0, 2.0, 3.0, 4.0] and not replayed.graphed and replayed.captures == 0
    assert "capture failed" in caplog.text


def test_a_new_fold_frees_the_graphs_of_the_fold_before(monkeypatch):
    from foxhunt.train import epoch_graph

    monkeypatch.setattr(epoch_graph, "_capture", lambda compute: (FakeGraph(), compute()))
    replayed = ReplayedFigures(torch.device("cpu"))
    replayed.graphed = True
    calls, compute = counting_compute()
    for key in ("with diagnostics", "without", "with diagnostics", "without"):
        replayed.run(key, compute, fold=0)
    assert len(replayed.graphs) == 2 and replayed.captures == 2
    replayed.run("with diagnostics", compute, fold=1)  # the next fold's first call: eager, fold 0's gone
    assert not replayed.graphs and list(replayed.seen) == ["with diagnostics"] and len(calls) == 5
    replayed.run("with diagnostics", compute, fold=1)
    assert replayed.captures == 3 and len(replayed.graphs) == 1
