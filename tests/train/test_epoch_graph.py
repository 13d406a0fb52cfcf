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

    def capture(compute, pool):
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

    def capture(compute, pool):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(epoch_graph, "_capture", capture)
    replayed = ReplayedFigures(torch.device("cpu"))
    replayed.graphed = True
    calls, compute = counting_compute()
    values = [replayed.run("fold 0", compute).item() for _ in range(4)]
    assert values == [1.0, 2.0, 3.0, 4.0] and not replayed.graphed and replayed.captures == 0
    assert "capture failed" in caplog.text


def test_a_folds_graphs_are_replayed_when_the_walk_comes_back_to_it(monkeypatch):
    # A search walks every fold once a round: the keys of fold 0 recur after fold 1's.
    from foxhunt.train import epoch_graph

    graphs: dict = {}

    def capture(compute, pool):
        graphs[len(graphs)] = FakeGraph()
        return graphs[len(graphs) - 1], compute()

    monkeypatch.setattr(epoch_graph, "_capture", capture)
    replayed = ReplayedFigures(torch.device("cpu"))
    replayed.graphed = True
    calls, compute = counting_compute()
    for fold in (0, 1):
        for key in ("with diagnostics", "without", "with diagnostics", "without"):
            replayed.run((fold, key), compute)
    assert replayed.captures == 4 and len(calls) == 8
    for key in ("with diagnostics", "without"):
        replayed.run((0, key), compute)  # the next round at fold 0: replayed, no warm-up, no capture
    assert replayed.captures == 4 and len(calls) == 8 and [g.replays for g in graphs.values()] == [1, 1, 0, 0]


def test_every_capture_draws_on_the_one_pool(monkeypatch):
    from foxhunt.train import epoch_graph

    pools = []

    def capture(compute, pool):
        pools.append(pool)
        return FakeGraph(), compute()

    monkeypatch.setattr(epoch_graph, "_capture", capture)
    replayed = ReplayedFigures(torch.device("cpu"))
    replayed.graphed, replayed.pool = True, ("pool", 7)  # as `torch.cuda.graph_pool_handle()` gives on a GPU
    _, compute = counting_compute()
    for key in ("a", "a", "b", "b"):
        replayed.run(key, compute)
    assert pools == [("pool", 7), ("pool", 7)]


class RecomputingGraph:
    """Stands in for a captured CUDA graph: a replay recomputes into the captured output, in place."""

    def __init__(self, compute, output: torch.Tensor) -> None:
        self.compute, self.output = compute, output

    def replay(self) -> None:
        self.output.copy_(self.compute())


def test_a_trainer_walking_a_fold_again_asks_for_the_keys_it_captured_there(monkeypatch):
    # The keys name the fold, the members' settings and the addresses the graph reads: a trainer reset for a
    # fold it walked before (a search's next round) must name the same ones, or its graphs never replay.
    from support.trainer_cases import FOLDS, SMALL, planted_arrays

    from foxhunt.train import DQNTrainer, epoch_graph, to_device

    monkeypatch.setattr(epoch_graph, "_capture", lambda c, pool: (RecomputingGraph(c, out := c()), out))
    trainer = DQNTrainer(
        to_device(*planted_arrays(), torch.device("cpu")), SMALL, max_train_rows=8000, seed=3
    )
    replayed = trainer.policies.replayed
    replayed.graphed = True  # as on a GPU
    for fold_range in (FOLDS[0], FOLDS[1], FOLDS[0]):
        trainer.set_fold_range(fold_range)
        trainer.reset_for_fold(fold_range.fold)
        trainer.window.compute_norm_stats()
        for epoch in range(3):
            trainer.train_epoch(epoch, 3, diagnose=False)
        if fold_range is FOLDS[1]:
            captured = replayed.captures
    assert captured == 2 and replayed.captures == captured  # fold 0 again: its graph replayed, none new


def test_the_cache_keeps_every_key_of_a_walk_at_the_default_folds():
    # A search's rounds walk the default 21 folds again and again, each with and without the diagnostics:
    # a cache of fewer keys would capture them anew every round (KEEP was 4 when only a run used it).
    assert KEEP >= 2 * 21
