"""Sharpe-ratio statistics of per-bar returns: standard errors, a block bootstrap, PSR and DSR.

Units: every function here works on the *per-period* Sharpe ratio (mean / standard deviation
of the per-bar returns, no annualisation); callers annualise by sqrt(periods per year). The
standard deviation is the population one (ddof = 0), as in the trainer's `policy_metrics`, so the
same positions give the same Sharpe everywhere. Kurtosis is the plain fourth standardised moment
(3 for a normal distribution), not the excess.

References: A. Lo, "The Statistics of Sharpe Ratios", Financial Analysts Journal 58(4), 2002;
D. Bailey and M. López de Prado, "The Sharpe Ratio Efficient Frontier", Journal of Risk 15(2),
2012 (PSR); and "The Deflated Sharpe Ratio", Journal of Portfolio Management 40(5), 2014 (DSR);
D. Politis and J. Romano, "A Circular Block-Resampling Procedure for Stationary Data", 1992.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np

EULER_GAMMA = 0.5772156649015329
_NORMAL = NormalDist()
_BOOTSTRAP_CELLS = 1 << 17  # block sums (x, x² as one complex) per gathered batch: stays in cache
_STACKED_CELLS = 1 << 20  # bars of the series scored together: bounds their sums (16 MB each)
_MOVING_CHUNK = 4096  # windows per restarted cumulative sum in `_moving_sums`


def sharpe_ratio(returns: np.ndarray) -> float:
    """Per-period Sharpe ratio: mean / population standard deviation; 0 for a constant series."""
    x = np.asarray(returns, dtype=np.float64)
    if x.size == 0:
        return 0.0
    std = x.std()
    return float(x.mean() / std) if std > 0 else 0.0


def skewness(returns: np.ndarray) -> float:
    """Third standardised moment (population); 0 for a constant series."""
    z = _standardised(returns)
    return float(np.mean(z * z * z)) if z is not None else 0.0


def kurtosis(returns: np.ndarray) -> float:
    """Fourth standardised moment (population; 3 for a normal distribution); 3 for a constant series."""
    z = _standardised(returns)
    if z is None:
        return 3.0
    z *= z
    return float(np.mean(z * z))


def _standardised(returns: np.ndarray) -> np.ndarray | None:
    """(x − mean) / std as a new array; None for an empty or constant series.

    The moments multiply it out rather than call `** 3`, `** 4`: numpy's float power is a libm call
    per element, ten times slower on the stitched records of a search's every trial.
    """
    x = np.asarray(returns, dtype=np.float64)
    std = x.std() if x.size else 0.0
    return (x - x.mean()) / std if std > 0 else None


def series_statistics(returns: np.ndarray) -> tuple[float, float, float, float]:
    """(`sharpe_ratio`, `skewness`, `kurtosis`, `hac_standard_error`) of one series, bit for bit, from one
    mean, one standard deviation and one centring shared by all four."""
    x = np.asarray(returns, dtype=np.float64)
    n = x.size
    if n == 0:
        return 0.0, 0.0, 3.0, math.nan
    mean, std = x.mean(), x.std()
    if n < 2 or std == 0:  # a constant series (a flat policy): its Sharpe of 0 is known exactly
        return 0.0, 0.0, 3.0, math.nan if n < 2 else 0.0
    centred = x - mean
    hac = _hac_error(centred, mean, std, newey_west_lags(n))
    if not std > 0:  # NaN in the series: the figures each function gives it alone
        return 0.0, 0.0, 3.0, hac
    z = centred / std
    square = z * z
    return float(mean / std), float(np.mean(square * z)), float(np.mean(square * square)), hac


def lo_standard_error(sharpe: float, n_obs: int) -> float:
    """Lo (2002) standard error of a per-period Sharpe under i.i.d. returns: sqrt((1 + SR²/2) / T)."""
    return math.sqrt((1.0 + 0.5 * sharpe * sharpe) / n_obs) if n_obs > 0 else math.nan


def newey_west_lags(n_obs: int) -> int:
    """Newey–West's rule of thumb for the lag window: floor(4 (T / 100)^(2/9))."""
    return int(4.0 * (n_obs / 100.0) ** (2.0 / 9.0)) if n_obs > 0 else 0


