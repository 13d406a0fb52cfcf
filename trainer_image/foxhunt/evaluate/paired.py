"""Paired comparisons of two P&L streams on the same bars: the model against a baseline.

A difference of Sharpe ratios is judged by its own uncertainty, not by where one point estimate falls
in the other's interval: both streams are resampled with the *same* circular blocks (Politis & Romano
1992), so the correlation of the two streams (a 95%-exposure policy is mostly buy-and-hold) is kept in
every resample. The interval is the percentile interval of the resampled differences; the p-value is
that of the centred bootstrap (the share of resampled differences at least as far from the estimate as
the estimate is from zero), two-sided.

Relative figures against a benchmark stream (buy-and-hold): beta = cov(m, b) / var(b) (population
moments), alpha = mean(m) − beta · mean(b) per bar, and the information ratio = mean(m − b) /
std(m − b) (active return over tracking error), annualised by sqrt(periods per year), alpha by
periods per year (log-return units).

Sharpe ratios here are per period (population std), as in `foxhunt.evaluate.sharpe`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from foxhunt.evaluate.sharpe import block_bootstrap_sharpes, sharpe_ratio

ABOVE = "above"
BELOW = "below"
NO_CLEAR_DIFFERENCE = "no clear difference"
NOT_TESTED = "not tested"


@dataclass(frozen=True)
class SharpeDifference:
    """Model minus baseline, per-period Sharpe, with its paired bootstrap interval and p-value."""

    difference: float
    ci_low: float  # NaN when no resample was drawn
    ci_high: float
    p_value: float
    verdict: str  # ABOVE / BELOW (the interval excludes 0), NO_CLEAR_DIFFERENCE, or NOT_TESTED


def paired_bootstrap_differences(
    model: np.ndarray, baseline: np.ndarray, *, resamples: int, block: int = 0, seed: int = 0
) -> np.ndarray:
    """Sharpe(model*) − Sharpe(baseline*) for `resamples` circular block resamples with shared block starts.

    Each resample is ceil(T / block) blocks of `block` consecutive bars (wrapping), the last cut so it
    has T bars; block 0 means `sharpe.default_block(T)`. The same bars are drawn for both streams: the
    blocks `sharpe.bootstrap_starts` draws for T bars and the seed, as each stream's own bootstrap does.
    """
    a = np.asarray(model, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"streams of {a.size} and {b.size} bars: a paired test needs the same bars")
    if a.size < 2 or resamples < 1:
        return np.zeros(max(resamples, 0))
    own = {"resamples": resamples, "block": block, "seed": seed}
    return block_bootstrap_sharpes(a, **own) - block_bootstrap_sharpes(b, **own)


def sharpe_difference(
    model: np.ndarray,
    baseline: np.ndarray,
    *,
    resamples: int = 1000,
    level: float = 0.95,
    block: int = 0,
    seed: int = 0,
    draws: tuple[np.ndarray, np.ndarray] | None = None,
    sharpes: tuple[float, float] | None = None,
) -> SharpeDifference:
    """The paired test of Sharpe(model) − Sharpe(baseline) on the same bars (per-period Sharpe).

    Verdict ABOVE when the `level` interval lies above 0, BELOW when below, NO_CLEAR_DIFFERENCE when it
    holds 0, NOT_TESTED without resamples. `draws`: the two streams' own bootstrap Sharpe ratios
    (`sharpe.block_bootstrap_sharpes` with these resamples, block and seed), and `sharpes` their
    `sharpe.sharpe_ratio`s, when already computed.
    """
    model_sharpe, baseline_sharpe = (
        (sharpe_ratio(model), sharpe_ratio(baseline)) if sharpes is None else sharpes
    )
    diff = model_sharpe - baseline_sharpe
    if resamples < 1:
        return SharpeDifference(diff, math.nan, math.nan, math.nan, NOT_TESTED)
    if draws is None:
        differences = paired_bootstrap_differences(
            model, baseline, resamples=resamples, block=block, seed=seed
        )
    elif np.asarray(model).size < 2:
        differences = np.zeros(resamples)
    else:
        differences = draws[0] - draws[1]
    low, high = np.quantile(differences, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    p_value = float(np.mean(np.abs(differences - diff) >= abs(diff))) if diff != 0 else 1.0
    verdict = ABOVE if low > 0 else BELOW if high < 0 else NO_CLEAR_DIFFERENCE
    return SharpeDifference(diff, float(low), float(high), p_value, verdict)


@dataclass(frozen=True)
class Relative:
    """A stream against a benchmark stream on the same bars (annualised where named)."""

    alpha: float  # per year, log-return units: (mean(m) − beta · mean(b)) · periods per year
    beta: float  # cov(m, b) / var(b); 0 when the benchmark does not move
    information_ratio: float  # mean(m − b) / std(m − b) · sqrt(periods per year); 0 when m ≡ b


def relative_to(stream: np.ndarray, benchmark: np.ndarray, periods_per_year: float) -> Relative:
    """Alpha, beta and information ratio of `stream` against `benchmark` (population moments)."""
    return relative_to_each(stream, [benchmark], periods_per_year)[0]


def relative_to_each(
    stream: np.ndarray, benchmarks: Sequence[np.ndarray], periods_per_year: float
) -> list[Relative]:
    """`relative_to` of `stream` against each benchmark, the stream's own moments computed once."""
    m = np.asarray(stream, dtype=np.float64)
    m_mean = m.mean() if m.size else 0.0
    m_centred = m - m_mean
    out = []
    for benchmark in benchmarks:
        b = np.asarray(benchmark, dtype=np.float64)
        if m.shape != b.shape:
            raise ValueError(f"streams of {m.size} and {b.size} bars: relative figures need the same bars")
        if m.size == 0:
            out.append(Relative(0.0, 0.0, 0.0))
            continue
        var_b = b.var()
        beta = float(np.mean(m_centred * (b - b.mean())) / var_b) if var_b > 0 else 0.0
        alpha = (m_mean - beta * b.mean()) * periods_per_year
        active = m - b
        tracking = active.std()
        ir = float(active.mean() / tracking * math.sqrt(periods_per_year)) if tracking > 0 else 0.0
        out.append(Relative(float(alpha), beta, ir))
    return out
