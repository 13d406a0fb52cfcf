"""An epoch's reads of the greedy policy (diagnostics and tail score) in one pass and one host transfer:
the same figures as the per-call functions, on real EURUSD bars, epoch by epoch."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from support.data_files import EURUSD
from support.op_count import OpCount

from foxhunt.config import DQNConfig, FoldConfig
from foxhunt.data.bars import read_bars_file
from foxhunt.data.features import compute_features
from foxhunt.data.folds import generate_walk_forward_indices
from foxhunt.train.device_data import to_device
from foxhunt.train.diagnostics import FoldHistory, record_diagnostics, rollouts_from_flat
from foxhunt.train.dqn import DQNTrainer
from foxhunt.train.policy import FLAT, rollout_positions

EPOCHS = 4
SMALL = DQNConfig(hidden=32, batch_size=512, steps_per_epoch=15)


@pytest.fixture(scope="module")
def eurusd():
    table = compute_features(read_bars_file(str(EURUSD))[0])
    fold = generate_walk_forward_indices(
        table.timestamp, FoldConfig(train_days=20, val_days=5, step_days=5, max_folds=1)
    )[0]
    return to_device(table.features, table.targets, table.timestamp, torch.device("cpu")), fold


def trained_epochs(eurusd, config: DQNConfig | list[DQNConfig]):
    """Per epoch of one fold: the trainer's figures, and the per-call reference read right after it."""
    data, fold = eurusd
    trainer = DQNTrainer(data, config, max_train_rows=fold.train_rows, seed=5)
    trainer.set_fold_range(fold)
    trainer.reset_for_fold(fold.fold)
    trainer.window.compute_norm_stats()
    rows = []
    for epoch in range(EPOCHS):
        figures = trainer.train_epoch(epoch, EPOCHS)[0]
        reference = record_diagnostics(FoldHistory(), trainer.policies.epoch_diagnostics(0), 0.0)
        if trainer.policies.selecting:
            reference["tail_sharpe"] = trainer.policies.tail_score(0)
        rows.append((figures, reference))
    return trainer, rows


@pytest.mark.parametrize("abstain", [0.0, 3.0])
def test_the_epoch_figures_equal_the_per_call_diagnostics_and_tail_score(eurusd, abstain):
    config = DQNConfig(**{**SMALL.__dict__, "abstain_cost_multiple": abstain})
    trainer, rows = trained_epochs(eurusd, config)
    for figures, reference in rows:
        got = {key: getattr(figures, key) for key in reference}
        assert got == reference  # bit for bit
    history = trainer.histories[0]
    assert history.val_sharpe == [reference["val_sharpe"] for _, reference in rows]
    assert history.action_shares == [reference["action_shares"] for _, reference in rows]


def test_the_chosen_epoch_is_the_first_best_per_call_tail_score(eurusd):
    trainer, rows = trained_epochs(eurusd, SMALL)
    tails = [reference["tail_sharpe"] for _, reference in rows]
    assert trainer.selection.tail_sharpes[0] == tails
    assert trainer.selection.best_epoch[0] == tails.index(max(tails))


def test_an_epoch_reads_the_host_once_for_the_diagnostics_and_the_tail(eurusd, monkeypatch):
    trainer, _ = trained_epochs(eurusd, SMALL)
    reads = []
    for name in ("tolist", "item", "__float__"):
        original = getattr(torch.Tensor, name)
        monkeypatch.setattr(
            torch.Tensor, name, lambda self, *a, _o=original, _n=name: reads.append(_n) or _o(self, *a)
        )
    read = trainer.policies.epoch_figures(EPOCHS, {0: FoldHistory()})
    assert reads == ["tolist"]
    assert set(read[0]) == {"action_shares", "val_sharpe", "train_sharpe", "feature_agreement", "tail_sharpe"}


def test_a_populations_epoch_reads_the_host_once_for_every_member(eurusd, monkeypatch):
    trainer, rows = trained_epochs(eurusd, [SMALL, replace(SMALL, lr=3e-3)])
    reads = []
    original = torch.Tensor.tolist
    monkeypatch.setattr(torch.Tensor, "tolist", lambda self: reads.append(1) or original(self))
    figures = trainer.train_epoch(EPOCHS, EPOCHS + 1)
    assert len(reads) == 2  # the step's accumulators, then every member's epoch figures
    for member, member_figures in enumerate(figures):
        want = record_diagnostics(FoldHistory(), trainer.policies.epoch_diagnostics(member), 0.0)
        want["tail_sharpe"] = trainer.policies.tail_score(member)
        assert member_figures is not None
        assert {key: getattr(member_figures, key) for key in want} == want


def test_an_epoch_with_neither_due_runs_nothing(eurusd):
    config = DQNConfig(**{**SMALL.__dict__, "select_tail_share": 0.0})
    trainer, _ = trained_epochs(eurusd, config)
    with OpCount() as count:
        assert trainer.policies.epoch_figures(EPOCHS, {0: None}) == {0: {}}
    assert count.ops == 0


def test_rollouts_laid_end_to_end_equal_one_scan_each():
    generator = torch.Generator().manual_seed(0)
    pieces = [
        torch.randint(0, 3, shape, generator=generator) for shape in [(37, 3), (5, 16, 3), (1, 3), (64, 3)]
    ]
    want = [rollout_positions(piece, FLAT) - 1 for piece in pieces]
    got = rollouts_from_flat([piece.clone() for piece in pieces])
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w.float())
