"""Held-action (n-step) returns: the TD target of "hold the action for n bars, then act greedily".

With `n_step` = n, the transition at training bar t (index i of the fold's N transitions; incoming
position p, action a) has the target

    y = scale · (a · Σ_{k<m} γ^k r_{t+k} − cost · |a − p|) + γ^m · Q_target(s_{t+m}, a)[argmax Q_online(s_{t+m}, a)]

with m = min(n, N − i): the position moves once, at t, so the cost is paid once; the hold is truncated
at the end of the learning rows (of each instrument's span in a fold of several; fewer bars near the end, and the bootstrap state is at most the last
learning row, the one-bar target's own last next state: no row beyond is read). n = 1 is the one-bar
target exactly.

The discounted sums Σ_{k<m} γ^k r_{t+k} depend on the fold's returns, γ and n only, so they are
computed on the device once per fold (again only when γ or n change), into a fixed buffer collection
reads: n − 1 shifted multiply-adds over the fold's rows. (Prefix sums of γ^t r_t would need γ^−t, which
leaves float32's range within a few thousand bars.) The captured step reads m from the transition's
index and n (a device vector, per member) and γ^m from a (P, MAX_N_STEP + 1) table refilled in place,
so no Python number of either is baked into a graph.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from foxhunt.config import MAX_N_STEP, DQNConfig


def discount_table_(table: torch.Tensor, configs: Sequence[DQNConfig]) -> None:
    """Refill `table` (P, MAX_N_STEP + 1) in place: table[i, k] = γ_i^k of member i's config (float64
    powers, so γ^1 is γ) for k ≤ the longest `n_step`, zero beyond, which no target reads (it holds at
    most n bars). Only those columns travel to the device: 8 bytes a member at n = 1."""
    width = max(c.n_step for c in configs) + 1
    powers = torch.tensor([[c.gamma**k for k in range(width)] for c in configs], dtype=torch.float64)
    table[:, :width].copy_(powers.to(table.dtype))
    table[:, width:].zero_()


def new_discount_table(configs: Sequence[DQNConfig], device: torch.device) -> torch.Tensor:
    """A (P, MAX_N_STEP + 1) table of γ_i^k for the members' γ, up to their longest hold."""
    table = torch.zeros(len(configs), MAX_N_STEP + 1, device=device)
    discount_table_(table, configs)
    return table


@torch.no_grad()
def held_returns_(
    out: torch.Tensor, returns: torch.Tensor, gammas: Sequence[float], n_steps: Sequence[int]
) -> None:
    """out[i, t] = Σ_{k < min(n_i, N − t)} γ_i^k · returns[t + k] for t < N = len(returns), in place: member
    i's discounted return of holding a unit position for n_i bars from bar t, truncated at the end."""
    n = returns.shape[0]
    out[:, :n] = returns  # k = 0: γ^0 = 1 (the one-bar return itself, bit for bit)
    longest = min(max(n_steps), n)
    if longest < 2:
        return  # n = 1: nothing to add, and nothing uploaded
    # weights[i, k] = γ_i^k while member i still holds at k, else 0: one upload for the fold.
    weights = torch.tensor(
        [[g**k if k < s else 0.0 for k in range(longest)] for g, s in zip(gammas, n_steps, strict=True)],
        dtype=torch.float64,
    ).to(out.device, out.dtype)
    for k in range(1, longest):
        out[:, : n - k] += weights[:, k].unsqueeze(1) * returns[k:]


def bootstrap_bars(idx: torch.Tensor, left: torch.Tensor, n_step: torch.Tensor) -> torch.Tensor:
    """Bars m = min(n, N − i) each drawn transition holds its action before the bootstrap: `idx` (P, batch)
    transition indices, `left` N − i (P, batch: the transitions from each to the end of its span, or the
    0-d N and then N − idx is taken), `n_step` (P,) the members' n (floats holding integers)."""
    remaining = left - idx if left.dim() == 0 else left
    return torch.minimum(remaining, n_step.long().unsqueeze(1))
