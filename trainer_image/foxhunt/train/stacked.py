"""The arithmetic of P members held in stacked weights: one (P, out, in) buffer per layer.

A member's network is small (43 → hidden → hidden → 3), and at batch 8192 its step is bound by kernel
launches and latency, not by FLOPs; stacking P members' weights runs each product of the step as one
batched product, so P members' steps launch about the kernels of one (P = 1 is an ordinary run).

The products and the update have two forms with the same meaning:

- on CUDA, the products are batched (`stacked_q`, `paired_q`), and `clip_grad_norm_per_member` and
  `adam_update` run on the stacked tensors with the settings as (P,) device vectors, so the step
  compiles and is captured once and a search's new settings are refilled in place;
- on the CPU, where nothing is captured, the products run member by member as nn.Linear runs them,
  and `exact_member_update` member by member with torch's own foreach arithmetic (its clip, and
  torch.optim.Adam's non-capturable step with host floats), so a member learns bit for bit what a
  single network trained with `torch.optim.Adam` learns, whatever P.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from foxhunt.train.policy import N_ACTIONS

ADAM_BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults
ADAM_EPS = 1e-8
# A bf16 product takes the tensor cores where its sizes are multiples of 8 elements (16 bytes); the
# state's 43 inputs and the 3 actions are not, and fell to slow kernels (bench/step_kernels.py: 212 of the
# 821 µs of a bf16 step of 8 members on an H100, step_kernels-h100-2026-12-06-37f3da8-bf16.json).
BF16_ALIGN = 8


def per_member(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A (P,) vector shaped to broadcast over a stacked (P, ...) tensor."""
    return values.view(-1, *([1] * (like.dim() - 1)))


def stacked_q(params: list[torch.Tensor], states: torch.Tensor, align: int = 1) -> torch.Tensor:
    """Q-values of every member on its own states: (P, rows, in) → (P, rows, actions).

    On the CPU member by member, as nn.Linear computes a single network (one addmm per layer): a
    batched product rounds differently at some shapes, and a member must learn bit for bit what the
    same trial alone learns. On CUDA one batched product per layer for all members (`batched_q`).
    """
    if states.device.type == "cpu":
        return torch.stack([_member_q(params, i, states[i]) for i in range(states.shape[0])])
    return batched_q(params, states, align)


def batched_q(params: list[torch.Tensor], states: torch.Tensor, align: int = 1) -> torch.Tensor:
    """`stacked_q`'s CUDA form: one batched product per layer for all members. With `align` > 1 the
    products' odd sizes (the state's inputs, the actions) are padded with zeros to a multiple of it, which
    changes no value (a zero input adds nothing; the padded actions are cut off) and lets bf16 products take
    the tensor cores (`BF16_ALIGN`)."""
    w1, b1, w2, b2, w3, b3 = params
    # Product, then bias: compiled, the bias joins the ReLU's kernel. baddbmm would first copy the
    # bias over the whole (P, rows, out) output, 12 copies a step (bench/results/population_variants-h200-2026-12-02-f9b6be2.json:
    # 1.19 ms against 1.58 ms a step for 8 members on an H200).
    h = (torch.bmm(padded(states, -1, align), padded(w1, -1, align).transpose(1, 2)) + b1.unsqueeze(1)).relu()
    h = (torch.bmm(h, w2.transpose(1, 2)) + b2.unsqueeze(1)).relu()
    q = torch.bmm(h, padded(w3, 1, align).transpose(1, 2))
    return q[..., : w3.shape[1]] + b3.unsqueeze(1)


def padded(x: torch.Tensor, dim: int, multiple: int) -> torch.Tensor:
    """`x` with zeros appended along `dim` up to a multiple of `multiple`; `x` itself where it is one."""
    extra = -x.shape[dim] % multiple
    if extra == 0:
        return x
    return F.pad(x, [0, 0] * (x.dim() - 1 - dim % x.dim()) + [0, extra])


