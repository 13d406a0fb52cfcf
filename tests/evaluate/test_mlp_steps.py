"""The supervised MLP's steps: the written-out steps a CUDA graph captures equal torch's AdamW bit for bit."""

import copy
import subprocess
import sys

import pytest
import torch
from support.signal_arrays import signal_arrays

from foxhunt.evaluate import mlp_steps
from foxhunt.evaluate.mlp_steps import StepPlan, eager_segments, fit_segments, flat_segments, graphed

CPU = torch.device("cpu")


def plan(steps: int = 50, every: int = 25, lr: float = 1e-3, weight_decay: float = 1e-4) -> StepPlan:
    return StepPlan(CPU, 42, 16, steps, 256, every, lr, weight_decay)


@pytest.fixture(scope="module")
def batches():
    arrays = signal_arrays(6000, seed=3)
    rows = torch.randint(0, 5000, (50, 256), generator=torch.Generator().manual_seed(0))
    z = torch.from_numpy(arrays.features)[rows].float().clamp(-5, 5)
    y = torch.from_numpy(arrays.targets[:, 2])[rows].float() * 1e3
    return z, y


def network() -> torch.nn.Sequential:
    torch.manual_seed(7)
    return torch.nn.Sequential(
        torch.nn.Linear(42, 16),
        torch.nn.ReLU(),
        torch.nn.Linear(16, 16),
        torch.nn.ReLU(),
        torch.nn.Linear(16, 1),
    )


def weights_after_each_segment(segments, net) -> list[list[torch.Tensor]]:
    return [[p.detach().clone() for p in net.parameters()] for _ in segments]


def test_the_flat_steps_give_adamw_s_weights_bit_for_bit_at_every_checkpoint(batches):
    z, y = batches
    eager_net, flat_net = network(), network()
    eager = weights_after_each_segment(eager_segments(eager_net, z, y, plan()), eager_net)
    flat = weights_after_each_segment(flat_segments(flat_net, z, y, plan()), flat_net)
    assert len(eager) == len(flat) == 2
    for got_segment, want_segment in zip(flat, eager, strict=True):
        for got, want in zip(got_segment, want_segment, strict=True):
            assert torch.equal(got, want)


@pytest.mark.parametrize("field", ["BETAS", "EPS"])
def test_a_wrong_adam_constant_in_the_flat_steps_is_caught(batches, monkeypatch, field):
    z, y = batches
    wrong = {"BETAS": (0.9, 0.99), "EPS": 1e-6}[field]
    monkeypatch.setattr(mlp_steps, field, wrong)
    eager_net, flat_net = network(), network()
    eager = weights_after_each_segment(eager_segments(eager_net, z, y, plan()), eager_net)
    flat = weights_after_each_segment(flat_segments(flat_net, z, y, plan()), flat_net)
    assert not all(torch.equal(a, b) for a, b in zip(flat[-1], eager[-1], strict=True))


def test_the_steps_yield_once_per_checkpoint_and_the_weights_move(batches):
    z, y = batches
    net = network()
    start = copy.deepcopy(net)
    assert sum(1 for _ in eager_segments(net, z, y, plan(steps=50, every=10))) == 5
    assert not torch.equal(net[0].weight, start[0].weight)


def test_a_cpu_fit_never_uses_graphs_and_runs_eagerly(batches):
    z, y = batches
    assert not graphed(plan())
    a, b = network(), network()
    got = weights_after_each_segment(fit_segments(a, z, y, plan()), a)
    want = weights_after_each_segment(eager_segments(b, z, y, plan()), b)
    assert all(torch.equal(g, w) for g, w in zip(got[-1], want[-1], strict=True))


def test_graphs_need_whole_segments():
    cuda = StepPlan(torch.device("cuda", 0), 42, 16, 60, 256, 25, 1e-3, 1e-4)
    assert not graphed(cuda)  # 60 steps are not whole segments of 25


def test_a_failed_capture_warns_and_the_fit_runs_eagerly_from_then_on(batches, monkeypatch):
    def broken(*_args, **_kwargs):
        raise RuntimeError("no graphs here")

    z, y = batches
    monkeypatch.setattr(mlp_steps, "_GRAPHS", {})
    monkeypatch.setattr(mlp_steps, "SegmentGraphs", broken)
    cuda_plan = StepPlan(torch.device("cuda", 0), 42, 16, 50, 256, 25, 1e-3, 1e-4)
    assert graphed(cuda_plan)
    a, b = network(), network()
    with pytest.warns(UserWarning, match="run eagerly: CUDA graph capture failed"):
        got = weights_after_each_segment(fit_segments(a, z, y, cuda_plan), a)
    want = weights_after_each_segment(eager_segments(b, z, y, plan()), b)
    assert all(torch.equal(g, w) for g, w in zip(got[-1], want[-1], strict=True))
    assert not graphed(cuda_plan)


def test_a_cpu_fit_imports_no_torch_dynamo():
    """torch.optim.AdamW's first step imports torch._dynamo (seconds, some 800 modules) in a fresh process;
    a CPU fit steps through `FlatSteps` and leaves it unimported."""
    code = (
        "import sys, torch\n"
        "from foxhunt.evaluate.supervised import fit_mlp\n"
        "g = torch.Generator().manual_seed(0)\n"
        "fit_mlp(torch.randn(2000, 42, generator=g), torch.randn(2000, generator=g), 15, steps=50)\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