def hac_standard_error(returns: np.ndarray, lags: int | None = None) -> float:
    """Lo (2002) GMM standard error of the per-period Sharpe, robust to autocorrelation and fat tails.

    Moments (x − μ, (x − μ)² − σ²), their long-run covariance by Newey–West (Bartlett weights,
    `lags` default `newey_west_lags(T)`), and the delta method on SR = μ / σ with gradient
    (1/σ, −μ / (2σ³)). For i.i.d. normal returns it tends to `lo_standard_error`.

    Computed in O(T) whatever the lag window: the quadratic form g'Ωg is the Bartlett-weighted sum
    of the autocovariances of the one series u = g · moments, and Σ_{|l|≤L} (L + 1 − |l|) Σ_t u_t
    u_{t+l} is the sum of squares of u's (zero-padded) moving sums over L + 1 bars.
    """
    x = np.asarray(returns, dtype=np.float64)
    n = x.size
    if n < 2:
        return math.nan
    std = x.std()
    if std == 0:
        return 0.0  # a constant series (a flat policy): its Sharpe of 0 is known exactly
    mean = x.mean()
    return _hac_error(x - mean, mean, std, newey_west_lags(n) if lags is None else min(lags, n - 1))


def _hac_error(centred: np.ndarray, mean: float, std: float, lags: int) -> float:
    """`hac_standard_error` of a series of T ≥ 2 bars with std > 0, from its centred values and moments."""
    n, var = centred.size, std * std
    influence = centred * (1.0 / std) - (centred * centred - var) * (mean / (2.0 * var * std))
    moving = _moving_sums(influence, lags + 1)
    # A ufunc sum, not a BLAS dot: a threaded BLAS call costs more than this series' whole arithmetic.
    quadratic = float(np.sum(moving * moving)) / (n * (lags + 1.0))
    return math.sqrt(max(quadratic, 0.0) / n)


def _moving_sums(x: np.ndarray, width: int) -> np.ndarray:
    """Sums of every `width` consecutive entries of x padded with width − 1 zeros on each side.

    By cumulative sums restarted every `_MOVING_CHUNK` windows, each from the window's own first
    entry: a running sum over the whole series would carry its rounding into every later window.
    """
    padded = np.concatenate([np.zeros(width - 1), x, np.zeros(width - 1)])
    count = padded.size - width + 1
    out = np.empty(count)
    for lo in range(0, count, _MOVING_CHUNK):
        hi = min(lo + _MOVING_CHUNK, count)
        sums = np.cumsum(padded[lo : hi + width - 1])
        out[lo:hi] = sums[width - 1 :]
        out[lo + 1 : hi] -= sums[: hi - lo - 1]
    return out


def default_block(n_obs: int) -> int:
    """Block length of the bootstrap when none is given: round(T^(1/3)), at least 1."""
    return max(1, round(n_obs ** (1.0 / 3.0)))


