"""Model selection on a held-back tail of the training slice: do no harm where nothing is learnt.

With `select_tail_share` > 0 the learner trains on the head of each fold's training slice only; after
every epoch each member's greedy policy is scored (net Sharpe after the evaluation cost, entered from
flat) on the tail, and the best epoch's weights are kept. At the fold's end a member whose best tail
Sharpe does not exceed its gate (`select_min_sharpe`, plus `select_min_t` standard errors of a zero Sharpe
over the tail: `tail_gate`) goes FLAT: its network is rewritten to choose flat
everywhere, so the checkpoint reproduces the policy that was evaluated. The fold's validation window
is never looked at. Scoring runs outside the captured step (like the diagnostics), on the host's
schedule, so a CUDA graph is untouched.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import torch
from torch import nn

from foxhunt.config import DQNConfig
from foxhunt.data.folds import FoldRange
from foxhunt.train.evidence import sharpe_gate
from foxhunt.train.fold_selection import FoldSelection
from foxhunt.train.policy import FLAT, N_ACTIONS, linears

# Smallest tail worth scoring: below this many bars a Sharpe is noise; the selection is off.
MIN_TAIL_ROWS = 64
Scored = TypeVar("Scored")


def head_end(fold_range: FoldRange, tail_share: float) -> int:
    """First row of the held-back tail: the training slice's last `tail_share` of rows (at least
    MIN_TAIL_ROWS of them, and two rows left to learn on); the slice's end when the share is 0."""
    if tail_share <= 0.0:
        return fold_range.train_end
    tail = max(MIN_TAIL_ROWS, math.ceil(fold_range.train_rows * tail_share))
    if fold_range.train_rows - tail < 2:
        raise ValueError(
            f"fold {fold_range.fold}: select_tail_share {tail_share} leaves fewer than 2 of its "
            f"{fold_range.train_rows} training rows to learn on"
        )
    return fold_range.train_end - tail


class TailSelection:
    """Per member: the best tail Sharpe so far, its epoch and a copy of its weights."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.reset()

    def reset(self) -> None:
        """Forget every member's best (a new fold)."""
        self.best_sharpe = [-math.inf] * self.size
        self.best_epoch: list[int | None] = [None] * self.size
        self.best_weights: list[list[torch.Tensor] | None] = [None] * self.size
        self.tail_sharpes: list[list[float]] = [[] for _ in range(self.size)]

    @torch.no_grad()
    def observe(self, member: int, epoch: int, tail_sharpe: float, net: nn.Module) -> None:
        """Record member `member`'s tail Sharpe after `epoch`; keep a copy of its weights when it is the
        best so far (ties keep the earlier epoch: fewer steps on the same evidence)."""
        self.tail_sharpes[member].append(tail_sharpe)
        if math.isfinite(tail_sharpe) and tail_sharpe > self.best_sharpe[member]:
            self.best_sharpe[member] = tail_sharpe
            self.best_epoch[member] = epoch
            self.best_weights[member] = [p.detach().clone() for p in net.parameters()]

    @torch.no_grad()
    def choose(self, member: int, net: nn.Module, gate: float) -> FoldSelection:
        """Write the chosen weights into `net` (in place: the trainer's own slot): the best epoch's, or a
        flat network when the best tail Sharpe is not above `gate` (tail_gate; −inf: flat only when no
        epoch was scored, the pooled decision deciding after)."""
        best = self.best_weights[member]
        flat = best is None or not self.best_sharpe[member] > gate
        if best is not None:
            for p, kept in zip(net.parameters(), best, strict=True):
                p.copy_(kept)
        if flat:
            make_flat_(net)
        return FoldSelection(
            self.best_epoch[member],
            self.best_sharpe[member],
            flat,
            tuple(self.tail_sharpes[member]),
            gate,
        )


@torch.no_grad()
def make_flat_(net: nn.Module) -> None:
    """Rewrite `net` in place so that its greedy action is flat in every state: the last layer's weights
    zero, its bias 1 for flat and 0 for short and long."""
    last = linears(net)[-1]
    last.weight.zero_()
    bias = torch.zeros(N_ACTIONS, dtype=last.bias.dtype, device=last.bias.device)
    bias[FLAT] = 1.0
    last.bias.copy_(bias)


@torch.no_grad()
def abstain_(net: nn.Module, margin: float) -> None:
    """Rewrite `net` in place so that its greedy action is short or long only where that action's Q
    exceeds flat's by more than `margin`: flat's output bias is raised by `margin` (ties go to flat,
    the lowest index but one, only when short's or long's Q equals flat's raised one exactly)."""
    if margin > 0.0:
        linears(net)[-1].bias[FLAT] += margin


def abstain_margin(config: DQNConfig, evaluation_cost: float) -> float:
    """How far a member's Q of short or long must exceed flat's for its fold policy to leave flat:
    `abstain_cost_multiple` evaluation costs, in the reward's units (Q's)."""
    return config.abstain_cost_multiple * evaluation_cost * config.reward_scale


@torch.no_grad()
def score_as_kept(net: nn.Module, margin: float, score: Callable[[], Scored]) -> Scored:
    """`score()` of `net`'s greedy policy as the fold would keep it (abstaining by `margin`); `net` is
    unchanged afterwards (`score` may return the greedy maps themselves, read later)."""
    bias = linears(net)[-1].bias
    kept = bias.detach().clone()
    abstain_(net, margin)
    try:
        return score()
    finally:
        bias.copy_(kept)


def tail_gate(config: DQNConfig, tail_bars: int, bars_per_year: float) -> float:
    """The tail net Sharpe a member's best epoch must exceed to trade: `select_min_sharpe` plus
    `select_min_t` standard errors of a zero annualised Sharpe over `tail_bars` bars, sqrt(bars a year /
    tail bars). One epoch with no edge clears 3 of them 0.13% of the time, but the kept epoch is the
    best of E on this very tail: simulated at the default (expanding) folds, the best of 50 epochs clears
    it in 4.0% of folds without costs (positions held 30 bars) and 1.5% with the 1 bp cost (held 240), and
    some fold of a 21-fold run trades noise in 57% and 27% of runs
    (bench/results/gate_false_positive-cpu-2026-12-04-8fe2162.json)."""
    return sharpe_gate(config.select_min_sharpe, config.select_min_t, tail_bars, bars_per_year)


def choose_policies(
    selection: TailSelection | None,
    networks: Sequence[nn.Module],
    gates: dict[int, float],
    margins: dict[int, float],
    members: Iterable[int],
) -> dict[int, FoldSelection | None]:
    """At a fold's end, per member: with a `selection`, write the best tail epoch's weights (or a flat
    network, when its tail Sharpe does not exceed the member's gate) into its network and say what was
    chosen (None without one: the last epoch stays); then raise flat's output by the member's abstention
    margin, so the checkpoint holds the policy evaluated."""
    chosen = {i: None if selection is None else selection.choose(i, networks[i], gates[i]) for i in members}
    for i in chosen:
        abstain_(networks[i], margins[i])
    return chosen
