"""The pooled choice of a fold's policy (`MemberPolicies.choose_pooled`, select_pool pooled) on a small CPU
trainer: without earlier evidence it keeps or flattens exactly as the per-fold gate does; it records the
candidate's validation Sharpe as evidence for later folds even when the fold goes flat; earlier evidence
moves the decision both ways; the guard keeps a fold whose own tail loses flat.

Every case trains one population whose members share the seed, so all learn the same weights: member 0
always keeps its best tail epoch (the candidate), the others decide on it by the settings under test.
"""

from __future__ import annotations

from dataclasses import replace

import torch
from support.signal_arrays import FOLDS, signal_arrays

from foxhunt.config import DQNConfig
from foxhunt.data.folds import generate_walk_forward_indices
from foxhunt.train import DQNTrainer, to_device
from foxhunt.train.device_data import SpanPart, universe_to_device
from foxhunt.train.evidence import WindowEvidence
from foxhunt.train.policy import held_sharpe

FOLD_NUMBER = 3  # the fold decided (earlier evidence comes from folds 0..2)
BASE = DQNConfig(
    hidden=16, batch_size=256, lr=1e-3, cost=2e-4, steps_per_epoch=20, compile=False, select_pool="fold"
)
KEEPS = replace(BASE, select_min_sharpe=-1e3, select_min_t=0.0)  # the per-fold gate, passed by any tail
FLATTENS = replace(BASE, select_min_sharpe=1e3)  # the per-fold gate, passed by no tail
POOLED = replace(BASE, select_pool="pooled", select_pool_guard=-1e3)  # guard out of the way
EPOCHS = 3
ROW_FIELDS = ("train_start", "train_end", "val_start", "val_end")
EVAL_COST = 1e-4


def trained(configs: list[DQNConfig]) -> DQNTrainer:
    """A population of `configs` (one seed) trained EPOCHS epochs on fold FOLD_NUMBER of the signal arrays."""
    arrays = signal_arrays(seed=0)
    fold = generate_walk_forward_indices(arrays.timestamp, FOLDS)[0]
    fold = replace(fold, fold=FOLD_NUMBER)
    data = to_device(arrays.features, arrays.targets, arrays.timestamp, torch.device("cpu"))
    trainer = DQNTrainer(
        data,
        configs,
        max_train_rows=fold.train_rows,
        seed=0,
        eval_cost=EVAL_COST,
        diagnostics=False,
        member_seeds=[0] * len(configs),
    )
    trainer.set_fold_range(fold)
    trainer.reset_for_fold(fold.fold)
    trainer.window.compute_norm_stats()
    for epoch in range(EPOCHS):
        trainer.train_epoch(epoch, EPOCHS)
    return trainer


def earlier(sharpe: float, trainer: DQNTrainer, bars: int = 200_000) -> list[WindowEvidence]:
    """Out-of-sample windows of folds 0..2 at `sharpe`, each of `bars` bars, ending before the fold's data."""
    end_ns = int(trainer.data.timestamp[trainer.window.fold.train_start])
    return [WindowEvidence(j, "out_of_sample", bars, sharpe, end_ns - j) for j in range(FOLD_NUMBER)]


def weights(trainer: DQNTrainer, member: int) -> dict[str, torch.Tensor]:
    return trainer.policies.state_dict_cpu(member)


def same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_the_members_learn_the_same_weights():
    trainer = trained([KEEPS, KEEPS])
    selection = trainer.policies.selection
    assert selection.tail_sharpes[0] == selection.tail_sharpes[1] and len(selection.tail_sharpes[0]) == EPOCHS


def test_without_earlier_evidence_the_pooled_choice_keeps_what_the_fold_gate_keeps():
    pooled = replace(POOLED, select_min_sharpe=-1e3, select_pool_t=0.0)
    trainer = trained([KEEPS, pooled])
    chosen = trainer.policies.choose_policies()
    assert not chosen[0].flat and not chosen[1].flat
    assert (chosen[1].epoch, chosen[1].tail_sharpe, chosen[1].gate) == (
        chosen[0].epoch,
        chosen[0].tail_sharpe,
        chosen[0].gate,
    )
    assert same_weights(weights(trainer, 1), weights(trainer, 0))


