"""bench/host_syncs.py: each way the host waits for the device counted once, by kind and by the line of
foxhunt that asked; a copy's own reads not counted again; the MLP's optimiser segments counted apart."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import host_syncs  # noqa: E402

CPU = torch.device("cpu")


def _counts(call):
    return host_syncs.count(call, CPU)


def test_a_read_of_one_value_is_one_sync_after_the_ops_that_made_it():
    x = torch.arange(6.0)
    got = _counts(lambda: float(x.sum()))
    assert got["host_syncs"] == 1 and got["syncs_by_kind"] == {"read a value": 1}
    assert got["ops"] == 2 and got["top_ops"] == {"sum": 1, "_local_scalar_dense": 1}


def test_a_copy_to_the_host_is_one_sync_and_reading_the_copy_adds_none():
    x = torch.arange(6.0)
    got = _counts(lambda: (x.cpu().tolist(), float(x.cpu()[2]), x.tolist()))
    assert got["syncs_by_kind"] == {"copy to host": 3}


def test_ops_whose_shape_or_check_the_host_waits_for_are_syncs_and_solve_ex_unchecked_is_not():
    x = torch.tensor([0.5, -1.0, 2.0])
    a = torch.eye(3, dtype=torch.float64) * 2.0
    b = torch.ones(3, dtype=torch.float64)
    got = _counts(
        lambda: (
            x[x > 0],
            x.nonzero(),
            torch.equal(torch.zeros(2, device=CPU), x[:2]),
            torch.linalg.solve(a, b),
        )
    )
    waits = {"boolean-mask index": 1, "nonzero": 1, "equal": 1, "_linalg_check_errors": 1}
    assert got["syncs_by_kind"] == waits
    assert _counts(lambda: torch.linalg.solve_ex(a, b, check_errors=False))["host_syncs"] == 0


def test_a_sync_names_the_line_of_foxhunt_that_asked_for_it():
    from foxhunt.evaluate.records import host_array

    x = torch.ones(3)
    sites = _counts(lambda: host_array(x))["sync_sites"]
    assert len(sites) == 1
    (site,) = sites
    assert site.startswith("evaluate/records.py:") and site.endswith(" host_array") and sites[site] == 1


def test_the_mlp_optimiser_segments_are_counted_apart_from_the_rest_of_the_fit():
    from foxhunt.evaluate.supervised import MLP_CHECK_EVERY, fit_mlp

    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(800, 3, generator=gen), torch.randn(800, generator=gen)

    # 32 rows a step: even one segment draws more rows (800) than the fit has (about 635), so every fit
    # standardises its rows once and each step gathers its own, the same operations per step.
    def fit(segments: int) -> dict:
        return _counts(lambda: fit_mlp(x, y, 5, steps=segments * MLP_CHECK_EVERY, batch=32))

    one, two, three = (fit(n)["mlp_segments"]["ops"] for n in (1, 2, 3))
    assert three - two == two - one > 0  # every segment's steps counted there
    assert fit(2)["ops"] < two - one  # the rest (standardising, the checkpoints' tail losses) is far less


def test_each_tensor_the_host_made_and_sends_to_the_device_is_one_sync_and_an_async_copy_none():
    # Catches: a module's weights counted once, a copy of what the device holds counted, or non_blocking missed.
    import numpy as np

    held = torch.ones(3)  # made before the call: the device's, as a run's loaded data

    def send():
        torch.nn.Linear(3, 2).to(CPU)  # two tensors the host made
        torch.from_numpy(np.ones(3)).to(CPU)
        torch.zeros(2).double().to(CPU, non_blocking=True)
        held.to(CPU)  # already there
        torch.ones(3, device=CPU).to(CPU)  # made there

    got = _counts(send)
    assert got["syncs_by_kind"] == {"copy to device": 3} and got["async_copies_to_device"] == 1
