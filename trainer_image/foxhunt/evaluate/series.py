"""The figures of a window's P&L series, scored together: on the host (numpy, the reference) or on a CUDA
device (`device_series`, torch), which the run's scoring picks by where its data lives.

Every P&L series of one window (each policy's gross and net) is scored here at once: its per-period Sharpe,
skewness, kurtosis, HAC standard error, log return, drawdown and hit rate (`SeriesFigures`), and its block
bootstrap's Sharpe ratios. `evaluation.record_metrics` turns them into a record's `Metrics`. The host's
figures are those of `sharpe.series_statistics` and `sharpe.stacked_bootstrap_sharpes` bit for bit; the
device's agree with them to 1e-9 (float64 sums in another order), `tests/evaluate/test_device_series.py`.
"""

from __future__ import annotations

import logging

import numpy as np

from foxhunt.evaluate import sharpe as sr
from foxhunt.evaluate.metrics import SeriesFigures  # its own module: device_series builds them too

log = logging.getLogger(__name__)


def series_figures(pnl: np.ndarray, in_market: np.ndarray) -> SeriesFigures:
    """`SeriesFigures` of one P&L series on the host; `in_market`: the bars where the position is not flat."""
    sharpe, skew, kurt, hac = sr.series_statistics(pnl)
    n = pnl.size
    equity = np.cumsum(pnl)
    peak = np.maximum.accumulate(np.concatenate([[0.0], equity]))[1:]
    return SeriesFigures(
        sharpe=sharpe,
        skewness=skew,
        kurtosis=kurt,
        hac_error=hac,
        constant=n > 0 and bool(np.all(pnl == pnl[0])),
        log_return=float(pnl.sum()),
        max_drawdown=float(-np.expm1(-(peak - equity).max())) if n else 0.0,
        hit_rate=float((pnl[in_market] > 0).mean()) if in_market.any() else 0.0,
    )


def draw_blocks(n_obs: int, *, resamples: int, block: int, seed: int) -> None:
    """Draw the block starts that the bootstrap of `n_obs`-bar series will resample (`sharpe.bootstrap_starts`
    keeps them), ahead of scoring: a GPU run's host draws them while the device still works."""
    if n_obs >= 2 and resamples > 0:
        sr.bootstrap_starts(n_obs, min(block or sr.default_block(n_obs), n_obs), resamples, seed)


def stacked_figures(
    series: np.ndarray,
    in_market: np.ndarray,
    *,
    resamples: int,
    block: int,
    seed: int,
    device: str | None = None,
) -> tuple[list[SeriesFigures], np.ndarray]:
    """`series_figures` of each row of `series` (S series of one length, `in_market` their masks) and their
    bootstrap Sharpe ratios (S, resamples); on the host (numpy), or with torch on `device` when one is given
    (a run on a GPU gives its CUDA device; "cpu" runs the same torch code on the host, its CPU twin)."""
    if device is not None and series.shape[1] >= 2:
        from foxhunt.evaluate.device_series import device_figures  # torch: only where the device scores

        try:
            scored = device_figures(
                series, in_market, resamples=resamples, block=block, seed=seed, device=device
            )
        except RuntimeError as error:  # out of device memory, say: the host gives the same figures, slower
            log.warning("scoring on %s failed (%s); scoring this window on the host", device, error)
            scored = None
        if scored is not None:  # None: a series is not finite, which the host's special cases handle
            return scored
    figures = [series_figures(pnl, mask) for pnl, mask in zip(series, in_market, strict=True)]
    if resamples < 1:  # a search scores without resamples: nothing to draw
        return figures, np.zeros((len(series), 0))
    return figures, sr.stacked_bootstrap_sharpes(series, resamples=resamples, block=block, seed=seed)
