"""Sums, means and standard deviations that round the same at any CPU thread count (train/reductions.py)."""

from __future__ import annotations

import math

import pytest
import torch

from foxhunt.train.reductions import GRAIN, fixed_mean, fixed_std, fixed_sum

LONG = 100_003  # past ATen's grain, where torch splits a one-output reduction across threads


@pytest.fixture
def threads():
    """Run the body at a given torch thread count; the suite's own count comes back after."""
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


def _values(n: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, generator=torch.Generator().manual_seed(seed)).to(dtype)


# The cases where torch's own reduction differs between 1 and 2 threads (an AVX-512 EPYC, torch 2.13).
@pytest.mark.parametrize(
    ("reduce", "dtype"),
    [(fixed_sum, torch.float32), (fixed_mean, torch.float32), (fixed_std, torch.float64)],
    ids=["sum", "mean", "std"],
)
def test_a_long_reduction_rounds_the_same_at_one_two_and_three_threads(reduce, dtype, threads):
    x = _values(LONG, dtype)
    results = []
    for count in (1, 2, 3):
        threads(count)
        results.append(reduce(x).item())
    assert results[1] == results[0] and results[2] == results[0], results


def test_a_short_reduction_is_torchs_own(threads):
    threads(2)
    x = _values(GRAIN - 1, torch.float32)
    assert fixed_sum(x).item() == x.sum().item()
    assert fixed_mean(x).item() == x.mean().item()
    assert fixed_std(x).item() == x.std(correction=0).item()


def test_the_fixed_tree_sums_mean_and_spread_to_float64_rounding():
    x = _values(LONG, torch.float64, seed=1)
    exact = math.fsum(x.tolist())
    assert fixed_sum(x).item() == pytest.approx(exact, rel=1e-13)
    assert fixed_mean(x).item() == pytest.approx(exact / LONG, rel=1e-13)
    centred = [v - exact / LONG for v in x.tolist()]
    assert fixed_std(x).item() == pytest.approx(
        math.sqrt(math.fsum(c * c for c in centred) / LONG), rel=1e-12
    )


def test_each_member_of_a_population_reduces_as_it_would_alone(threads):
    threads(2)
    members = torch.stack([_values(LONG, torch.float32, seed=s) for s in range(3)])
    together = fixed_mean(members, dim=1)
    alone = [fixed_mean(members[i]).item() for i in range(3)]
    assert together.tolist() == alone


def test_the_reduced_dimension_is_the_one_named():
    x = _values(2 * LONG, torch.float64).view(LONG, 2)
    assert fixed_sum(x, dim=0).tolist() == [
        fixed_sum(x[:, 0].contiguous()).item(),
        fixed_sum(x[:, 1].contiguous()).item(),
    ]