@functools.lru_cache(maxsize=2)  # a fold's window and the stitched record
def bootstrap_starts(n_obs: int, block: int, resamples: int, seed: int) -> np.ndarray:
    """The block starts of `resamples` circular block resamples of T = `n_obs` bars: (resamples, ceil(T /
    block)) uniform bars drawn by `numpy.random.default_rng(seed)`, read-only.

    Every series of one length scored with one seed resamples the same blocks (the model, the baselines,
    gross and net, and both sides of a paired test), so the draws are made once and kept (the last two
    shapes) rather than drawn again per series.
    """
    n_blocks = -(-n_obs // block)
    starts = np.random.default_rng(seed).integers(0, n_obs, size=(resamples, n_blocks))
    if n_obs <= np.iinfo(np.int32).max:
        starts = starts.astype(np.int32)  # the same bars in half the memory kept
    starts.flags.writeable = False
    return starts


def block_bootstrap_sharpes(
    returns: np.ndarray, *, resamples: int, block: int = 0, seed: int = 0
) -> np.ndarray:
    """Per-period Sharpe ratios of circular block-bootstrap resamples (Politis & Romano 1992).

    Each resample is ceil(T / block) blocks of `block` consecutive bars (wrapping around the end),
    starting at uniform random bars (`bootstrap_starts`), the last block cut so the resample has T bars.
    Only the sums of x and x² matter for a Sharpe ratio, so a block's contribution is a difference of
    cumulative sums, looked up per start, and no resample is materialised: O(resamples · T / block) work.
    """
    x = np.asarray(returns, dtype=np.float64)
    return stacked_bootstrap_sharpes(x.reshape(1, x.size), resamples=resamples, block=block, seed=seed)[0]


def stacked_bootstrap_sharpes(
    series: np.ndarray, *, resamples: int, block: int = 0, seed: int = 0
) -> np.ndarray:
    """`block_bootstrap_sharpes` of every row of `series` (S series of T bars each): (S, resamples).

    Every row resamples the same blocks (one length, one seed), so the rows are scored together: one
    draw of the block starts, one cumulative sum per moment for a group of rows (`_STACKED_CELLS` bounds
    its memory). Each row's figures are those of scoring it alone, bit for bit (the same sums in the same
    order).
    """
    xs = np.asarray(series, dtype=np.float64)
    if xs.ndim != 2:
        raise ValueError(f"series of shape {xs.shape}: one row per series, one column per bar")
    count, n = xs.shape
    out = np.zeros((count, max(resamples, 0)))
    if n < 2 or resamples < 1:
        return out
    block = min(block or default_block(n), n)
    means = xs.mean(axis=1)
    centred = xs - means[:, None]  # sums of squares of centred values lose nothing to a large mean
    moving = np.flatnonzero(centred.any(axis=1))  # a constant series: every resample's Sharpe is 0
    if moving.size == 0:
        return out
    starts = bootstrap_starts(n, block, resamples, seed)
    group = max(1, _STACKED_CELLS // (n + block))  # rows per group: bounds the memory of their sums
    for lo in range(0, moving.size, group):
        rows = moving[lo : lo + group]
        s1, s2 = _resampled_moments(centred[rows], block, starts)
        std = np.sqrt(np.maximum(s2 - s1 * s1, 0.0))
        out[rows] = np.divide(s1 + means[rows, None], std, out=np.zeros_like(std), where=std > 0)
    return out


def _resampled_moments(centred: np.ndarray, block: int, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean of x and of x² over each resample (`starts`' rows) of each row of `centred`: two (S, resamples).

    A block's sums of x and of x² sit side by side as one complex number, so one gather fetches both
    (half the lookups of two gathers); each moment is then summed over its own (strided) parts, the same
    pairwise sum in the same order as over a gather of that moment alone.
    """
    count, n = centred.shape
    resamples, n_blocks = starts.shape
    last = n - (n_blocks - 1) * block  # the cut last block's length
    extended = np.concatenate([centred, centred[:, :block]], axis=1)
    full = np.empty((count, n), dtype=np.complex128)  # the sums of the block starting at each bar
    cut = np.empty((count, n), dtype=np.complex128)  # the same for the cut last block
    for full_part, cut_part, values in (
        (full.real, cut.real, extended),
        (full.imag, cut.imag, extended * extended),
    ):
        cumulative = np.zeros((count, n + block + 1))
        np.cumsum(values, axis=1, out=cumulative[:, 1:])
        np.subtract(cumulative[:, block : block + n], cumulative[:, :n], out=full_part)
        np.subtract(cumulative[:, last : last + n], cumulative[:, :n], out=cut_part)
    s1, s2 = np.empty((count, resamples)), np.empty((count, resamples))
    batch = max(1, _BOOTSTRAP_CELLS // n_blocks)
    blocks = np.empty((min(batch, resamples), n_blocks), dtype=np.complex128)  # a buffer that stays in cache
    for i in range(count):  # one series at a time: its sums stay in cache over all resamples
        for lo in range(0, resamples, batch):
            rows = blocks[: min(batch, resamples - lo)]
            at = starts[lo : lo + len(rows)]
            np.take(full[i], at, out=rows, mode="clip")  # "raise" would buffer `out`; starts are < n
            rows[:, -1] = cut[i][at[:, -1]]
            s1[i, lo : lo + len(rows)] = rows.real.sum(axis=1) / n
            s2[i, lo : lo + len(rows)] = rows.imag.sum(axis=1) / n
    return s1, s2


def percentile_interval(sharpes: np.ndarray, level: float) -> tuple[float, float]:
    """The two-sided percentile interval at `level` of bootstrap draws; NaNs when there are none."""
    if sharpes.size == 0:
        return math.nan, math.nan
    low, high = np.quantile(sharpes, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(low), float(high)


def bootstrap_interval(
    returns: np.ndarray, *, level: float = 0.95, resamples: int = 1000, block: int = 0, seed: int = 0
) -> tuple[float, float]:
    """Percentile interval of the per-period Sharpe at `level` from a circular block bootstrap."""
    if resamples < 1:
        return math.nan, math.nan
    sharpes = block_bootstrap_sharpes(returns, resamples=resamples, block=block, seed=seed)
    return percentile_interval(sharpes, level)


def probabilistic_sharpe_ratio(
    sharpe: float, benchmark: float, n_obs: int, skew: float = 0.0, kurt: float = 3.0
) -> float:
    """PSR (Bailey & López de Prado 2012): P(true SR > benchmark), per-period SRs, kurtosis not excess.

    PSR = Φ((SR − SR*) √(T − 1) / √(1 − γ₃ SR + (γ₄ − 1) / 4 · SR²)); NaN when the variance term
    is not positive (extreme skew) or T < 2.
    """
    var_term = 1.0 - skew * sharpe + 0.25 * (kurt - 1.0) * sharpe * sharpe
    if n_obs < 2 or not var_term > 0:
        return math.nan
    return _NORMAL.cdf((sharpe - benchmark) * math.sqrt(n_obs - 1) / math.sqrt(var_term))


def expected_max_sharpe(n_trials: int, sharpe_variance: float) -> float:
    """Expected largest of `n_trials` Sharpe ratios with true SR 0 and this variance (Euler–Mascheroni form).

    E[max] ≈ √V · ((1 − γ) Φ⁻¹(1 − 1/N) + γ Φ⁻¹(1 − 1/(N e))); 0 for a single trial (no selection).
    """
    if n_trials < 1:
        raise ValueError(f"n_trials {n_trials}: must be at least 1")
    if n_trials == 1:
        return 0.0
    spread = (1.0 - EULER_GAMMA) * _NORMAL.inv_cdf(1.0 - 1.0 / n_trials)
    spread += EULER_GAMMA * _NORMAL.inv_cdf(1.0 - 1.0 / (n_trials * math.e))
    return math.sqrt(max(sharpe_variance, 0.0)) * spread


def deflated_sharpe_ratio(
    best_sharpe: float,
    n_trials: int,
    sharpe_variance: float,
    n_obs: int,
    skew: float = 0.0,
    kurtosis: float = 3.0,
) -> float:
    """DSR (Bailey & López de Prado 2014): the PSR of the best trial against the expected max of N null trials.

    All Sharpe ratios per period (not annualised): `best_sharpe` is the selected trial's,
    `sharpe_variance` the variance of the N trials' Sharpe ratios; `n_obs`, `skew` and `kurtosis`
    (not excess) describe the selected trial's returns.
    """
    threshold = expected_max_sharpe(n_trials, sharpe_variance)
    return probabilistic_sharpe_ratio(best_sharpe, threshold, n_obs, skew, kurtosis)
