"""The replay of P members: one transition per training bar of the fold, per member, refilled each epoch.

Because a position never moves the market, every training bar yields a transition, and collection is
one batched forward pass over the fold's rows; the incoming position is drawn uniformly ("exploring
starts"), so the replay covers every (bar, position) pair the greedy policy can reach. Fixed buffers,
sized once for the largest fold, which the captured step reads.

A fold of several instruments is learnt over its transition rows (`FoldWindow.rows`): the replay's index
i is the fold's i-th transition, span after span, and a held return stops at its span's end, never
summing one instrument's returns into another's.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from foxhunt.data.pnl import net_pnl
from foxhunt.train.device_data import FoldWindow, chunk_rows
from foxhunt.train.held_returns import held_returns_
from foxhunt.train.policy import FLAT, inference_q, policy_state
from foxhunt.train.settings import StepSettings
from foxhunt.train.stacked import member_draws


def transition_reward(position, new_position, next_return, cost, scale) -> torch.Tensor:
    """(new position × the bar's forward return − cost × |position change|) × reward scale: the net P&L of
    `data.pnl.net_pnl` (with n_step > 1 the forward return is the discounted held return: the cost is
    still paid once)."""
    return net_pnl(new_position, position, next_return, cost) * scale


class Replay:
    """Per member: the incoming position, the action taken and its reward, at each training bar."""

    def __init__(self, size: int, capacity: int, device: torch.device) -> None:
        self.capacity = capacity
        self.position = torch.zeros(size, capacity, device=device)
        self.action = torch.full((size, capacity), FLAT, dtype=torch.long, device=device)
        self.reward = torch.zeros(size, capacity, device=device)
        self.epsilon = torch.zeros(size, device=device)
        # n_step > 1: each member's discounted held return per bar, allocated at first need, refilled
        # once per fold (or when γ or n change); `held_for` names what it holds.
        self.held: torch.Tensor | None = None
        self.held_for: tuple | None = None

    def clear(self) -> None:
        """Forget every transition (a new fold)."""
        self.position.zero_()
        self.action.fill_(FLAT)
        self.reward.zero_()

    def held_returns(
        self, window: FoldWindow, gammas: Sequence[float], n_steps: Sequence[int]
    ) -> torch.Tensor | None:
        """The members' held returns over the fold's transitions (None when every n is 1: the 1-bar
        target's column is read as it is), computed when the fold, γ or n changed since the last call."""
        if max(n_steps) <= 1:
            return None
        spans = tuple((p.fold_range.train_start, p.learn_rows - 1) for p in window.parts)
        key = (spans, tuple(gammas), tuple(n_steps))
        if self.held is None:
            self.held = torch.zeros_like(self.reward)
        if key != self.held_for:
            at = 0
            for start, n in spans:  # span by span: each hold truncated at its own span's end
                held_returns_(
                    self.held[:, at : at + n], window.data.targets[start : start + n, 0], gammas, n_steps
                )
                at += n
            self.held_for = key
        return self.held

    @torch.no_grad()
    def collect(
        self,
        networks: Sequence[nn.Sequential],
        window: FoldWindow,
        settings: StepSettings,
        generators: list[torch.Generator] | None,
        epsilon: Sequence[float],
        fused: bool,
        held: torch.Tensor | None = None,
    ) -> int:
        """One epsilon-greedy transition per training bar of `window`'s fold, for member i with `networks[i]`
        and exploration rate `epsilon[i]`, rewarded with `held` returns (n_step > 1) or the 1-bar ones;
        returns the transitions per member."""
        self.epsilon.copy_(torch.tensor(list(epsilon), dtype=torch.float32))
        data, start = window.data, window.parts[0].fold_range.train_start
        n, size, device = window.transitions, len(networks), self.position.device
        chunk = chunk_rows(device)
        for lo in range(0, n, chunk):
            hi = min(lo + chunk, n)
            # One span: a slice of the rows (no copy); several: the transition rows gathered.
            rows = slice(start + lo, start + hi) if window.contiguous else window.rows[lo:hi]
            mean, std = window.row_stats(window.rows[lo:hi])
            incoming, explore_u, random_action = member_draws(generators, size, hi - lo, device)
            position = (incoming - 1).to(torch.float32)
            features = data.features[rows]
            # Member by member: over a million rows the pass is bound by memory, and the fused products
            # write each activation once; a batched product would write it twice for no fewer bytes.
            greedy = torch.stack(
                [
                    inference_q(net, policy_state(features, position[i], mean, std), fused).argmax(1)
                    for i, net in enumerate(networks)
                ]
            )
            action = torch.where(explore_u < self.epsilon.unsqueeze(1), random_action, greedy)
            self.position[:, lo:hi] = position
            self.action[:, lo:hi] = action
            self.reward[:, lo:hi] = transition_reward(
                position,
                (action - 1).to(torch.float32),
                data.targets[rows, 0] if held is None else held[:, lo:hi],
                settings.cost.unsqueeze(1),
                settings.reward_scale.unsqueeze(1),
            )
        return n
