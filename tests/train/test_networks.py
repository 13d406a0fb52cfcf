"""The Q-network's faster evaluations compute what the modules compute.

The members' stacked products, the paired next-state values (online and target networks as one
batched product per layer) and fused activations (bias and ReLU in the product's epilogue); these
tests pin them on every device against the modules' own forward, so a swapped slot, a wrong member
or a wrong transpose fails.
"""

import numpy as np
import pytest
import torch
from support.dqn_cases import (
    TINY,
    constant_layers,
    draw_for,
    fill_replay,
    member_q_and_target,
    set_layers,
    tiny_trainer,
)
from support.trainer_cases import DEVICES, target_network

from foxhunt.train.networks import build_qnet, member_network
from foxhunt.train.policy import inference_q, linears
from foxhunt.train.stacked import batched_q, padded, paired_q, stacked_q, stacked_weights

# TF32 products (set by a CUDA trainer for the whole process) round to about 1e-3.
CLOSE = {"cpu": {"rtol": 1e-6, "atol": 1e-6}, "cuda": {"rtol": 1e-2, "atol": 1e-2}}
MEMBERS = 3


def _stacked(device: str, paired: bool, seed: int = 0):
    """Online and target weights of 3 members drawn at random: (params, target, pairs)."""
    shapes = [s.shape for lin in linears(build_qnet(6, 16)) for s in (lin.weight, lin.bias)]
    params, target, pairs = stacked_weights(shapes, MEMBERS, torch.device(device), paired)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for tensor in [*params, *target]:
            tensor.copy_(torch.randn(tensor.shape, generator=gen).to(device) * 0.3)
    return params, target, pairs


def _states(device: str, rows: int = 64) -> torch.Tensor:
    return torch.randn(MEMBERS, rows, 7, generator=torch.Generator().manual_seed(1)).to(device)


@pytest.mark.parametrize("device", DEVICES)
def test_stacked_values_are_each_members_own_network(device):
    params, _, _ = _stacked(device, paired=False)
    states = _states(device)
    with torch.no_grad():
        q = stacked_q(params, states)
        for i in range(MEMBERS):
            torch.testing.assert_close(q[i], member_network(params, i, 16)(states[i]), **CLOSE[device])
    assert not torch.allclose(q[0], q[1])


@pytest.mark.parametrize("device", DEVICES)
def test_paired_values_are_the_online_and_the_target_networks_own(device):
    params, target, pairs = _stacked(device, paired=True)
    states = _states(device)
    with torch.no_grad():
        q_online, q_target = paired_q(pairs, states)
        for i in range(MEMBERS):
            torch.testing.assert_close(q_online[i], member_network(params, i, 16)(states[i]), **CLOSE[device])
            torch.testing.assert_close(q_target[i], member_network(target, i, 16)(states[i]), **CLOSE[device])
    assert not torch.allclose(q_online, q_target)  # a swapped slot would fail above


def test_padding_appends_zeros_along_one_dimension_up_to_a_multiple():
    x = torch.ones(2, 3, 7)
    assert padded(x, -1, 8).shape == (2, 3, 8) and padded(x, 1, 8).shape == (2, 8, 7)
    assert torch.equal(padded(x, -1, 8)[..., :7], x) and not torch.any(padded(x, -1, 8)[..., 7:])
    assert padded(x, 0, 2) is x and padded(x, -1, 1) is x  # already a multiple: the tensor itself


@pytest.mark.parametrize("device", DEVICES)
def test_padded_products_give_the_unpadded_values_and_gradients(device):
    # 7 inputs and 3 actions, neither a multiple of 8: both paddings act (bf16's, on CUDA).
    values, grads = {}, {}
    for align in (1, 8):
        params, _, _ = _stacked(device, paired=False)
        values[align] = batched_q(params, _states(device), align)
        values[align].square().sum().backward()
        grads[align] = [p.grad.clone() for p in params]
    assert values[8].shape == values[1].shape == (MEMBERS, 64, 3)
    torch.testing.assert_close(values[8], values[1], **CLOSE[device])
    # The gradients sum 64 rows' products: a few ulps more than one value.
    close = {"rtol": 1e-5, "atol": 1e-5} if device == "cpu" else CLOSE[device]
    for padded_grad, grad in zip(grads[8], grads[1], strict=True):
        torch.testing.assert_close(padded_grad, grad, **close)


