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

import math
from statistics import NormalDist

import numpy as np

EULER_GAMMA = 0.5772156649015329
_NORMAL = NormalDist()
_BOOTSTRAP_CELLS = 1 << 22  # block starts drawn per batch of resamples: bounds the bootstrap's memory


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
    """
    x = np.asarray(returns, dtype=np.float64)
    n = x.size
    if n < 2:
        return math.nan
    std = x.std()
    if std == 0:
        return 0.0  # a constant series (a flat policy): its Sharpe of 0 is known exactly
    mean, var = x.mean(), std * std
    centred = x - mean
    moments = (centred, centred * centred - var)
    lags = newey_west_lags(n) if lags is None else min(lags, n - 1)

    def autocovariance(lag: int) -> np.ndarray:
        # Dot products of contiguous 1-D slices: a 2 × T @ T × 2 product per lag is several times slower.
        return np.array([[np.dot(a[lag:], b[: n - lag]) for b in moments] for a in moments]) / n

    cov = autocovariance(0)
    for lag in range(1, lags + 1):
        gamma = autocovariance(lag)
        cov += (1.0 - lag / (lags + 1.0)) * (gamma + gamma.T)
    grad = np.array([1.0 / std, -mean / (2.0 * var * std)])
    return math.sqrt(max(float(grad @ cov @ grad), 0.0) / n)


def default_block(n_obs: int) -> int:
    """Block length of the bootstrap when none is given: round(T^(1/3)), at least 1."""
    return max(1, round(n_obs ** (1.0 / 3.0)))


def block_bootstrap_sharpes(
    returns: np.ndarray, *, resamples: int, block: int = 0, seed: int = 0
) -> np.ndarray:
    """Per-period Sharpe ratios of circular block-bootstrap resamples (Politis & Romano 1992).

    Each resample is ceil(T / block) blocks of `block` consecutive bars (wrapping around the end),
    starting at uniform random bars, the last block cut so the resample has T bars. Only the
    sums of x and x² matter for a Sharpe ratio, so a block's contribution is a difference of
    cumulative sums and no resample is materialised: O(resamples · T / block) work.
    """
    x = np.asarray(returns, dtype=np.float64)
    n = x.size
    if n < 2:
        return np.zeros(resamples)
    block = min(block or default_block(n), n)
    mean = x.mean()
    centred = x - mean  # sums of squares of centred values lose nothing to a large mean
    extended = np.concatenate([centred, centred[:block]])
    sum1 = np.concatenate([[0.0], np.cumsum(extended)])
    sum2 = np.concatenate([[0.0], np.cumsum(extended * extended)])
    n_blocks = -(-n // block)
    lengths = np.full(n_blocks, block)
    lengths[-1] = n - (n_blocks - 1) * block
    rng = np.random.default_rng(seed)
    out = np.empty(resamples)
    batch = max(1, _BOOTSTRAP_CELLS // n_blocks)
    for lo in range(0, resamples, batch):
        hi = min(lo + batch, resamples)
        starts = rng.integers(0, n, size=(hi - lo, n_blocks))
        s1 = (sum1[starts + lengths] - sum1[starts]).sum(axis=1) / n
        s2 = (sum2[starts + lengths] - sum2[starts]).sum(axis=1) / n
        std = np.sqrt(np.maximum(s2 - s1 * s1, 0.0))
        out[lo:hi] = np.divide(s1 + mean, std, out=np.zeros(hi - lo), where=std > 0)
    return out


def bootstrap_interval(
    returns: np.ndarray, *, level: float = 0.95, resamples: int = 1000, block: int = 0, seed: int = 0
) -> tuple[float, float]:
    """Percentile interval of the per-period Sharpe at `level` from a circular block bootstrap."""
    if resamples < 1:
        return math.nan, math.nan
    sharpes = block_bootstrap_sharpes(returns, resamples=resamples, block=block, seed=seed)
    low, high = np.quantile(sharpes, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(low), float(high)


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