def _member_q(params: list[torch.Tensor], member: int, states: torch.Tensor) -> torch.Tensor:
    """Member `member`'s Q-values on `states` (rows, in), layer by layer as `build_qnet`'s modules."""
    w1, b1, w2, b2, w3, b3 = params
    h = F.linear(states, w1[member], b1[member]).relu()
    h = F.linear(h, w2[member], b2[member]).relu()
    return F.linear(h, w3[member], b3[member])


def paired_q(
    pairs: list[torch.Tensor], states: torch.Tensor, align: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Q of every member's online and target network on its next states, (P, rows, actions) each.

    `pairs` are the stacked buffers (2, P, ...) whose slot 0 is the online and slot 1 the target
    network: each layer runs as one batched product for both networks. Transposed throughout,
    (unit, row): every product reads and writes contiguous memory, and the last layer writes 3 long
    rows instead of rows of 3. `align` pads as `batched_q` does.
    """
    w1, b1, w2, b2, w3, b3 = pairs
    two, size, actions = w1.shape[0], w1.shape[1], w3.shape[2]
    inputs = padded(states, -1, align).transpose(1, 2).unsqueeze(0)
    h = (torch.matmul(padded(w1, -1, align), inputs) + b1.unsqueeze(-1)).relu()  # (2, P, h, rows)
    h = h.flatten(0, 1)
    h = torch.baddbmm(b2.flatten(0, 1).unsqueeze(-1), w2.flatten(0, 1), h).relu()
    bias, weight = padded(b3.flatten(0, 1), 1, align), padded(w3.flatten(0, 1), 1, align)
    q = torch.baddbmm(bias.unsqueeze(-1), weight, h)[:, :actions]  # (2P, actions, rows)
    q = q.view(two, size, *q.shape[1:]).transpose(2, 3)
    return q[0], q[1]


def stacked_weights(
    shapes: list[torch.Size], size: int, device: torch.device, paired: bool
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor] | None]:
    """Online parameters and target tensors of `size` members, one (P, *shape) per shape; `paired`: both
    networks in one (2, P, *shape) buffer per shape (online slot 0, target slot 1) for `paired_q`."""
    params: list[torch.Tensor]
    if paired:
        pairs = [torch.zeros(2, size, *shape, device=device) for shape in shapes]
        params = [nn.Parameter(pair[0]) for pair in pairs]
        return params, [pair[1] for pair in pairs], pairs
    params = [nn.Parameter(torch.zeros(size, *shape, device=device)) for shape in shapes]
    return params, [torch.zeros_like(p, requires_grad=False) for p in params], None


@torch.no_grad()
def init_members(params: list[torch.Tensor], generator: torch.Generator, seed: int | Sequence[int]) -> None:
    """Every member's weights and biases drawn as nn.Linear draws a single network's from `seed` (one for
    all, or member i's from `seed[i]`)."""
    for i in range(params[0].shape[0]):
        init = generator.manual_seed(seed if isinstance(seed, int) else seed[i])
        for weight, bias in zip(params[0::2], params[1::2], strict=True):
            bound = 1.0 / math.sqrt(weight.shape[2])
            weight[i].uniform_(-bound, bound, generator=init)
            bias[i].uniform_(-bound, bound, generator=init)


def member_draws(
    generators: list[torch.Generator] | None, size: int, rows: int, device: torch.device
) -> tuple[torch.Tensor, ...]:
    """Collection's incoming positions, exploration uniforms and random actions, (P, rows) each: from the
    default generator (CUDA), or per member from its own in a single network's order (CPU)."""
    if generators is None:
        return (
            torch.randint(0, N_ACTIONS, (size, rows), device=device),
            torch.rand(size, rows, device=device),
            torch.randint(0, N_ACTIONS, (size, rows), device=device),
        )
    draws = [
        (
            torch.randint(0, N_ACTIONS, (rows,), generator=g),
            torch.rand(rows, generator=g),
            torch.randint(0, N_ACTIONS, (rows,), generator=g),
        )
        for g in generators
    ]
    return tuple(torch.stack(parts) for parts in zip(*draws, strict=True))


@torch.no_grad()
def clip_grad_norm(grads: list[torch.Tensor], max_norm: torch.Tensor) -> None:
    """Scale the gradients down so their global L2 norm is at most `max_norm` (a device value)."""
    total = torch.nn.utils.get_total_norm(grads, foreach=True)
    # reciprocal × max_norm, as torch's own clip computes `float / tensor`: same values bit for bit.
    torch._foreach_mul_(grads, torch.clamp(torch.reciprocal(total + 1e-6) * max_norm, max=1.0))


@torch.no_grad()
def clip_grad_norm_per_member(grads: list[torch.Tensor], max_norm: torch.Tensor) -> None:
    """Scale each member's gradients down so their L2 norm over all its tensors is at most its `max_norm`."""
    # Norm of the per-tensor norms, as torch's get_total_norm computes a single network's.
    total = torch.linalg.vector_norm(torch.stack([g.flatten(1).norm(dim=1) for g in grads]), dim=0)
    scale = torch.clamp(torch.reciprocal(total + 1e-6) * max_norm, max=1.0)
    torch._foreach_mul_(grads, [per_member(scale, g) for g in grads])


@torch.no_grad()
def adam_update(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    exp_avg: list[torch.Tensor],
    exp_avg_sq: list[torch.Tensor],
    step: torch.Tensor,
    lr: torch.Tensor,
) -> None:
    """Adam (no decay term: the L2 is in the gradient) on stacked tensors with a learning rate per member."""
    beta1, beta2 = ADAM_BETAS
    step.add_(1)
    torch._foreach_lerp_(exp_avg, grads, 1 - beta1)
    torch._foreach_mul_(exp_avg_sq, beta2)
    torch._foreach_addcmul_(exp_avg_sq, grads, grads, 1 - beta2)
    step_size = lr / (1 - torch.pow(beta1, step))  # (P,)
    bias2_sqrt = torch.sqrt(1 - torch.pow(beta2, step))
    denom = torch._foreach_div(torch._foreach_sqrt(exp_avg_sq), bias2_sqrt)
    torch._foreach_add_(denom, ADAM_EPS)
    updates = torch._foreach_div(exp_avg, denom)
    torch._foreach_mul_(updates, [per_member(-step_size, p) for p in params])
    torch._foreach_add_(params, updates)


@torch.no_grad()
def exact_member_update(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    exp_avg: list[torch.Tensor],
    exp_avg_sq: list[torch.Tensor],
    step: int,
    member: int,
    lr: float,
    grad_clip: torch.Tensor,
    weight_decay: torch.Tensor,
) -> None:
    """Member `member`'s clip, L2 decay and Adam step `step` (from 1), as torch.optim.Adam(foreach) does
    them on the CPU: the bias corrections and step size in host floats, the update one addcdiv."""
    beta1, beta2 = ADAM_BETAS
    view = [t[member] for t in params]
    grad = [g[member] for g in grads]
    clip_grad_norm(grad, grad_clip)
    torch._foreach_addcmul_(grad, view, [weight_decay] * len(view))
    first, second = [m[member] for m in exp_avg], [v[member] for v in exp_avg_sq]
    torch._foreach_lerp_(first, grad, 1 - beta1)
    torch._foreach_mul_(second, beta2)
    torch._foreach_addcmul_(second, grad, grad, 1 - beta2)
    step_size = (lr / (1 - beta1 ** float(step))) * -1
    denom = torch._foreach_sqrt(second)
    torch._foreach_div_(denom, (1 - beta2 ** float(step)) ** 0.5)
    torch._foreach_add_(denom, ADAM_EPS)
    torch._foreach_addcdiv_(view, first, denom, step_size)


@torch.no_grad()
def polyak_update(
    target: list[torch.Tensor], online: list[torch.Tensor], tau: torch.Tensor | list[torch.Tensor]
) -> None:
    """target ← (1 − τ) · target + τ · online, in place, with τ a device value (or one per tensor)."""
    # target + τ·(online − target) as one fused multiply-add, which rounds as torch's lerp does for
    # τ < 0.5; foreach lerp takes τ only as a host number, and inductor does not fuse its tensor form.
    taus = tau if isinstance(tau, list) else [tau] * len(target)
    torch._foreach_addcmul_(target, torch._foreach_sub(online, target), taus)