@pytest.mark.parametrize("device", DEVICES)
def test_padded_paired_products_give_the_unpadded_values(device):
    _, _, pairs = _stacked(device, paired=True)
    with torch.no_grad():
        plain, aligned = paired_q(pairs, _states(device), 1), paired_q(pairs, _states(device), 8)
    for got, want in zip(aligned, plain, strict=True):
        assert got.shape == want.shape == (MEMBERS, 64, 3)
        torch.testing.assert_close(got, want, **CLOSE[device])


@pytest.mark.parametrize("device", DEVICES)
def test_the_paired_parameters_are_views_of_their_slot(device):
    params, target, pairs = _stacked(device, paired=True)
    assert params[0].data_ptr() == pairs[0][0].data_ptr() and target[1].data_ptr() == pairs[1][1].data_ptr()
    assert params[0].requires_grad and not target[0].requires_grad
    with torch.no_grad():
        target[0].mul_(0.5)  # as the Polyak step and resets write: in place
    assert torch.equal(pairs[0][1], target[0])


@pytest.mark.parametrize("device", DEVICES)
def test_a_members_network_is_a_view_of_its_slot(device):
    params, _, _ = _stacked(device, paired=False)
    net = member_network(params, 1, 16)
    assert linears(net)[0].weight.data_ptr() == params[0][1].data_ptr()
    with torch.no_grad():
        params[0][1].zero_()
    assert not torch.any(linears(net)[0].weight)


@pytest.mark.parametrize("device", DEVICES)
def test_fused_activations_compute_the_modules_forward(device):
    torch.manual_seed(0)
    online = build_qnet(6, 16).to(device)
    states = _states(device, rows=512)[0]
    with torch.no_grad():
        torch.testing.assert_close(inference_q(online, states, True), online(states), **CLOSE[device])
        assert torch.equal(inference_q(online, states, False), online(states))


@pytest.mark.parametrize("device", DEVICES)
def test_a_state_padded_with_zero_columns_gives_the_unpadded_q_values(device):
    torch.manual_seed(1)
    online = build_qnet(6, 16).to(device)
    states = _states(device, rows=512)[0]  # 7 columns: 6 features and the position
    wide = torch.cat([states, torch.zeros(512, 1, device=device)], dim=1)
    with torch.no_grad():
        torch.testing.assert_close(inference_q(online, wide, True), online(states), **CLOSE[device])


@pytest.mark.parametrize("device", DEVICES)
def test_the_td_target_from_paired_values_is_the_double_dqn_target(device):
    trainer = tiny_trainer(np.arange(12) % 3 - 1.0, np.zeros(12), device, TINY)
    set_layers(trainer.networks[0], *constant_layers([0.0, 0.0, 1.0]))  # online argmax: long
    set_layers(target_network(trainer), *constant_layers([5.0, 1.0, 2.0]))  # target's own max: short
    fill_replay(trainer, [0.0, 1.0], [2, 0], [0.25, -0.5])
    u = draw_for(trainer, [0, 1])
    _, y_separate, _ = member_q_and_target(trainer, u)
    trainer.pairs = [
        torch.stack([o.detach(), t]) for o, t in zip(trainer.params, trainer.target_params, strict=True)
    ]
    _, y_paired, _ = member_q_and_target(trainer, u)
    assert y_paired.tolist() == y_separate.tolist() == pytest.approx([0.25 + 0.9 * 2.0, -0.5 + 0.9 * 2.0])
