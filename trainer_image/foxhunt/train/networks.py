"""The Q-network, and two ways to run it with fewer kernels on CUDA.

`build_qnet` is the network every fold trains: features + position → Q per action. On CUDA two
evaluations run with fewer, larger kernels, without changing what is computed:

- *Paired next-state values.* Double DQN evaluates the online and the target network on the same
  next states every step. `pair_networks` moves both networks' weights into one stacked buffer per
  layer (online in slot 0, target in slot 1; the modules' parameters become views of it, so the
  optimizer, the Polyak step and resets update it in place). `paired_q` then runs both networks
  as one matrix product for the first layer and one batched product for each of the others: three
  products and two activations instead of six and four, all on contiguous memory.
- *Fused activations.* `inference_q` runs the hidden layers as matrix products whose epilogue adds
  the bias and applies ReLU (cuBLASLt), so collection's forward passes over millions of rows do not
  write and read every hidden activation a second time for the ReLU.

Both are the same arithmetic as the modules' own forward; float results agree within rounding.
"""

from __future__ import annotations

import torch
from torch import nn

from foxhunt.train.policy import N_ACTIONS


def build_qnet(n_features: int, hidden: int) -> nn.Sequential:
    """features + position → Q-value per action (short, flat, long)."""
    return nn.Sequential(
        nn.Linear(n_features + 1, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, N_ACTIONS),
    )


def linears(net: nn.Sequential) -> list[nn.Linear]:
    """The network's Linear layers, input to output."""
    return [m for m in net if isinstance(m, nn.Linear)]


PairedLayer = tuple[torch.Tensor, torch.Tensor]  # weights (2, out, in), biases (2, out): online, target


@torch.no_grad()
def pair_networks(online: nn.Sequential, target: nn.Sequential) -> list[PairedLayer]:
    """Re-home both networks' weights into one stacked buffer per layer; returns the buffers.

    Call before an optimizer holds the parameters: each parameter is replaced by a view of its
    slot (same values, same shape, same requires_grad), so every in-place update of a module's
    parameters is an update of the stacked buffer that `paired_q` reads.
    """
    pairs = []
    for on, tg in zip(linears(online), linears(target), strict=True):
        weights = torch.stack([on.weight, tg.weight])
        biases = torch.stack([on.bias, tg.bias])
        for slot, layer in enumerate((on, tg)):
            layer.weight = nn.Parameter(weights[slot], requires_grad=layer.weight.requires_grad)
            layer.bias = nn.Parameter(biases[slot], requires_grad=layer.bias.requires_grad)
        pairs.append((weights, biases))
    return pairs


def paired_q(pairs: list[PairedLayer], state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Q of the online and of the target network on the same states, as (online, target)."""
    (w1, b1), (w2, b2), (w3, b3) = pairs
    # Transposed throughout, (slot, unit, row): every product reads and writes contiguous memory, the
    # first layer is one product for both networks ((2·hidden, in) @ (in, rows)), and the last layer
    # writes 3 long rows instead of rows of 3.
    h = (torch.matmul(w1, state.t()) + b1.unsqueeze(-1)).relu()  # (2, hidden, rows)
    h = torch.baddbmm(b2.unsqueeze(-1), w2, h).relu()
    q = torch.baddbmm(b3.unsqueeze(-1), w3, h)  # (2, actions, rows)
    return q[0].t(), q[1].t()


def inference_q(net: nn.Sequential, state: torch.Tensor, fused: bool) -> torch.Tensor:
    """The network's Q-values without autograd; `fused`: bias and ReLU in the products' epilogue."""
    if not fused:
        return net(state)
    first, second, last = linears(net)
    h = torch._addmm_activation(first.bias, state, first.weight.t())
    h = torch._addmm_activation(second.bias, h, second.weight.t())
    return torch.addmm(last.bias, h, last.weight.t())
