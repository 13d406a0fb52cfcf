"""A universe fold's epoch figures come from ONE device computation: every instrument's tail Sharpe (its own
rows, norm stats and execution rows, each member's own cost) is in the members' one vector, pooled by bars
on the host exactly as each instrument's per-call tail score pooled; the fold asks the epoch graph cache
for one key per diagnostics setting whatever its instruments, so a fold of more instruments than the cache
keeps keys (epoch_graph.KEEP) still captures once and replays."""

from __future__ import annotations

import functools
from dataclasses import replace

import torch
from support.trainer_cases import SMALL, planted_arrays

from foxhunt.config import EvalConfig
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.run_scores import execution_rows
from foxhunt.train import DQNTrainer, epoch_graph
from foxhunt.train.device_data import SpanPart, universe_to_device
from foxhunt.train.epoch_graph import KEEP, ReplayedFigures

N = 3000  # rows per instrument
K = KEEP + 1  # instruments in the fold: more than the cache keeps keys, were there one per instrument
# Two members at different costs; abstention off, so that the greedy policies trade on the tails.
CONFIGS = [replace(SMALL, select_tail_share=0.25, abstain_cost_multiple=0.0, cost=c) for c in (0.0, 2e-4)]
EXECUTION = EvalConfig(cost=1e-4, spread=2e-4, slippage=2e-5)


def part(instrument: int) -> SpanPart:
    """Instrument `instrument`'s part: training rows of their own length, a tail of its own length."""
    base, train = instrument * N, 1600 + 100 * instrument
    fold = FoldRange(0, base, base + train, base + train + 20, base + N, 1.0)
    return SpanPart(instrument, fold, base + train - 300 - 40 * instrument)


@functools.cache
def arrays():
    return [planted_arrays(N, seed=s) for s in range(K)]


def universe_trainer() -> DQNTrainer:
    """A population of two on K instruments, pointed at a fold of all of them, its norm stats computed."""
    data = universe_to_device([f"i{i}" for i in range(K)], arrays(), torch.device("cpu"))
    trainer = DQNTrainer(
        data,
        CONFIGS,
        max_train_rows=K * N,
        seed=1,
        eval_spread=1e-4,
        execution=execution_rows(EXECUTION, data),
    )
    trainer.window.set_parts([part(i) for i in range(K)])
    trainer.reset_for_fold(0)
    trainer.window.compute_norm_stats()
    return trainer


def test_an_epochs_tail_sharpe_is_every_instruments_tail_score_pooled_by_bars():
    trainer = universe_trainer()
    trainer.train_epoch(0, 3)
    policies = trainer.policies
    read = policies.epoch_figures(1, {0: None, 1: None})
    for member in (0, 1):
        alone = []
        for p in policies.window.parts:
            policies.window.focus(p.instrument)
            alone.append(policies.tail_score(member))
        policies.window.focus(0)
        assert len(set(alone)) == K  # each instrument's own score: a pooled mix-up would show
        assert read[member]["tail_sharpe"] == policies.pooled_tail_score(member)
    assert read[0]["tail_sharpe"] != read[1]["tail_sharpe"]  # each member's own cost


def test_the_diagnostics_beside_the_pooled_tail_are_the_focused_instruments():
    trainer = universe_trainer()
    trainer.train_epoch(0, 3)
    policies = trainer.policies
    policies.window.focus(2)
    read = policies.epoch_figures(1, {0: trainer.histories[0]})[0]
    want = {k: v.tolist() for k, v in policies.epoch_diagnostics(0).items()}
    assert {k: read[k] for k in want} == want
    assert read["tail_sharpe"] == policies.pooled_tail_score(0)


def test_a_universe_fold_asks_one_key_per_diagnostics_setting_whatever_its_instruments(monkeypatch):
    trainer = universe_trainer()
    keys, folds = [], set()
    run = ReplayedFigures.run

    def spy(self, key, compute, *, fold=None):
        keys.append(key)
        folds.add(fold)
        return run(self, key, compute, fold=fold)

    monkeypatch.setattr(ReplayedFigures, "run", spy)
    for epoch in range(4):
        trainer.train_epoch(epoch, 4, diagnose=epoch % 2 == 1)
    assert len(keys) == 4 and len(set(keys)) == 2  # one call an epoch; with and without the diagnostics
    assert len(folds) == 1 and None not in folds  # the fold named: the next fold frees this one's graphs


class RecomputingGraph:
    """Stands in for a captured CUDA graph: a replay recomputes into the captured output, in place."""

    def __init__(self, compute, output: torch.Tensor) -> None:
        self.compute, self.output, self.replays = compute, output, 0

    def replay(self) -> None:
        self.replays += 1
        self.output.copy_(self.compute())


def test_a_fold_of_more_instruments_than_kept_keys_captures_once_and_replays(monkeypatch):
    graphs: list[RecomputingGraph] = []

    def capture(compute):
        output = compute()
        graphs.append(RecomputingGraph(compute, output))
        return graphs[-1], output

    monkeypatch.setattr(epoch_graph, "_capture", capture)
    trainer = universe_trainer()
    trainer.policies.replayed.graphed = True  # as on a GPU
    figures = [trainer.train_epoch(epoch, 6, diagnose=False) for epoch in range(6)]
    # epoch 0 eager (the key's warm-up), epoch 1 captures, epochs 2 to 5 replay
    assert trainer.policies.replayed.captures == 1 and graphs[0].replays == 4
    last = figures[-1][0]
    assert last is not None and last.tail_sharpe == trainer.policies.pooled_tail_score(0)


def test_one_instruments_pooled_tail_is_its_own_value_exactly():
    from foxhunt.train.member_policy import pool_by_bars

    assert pool_by_bars([(3, 0.1)]) == 0.1  # 3 * 0.1 / 3 would be 0.10000000000000002
    assert pool_by_bars([(1, 1.0), (3, 2.0)]) == 1.75


class FrozenGraph:
    """Stands in for a captured CUDA graph whose replay gives what it computed at capture: the slices a
    capture read (the focused instrument's rows) are baked into it, whatever the window says later."""

    def __init__(self, output: torch.Tensor) -> None:
        self.output = output

    def replay(self) -> None:
        pass


def test_a_graph_captured_for_one_focused_instrument_is_not_replayed_for_another(monkeypatch):
    monkeypatch.setattr(epoch_graph, "_capture", lambda compute: (FrozenGraph(out := compute()), out))
    trainer = universe_trainer()
    policies = trainer.policies
    policies.replayed.graphed = True  # as on a GPU
    for _ in range(2):  # the key's warm-up, then its capture
        policies.figures_vector([0], [True]).clone()
    policies.window.focus(2)
    focused = policies.figures_vector([0], [True]).clone()
    assert torch.equal(focused, policies.figures_vector([0], [True], graphed=False))
