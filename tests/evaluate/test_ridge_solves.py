"""Ridge fits solved together from one set of normal equations (`ridge.solve_ridges`) are each fit solved
alone, bit for bit; the held-back tail's errors of several slices are read at once and each picks its
penalty as `ridge_penalty` does."""

import pytest
import torch
from support.signal_arrays import signal_arrays

from foxhunt.evaluate import supervised as sv
from foxhunt.evaluate.ridge import (
    RIDGE_LAMBDA,
    fit_ridge,
    normal_equations,
    predict_ridge,
    predict_ridges,
    solve_ridges,
)


@pytest.fixture(scope="module")
def rows():
    arrays = signal_arrays(6000, seed=3)
    return torch.from_numpy(arrays.features).double(), torch.from_numpy(arrays.targets).double()


def test_fits_solved_together_are_each_fit_solved_alone(rows):
    # Catches: a right-hand side or penalty given to the wrong fit, or the scaling shared wrongly.
    x, y = rows
    equations = normal_equations(x[:4000], [y[:4000, 0], y[:4000, 3]])
    wanted = [(0, 0.05), (1, 1.0), (0, 10.0), (1, 1e-2)]
    together = solve_ridges(equations, wanted)
    val = x[4100:4600]
    shared = predict_ridges(together, val)  # the fits share one standardisation, computed once
    for fit, prediction, (target, lam) in zip(together, shared, wanted, strict=True):
        alone = fit_ridge(x[:4000], y[:4000, (0, 3)[target]], lam)
        assert torch.equal(fit.weights, alone.weights) and torch.equal(fit.intercept, alone.intercept)
        assert torch.equal(prediction, predict_ridge(alone, val))


def test_a_penalty_that_is_not_positive_is_refused_before_any_solve(rows):
    x, y = rows
    with pytest.raises(ValueError, match="must be > 0"):
        solve_ridges(normal_equations(x[:500], [y[:500, 0]]), [(0, 1.0), (0, 0.0)])


def test_each_slice_picks_the_penalty_of_its_least_tail_error_and_a_short_slice_the_default(rows):
    # Catches: the last of equal errors picked, the largest picked, or a slice's errors read for another.
    errors = [torch.tensor([3.0, 1.0, 2.0, 1.0, 5.0], dtype=torch.float64), None,
              torch.tensor([0.5, 0.7, 0.9, 1.1, 1.3], dtype=torch.float64)]  # fmt: skip
    assert sv.pick_penalties(errors) == [sv.RIDGE_LAMBDAS[1], RIDGE_LAMBDA, sv.RIDGE_LAMBDAS[0]]
    x, y = rows
    read = sv.pick_penalties(
        [sv.tail_errors(x[:3000], y[:3000, 2], 15), sv.tail_errors(x[:3000], y[:3000, 3], 60)]
    )
    assert read == [sv.ridge_penalty(x[:3000], y[:3000, 2], 15), sv.ridge_penalty(x[:3000], y[:3000, 3], 60)]
