"""The Q-network's faster evaluations on CUDA compute what the modules compute.

Paired next-state values (online and target networks as one batched product per layer) and fused
activations (bias and ReLU in the product's epilogue) are CUDA switches; these tests pin them on
every device against the modules' own forward, so a swapped slot or a wrong transpose fails.
"""

import numpy as np
import pytest
import torch
from support.dqn_cases import TINY, constant_layers, draw_for, fill_replay, set_layers, tiny_trainer
from support.trainer_cases import DEVICES

from foxhunt.train.networks import build_qnet, inference_q, linears, pair_networks, paired_q

# TF32 products (set by a CUDA trainer for the whole process) round to about 1e-3.
CLOSE = {"cpu": {"rtol": 1e-6, "atol": 1e-6}, "cuda": {"rtol": 1e-2, "atol": 1e-2}}


def _networks(device: str, seed: int = 0) -> tuple[torch.nn.Sequential, torch.nn.Sequential]:
    torch.manual_seed(seed)
    online, target = build_qnet(6, 16).to(device), build_qnet(6, 16).to(device)
    target.requires_grad_(False)
    return online, target


def _states(device: str, rows: int = 64) -> torch.Tensor:
    return torch.randn(rows, 7, generator=torch.Generator().manual_seed(1)).to(device)


@pytest.mark.parametrize("device", DEVICES)
def test_paired_values_are_the_online_and_the_target_networks_own(device):
    online, target = _networks(device)
    states = _states(device)
    with torch.no_grad():
        expected = (online(states), target(states))
        pairs = pair_networks(online, target)
        q_online, q_target = paired_q(pairs, states)
    torch.testing.assert_close(q_online, expected[0], **CLOSE[device])
    torch.testing.assert_close(q_target, expected[1], **CLOSE[device])
    assert not torch.allclose(expected[0], expected[1])  # a swapped slot would fail above


@pytest.mark.parametrize("device", DEVICES)
def test_paired_values_are_exact_for_a_hand_built_pair(device):
    online, target = build_qnet(2, 4).to(device), build_qnet(2, 4).to(device)
    set_layers(online, *constant_layers([0.0, 0.0, 1.0]))
    set_layers(target, *constant_layers([5.0, 1.0, 2.0]))
    with torch.no_grad():
        q_online, q_target = paired_q(pair_networks(online, target), torch.ones(3, 3, device=device))
    assert q_online.tolist() == [[0.0, 0.0, 1.0]] * 3
    assert q_target.tolist() == [[5.0, 1.0, 2.0]] * 3


@pytest.mark.parametrize("device", DEVICES)
def test_pairing_makes_each_parameter_a_view_of_its_slot(device):
    online, target = _networks(device)
    before = [p.detach().clone() for p in [*online.parameters(), *target.parameters()]]
    pairs = pair_networks(online, target)
    after = [*online.parameters(), *target.parameters()]
    for old, new in zip(before, after, strict=True):
        assert torch.equal(old, new)
    weights, biases = pairs[0]
    first_online, first_target = linears(online)[0], linears(target)[0]
    assert first_online.weight.data_ptr() == weights[0].data_ptr()
    assert first_target.bias.data_ptr() == biases[1].data_ptr()
    assert first_online.weight.requires_grad and not first_target.weight.requires_grad


@pytest.mark.parametrize("device", DEVICES)
def test_an_in_place_update_of_a_module_is_what_the_pair_reads(device):
    online, target = _networks(device)
    pairs = pair_networks(online, target)
    states = _states(device)
    with torch.no_grad():
        for p in target.parameters():
            p.mul_(0.5)  # as the Polyak step and resets write: in place
        torch.testing.assert_close(paired_q(pairs, states)[1], target(states), **CLOSE[device])


@pytest.mark.parametrize("device", DEVICES)
def test_fused_activations_compute_the_modules_forward(device):
    online, _ = _networks(device)
    states = _states(device, rows=512)
    with torch.no_grad():
        torch.testing.assert_close(inference_q(online, states, True), online(states), **CLOSE[device])
        assert torch.equal(inference_q(online, states, False), online(states))


@pytest.mark.parametrize("device", DEVICES)
def test_the_td_target_from_paired_values_is_the_double_dqn_target(device):
    separate = tiny_trainer(np.arange(12) % 3 - 1.0, np.zeros(12), device, TINY)
    set_layers(separate.online, *constant_layers([0.0, 0.0, 1.0]))  # online argmax: long
    set_layers(separate.target, *constant_layers([5.0, 1.0, 2.0]))  # target's own max: short
    fill_replay(separate, [0.0, 1.0], [2, 0], [0.25, -0.5])
    u = draw_for(separate, [0, 1])
    _, y_separate, _ = separate.q_and_target(u)
    separate.pairs = pair_networks(separate.online, separate.target)
    _, y_paired, _ = separate.q_and_target(u)
    assert y_paired.tolist() == y_separate.tolist() == pytest.approx([0.25 + 0.9 * 2.0, -0.5 + 0.9 * 2.0])
