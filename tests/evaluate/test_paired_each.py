"""A stream's figures against several benchmarks at once (`paired.relative_to_each`) are each benchmark's
`relative_to`, and a paired test given the two Sharpe ratios is the test that computes them."""

import math

import numpy as np
import pytest

from foxhunt.evaluate import paired
from foxhunt.evaluate.sharpe import block_bootstrap_sharpes, sharpe_ratio


def one_benchmark(m: np.ndarray, b: np.ndarray, periods_per_year: float) -> paired.Relative:
    """The figures against one benchmark, as the module's docstring defines them, in numpy's own order."""
    var_b = b.var()
    beta = float(np.mean((m - m.mean()) * (b - b.mean())) / var_b) if var_b > 0 else 0.0
    active = m - b
    tracking = active.std()
    ir = float(active.mean() / tracking * math.sqrt(periods_per_year)) if tracking > 0 else 0.0
    return paired.Relative(float((m.mean() - beta * b.mean()) * periods_per_year), beta, ir)


def test_figures_against_several_benchmarks_are_each_benchmarks_own():
    # Catches: the stream's moments taken from a benchmark, or the results out of order.
    rng = np.random.default_rng(7)
    stream = rng.normal(1e-4, 1e-3, 500)
    benchmarks = [rng.normal(0, 1e-3, 500), np.zeros(500), stream * 0.5 + rng.normal(0, 1e-4, 500), stream]
    want = [one_benchmark(stream, b, 250.0) for b in benchmarks]
    assert paired.relative_to_each(stream, benchmarks, 250.0) == want
    assert [paired.relative_to(stream, b, 250.0) for b in benchmarks] == want
    assert paired.relative_to_each(np.zeros(0), [np.zeros(0)], 250.0) == [paired.Relative(0.0, 0.0, 0.0)]
    with pytest.raises(ValueError, match="the same bars"):
        paired.relative_to_each(stream, [benchmarks[0], np.zeros(3)], 250.0)


def test_a_paired_test_given_both_sharpe_ratios_is_the_test_that_computes_them():
    rng = np.random.default_rng(8)
    model, baseline = rng.normal(2e-4, 1e-3, 400), rng.normal(0, 1e-3, 400)
    own = {"resamples": 200, "block": 5, "seed": 2}
    draws = (block_bootstrap_sharpes(model, **own), block_bootstrap_sharpes(baseline, **own))
    want = paired.sharpe_difference(model, baseline, draws=draws, **own)
    given = paired.sharpe_difference(
        model, baseline, draws=draws, sharpes=(sharpe_ratio(model), sharpe_ratio(baseline)), **own
    )
    assert given == want
    assert paired.sharpe_difference(model, baseline, draws=draws, sharpes=(1.0, 0.0), **own).difference == 1.0