def test_without_earlier_evidence_the_pooled_choice_flattens_what_the_fold_gate_flattens():
    trainer = trained([FLATTENS, replace(POOLED, select_min_sharpe=1e3)])
    chosen = trainer.policies.choose_policies()
    assert chosen[0].flat and chosen[1].flat
    assert (chosen[1].epoch, chosen[1].tail_sharpe, chosen[1].gate) == (
        chosen[0].epoch,
        chosen[0].tail_sharpe,
        chosen[0].gate,
    )
    assert same_weights(weights(trainer, 1), weights(trainer, 0))


def test_at_the_shipped_gate_the_pooled_choice_without_evidence_is_the_fold_gates():
    trainer = trained([BASE, replace(BASE, select_pool="pooled")])
    chosen = trainer.policies.choose_policies()
    assert chosen[1].flat == chosen[0].flat and chosen[1].gate == chosen[0].gate
    assert same_weights(weights(trainer, 1), weights(trainer, 0))


def test_a_flat_fold_records_its_candidates_validation_sharpe_as_evidence():
    trainer = trained([KEEPS, replace(POOLED, select_min_sharpe=1e3)])
    chosen = trainer.policies.choose_policies()
    policies, fold = trainer.policies, trainer.window.fold
    assert chosen[1].flat and not policies.greedy_positions(member=1).any()  # it trades nothing
    candidate = policies.greedy_positions(member=0)  # the same best epoch, kept
    assert candidate.any()
    expected = float(held_sharpe(trainer.data, candidate, fold.val_start, EVAL_COST))
    record = chosen[1].out_of_sample
    assert record is not None and record.sharpe == expected and expected != 0.0
    assert (record.fold, record.kind, record.bars) == (FOLD_NUMBER, "out_of_sample", fold.val_rows)
    assert record.end_ns == int(trainer.data.timestamp[fold.val_end - 1])
    assert chosen[1].to_dict()["out_of_sample"]["sharpe"] == expected


def test_strong_earlier_evidence_trades_a_fold_the_per_fold_gate_leaves_flat():
    gate = replace(BASE, select_min_sharpe=500.0)  # no tail of this learner clears it alone
    trainer = trained([KEEPS, gate, replace(POOLED, select_min_sharpe=500.0)])
    chosen = trainer.policies.choose_policies(earlier={2: earlier(5_000.0, trainer)})
    assert chosen[1].flat and not chosen[2].flat
    assert chosen[2].pooled is not None and chosen[2].pooled.trade and len(chosen[2].pooled.windows) == 4
    assert same_weights(weights(trainer, 2), weights(trainer, 0))  # it trades the best epoch's weights


def test_negative_earlier_evidence_flattens_a_fold_the_per_fold_gate_keeps():
    gate = replace(BASE, select_min_sharpe=-500.0)  # every tail of this learner clears it alone
    trainer = trained([KEEPS, gate, replace(POOLED, select_min_sharpe=-500.0)])
    chosen = trainer.policies.choose_policies(earlier={2: earlier(-5_000.0, trainer)})
    assert not chosen[1].flat and chosen[2].flat
    assert chosen[2].pooled is not None and chosen[2].pooled.pooled_sharpe < chosen[2].pooled.gate
    assert not trainer.policies.greedy_positions(member=2).any()


def test_the_guard_keeps_a_fold_whose_own_tail_is_below_it_flat_despite_strong_evidence():
    trainer = trained([KEEPS, replace(POOLED, select_pool_guard=1e3)])  # above any tail of this learner
    chosen = trainer.policies.choose_policies(earlier={1: earlier(5_000.0, trainer)})
    decision = chosen[1].pooled
    assert decision is not None and decision.pooled_sharpe > decision.gate  # the evidence cleared the gate
    assert chosen[1].flat and decision.own_tail_sharpe < 1e3 and "guard" in decision.reason
    assert not trainer.policies.greedy_positions(member=1).any()


