"""Several MLP fits at once (`mlp_fit.fit_mlps`: every fit's reads and copies first, then the steps) give
each fit's own weights and predictions bit for bit, on the signal arrays."""

import pytest
import torch
from support.signal_arrays import signal_arrays

from foxhunt.evaluate import supervised as sv
from foxhunt.evaluate.mlp_fit import fit_mlps

STEPS = 100


@pytest.fixture(scope="module")
def rows():
    arrays = signal_arrays(24_000, seed=0)  # enough bars that a fit learns (moves from step 0)
    return torch.from_numpy(arrays.features), torch.from_numpy(arrays.targets)


def test_fits_made_together_equal_each_fit_made_alone(rows):
    # Catches: one fit's target scale, first weights or minibatch rows given to another.
    x, y = rows
    jobs = [(x[:16_000], y[:16_000, sv.target_column(h)], h) for h in sv.SUPERVISED_HORIZONS]
    jobs.append((x[:90], y[:90, sv.target_column(15)], 15))  # too short for a tail: the step-0 model
    split_jobs = [(f, t, sv.split_for_tail(f.shape[0], h)) for f, t, h in jobs]
    options = {"hidden": 16, "steps": STEPS, "batch": 256, "lr": 1e-2}
    together = fit_mlps(split_jobs, seed=4, graphs=True, **options)
    val = x[16_100:16_600]
    for fit, (f, t, h) in zip(together, jobs, strict=True):
        alone = sv.fit_mlp(f, t, h, seed=4, **options)
        assert (fit.y_mean, fit.y_std) == (alone.y_mean, alone.y_std)
        assert all(
            torch.equal(a, b) for a, b in zip(fit.net.parameters(), alone.net.parameters(), strict=True)
        )
        assert torch.equal(fit.predict(val), alone.predict(val))
    # The first two learnt (a step-0 model predicts one number): their steps, not only their starts, agree.
    assert all(fit.predict(val).unique().numel() > 1 for fit in together[:2])


def test_fits_on_two_devices_at_once_are_refused(rows):
    x, y = rows
    meta = (x[:500].to("meta"), y[:500, 0].to("meta"), None)
    with pytest.raises(ValueError, match="one device at a time"):
        fit_mlps(
            [(x[:500], y[:500, 0], None), meta], seed=0, hidden=8, steps=25, batch=8, lr=1e-3, graphs=True
        )
