"""The Q-network and a member's network over its slot of the stacked weights.

`build_qnet` is the network every fold trains: features + position → Q per action. The trainer
holds P members' weights stacked (stacked.py); `member_network` is one member's `nn.Sequential`
whose parameters are views of its slot, which collection, evaluation and checkpoints read like any
network. Its evaluation without autograd, fused on CUDA, is `policy.inference_q`; the paired
next-state product of the online and target networks is `stacked.paired_q`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from foxhunt.train.policy import N_ACTIONS, linears


def build_qnet(n_features: int, hidden: int) -> nn.Sequential:
    """features + position → Q-value per action (short, flat, long)."""
    return nn.Sequential(
        nn.Linear(n_features + 1, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, N_ACTIONS),
    )


def member_network(params: Sequence[torch.Tensor], member: int, hidden: int) -> nn.Sequential:
    """Member `member`'s network over views of its slot of the stacked (P, ...) `params` (no copy)."""
    w1 = params[0]
    net = build_qnet(w1.shape[2] - 1, hidden).to(w1.device)
    net.requires_grad_(False)
    for layer, weight, bias in zip(linears(net), params[0::2], params[1::2], strict=True):
        layer.weight = nn.Parameter(weight.detach()[member], requires_grad=False)
        layer.bias = nn.Parameter(bias.detach()[member], requires_grad=False)
    return net