def test_the_validation_positions_handed_to_the_fold_are_its_kept_policys_rollout():
    trades = replace(POOLED, select_min_sharpe=-1e3, select_pool_t=0.0)
    trainer = trained([trades, replace(POOLED, select_min_sharpe=1e3)])
    chosen = trainer.policies.choose_policies()
    assert not chosen[0].flat and chosen[1].flat
    policies = trainer.policies
    handed = {i: policies.validation_positions(member=i) for i in (0, 1)}
    assert handed[0].any() and not handed[1].any()  # the kept candidate trades; the flattened fold does not
    for i in (0, 1):
        assert torch.equal(handed[i], policies.greedy_positions(member=i))
    assert policies.chosen_positions == {}  # handed over once: a later call rolls out again


def test_a_universes_evidence_counts_its_bars_at_the_evidence_share():
    # Two instruments: at a share of 1/2 (two copies of one series) the fold's tail and validation windows
    # count one instrument's worth of bars, and the gate is that of the fewer bars.
    trainer = universe_fold([replace(POOLED, select_min_sharpe=-1e3, select_pool_t=0.0)])
    policies, parts = trainer.policies, trainer.window.parts
    policies.evidence_share = 0.5
    chosen = policies.choose_policies()[0]
    val_bars = sum(p.fold_range.val_rows for p in parts)
    tail_bars = sum(p.fold_range.train_end - p.learn_end for p in parts)
    assert chosen.out_of_sample is not None and chosen.out_of_sample.bars == round(val_bars / 2)
    assert chosen.pooled is not None and chosen.pooled.bars == round(tail_bars / 2)


def test_each_instruments_validation_positions_are_handed_over_once_in_a_universe():
    # Choosing rolls each instrument's validation out (its evidence); the record takes those rollouts,
    # keyed by member and instrument, instead of rolling each out a second time.
    trainer = universe_fold([replace(POOLED, select_min_sharpe=-1e3, select_pool_t=0.0)])
    policies = trainer.policies
    assert not policies.choose_policies()[0].flat
    assert set(policies.chosen_positions) == {(0, 0), (0, 1)}
    for instrument in (1, 0):
        trainer.window.focus(instrument)
        handed = policies.validation_positions(member=0)
        assert torch.equal(handed, policies.greedy_positions(member=0))
        assert (0, instrument) not in policies.chosen_positions


def universe_fold(configs: list[DQNConfig]) -> DQNTrainer:
    """A population of `configs` trained EPOCHS epochs on fold FOLD_NUMBER of two instruments (the signal
    arrays of seeds 0 and 1), each with its tail held back."""
    a, b = signal_arrays(seed=0), signal_arrays(seed=1)
    parts_of = [(x.features, x.targets, x.timestamp) for x in (a, b)]
    data = universe_to_device(["a", "b"], parts_of, torch.device("cpu"))
    fold = replace(generate_walk_forward_indices(a.timestamp, FOLDS)[0], fold=FOLD_NUMBER)
    trainer = DQNTrainer(data, configs, max_train_rows=2 * fold.train_rows, seed=0, eval_cost=EVAL_COST)
    shift = len(a.timestamp)
    moved = [replace(fold, **{k: getattr(fold, k) + i * shift for k in ROW_FIELDS}) for i in (0, 1)]
    tails = fold.train_rows // 4  # held back for the selection
    trainer.window.set_parts([SpanPart(i, m, m.train_end - tails) for i, m in enumerate(moved)])
    trainer.reset_for_fold(FOLD_NUMBER)
    trainer.window.compute_norm_stats()
    for epoch in range(EPOCHS):
        trainer.train_epoch(epoch, EPOCHS)
    return trainer
