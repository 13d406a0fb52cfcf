"""`series.stacked_figures` on a CUDA device: every P&L series of a window scored at once, in float64.

The host scores a 185,000-bar fold window's 18 series (9 policies, gross and net) in about 0.5 s, most of
it the bootstrap's 58 million block lookups; on the device that is a few kernels. The block starts are the
host's own draws (`sharpe.bootstrap_starts`, uploaded once per window length), so every figure is the
host's to 1e-9: the sums run in torch's order rather than numpy's, and float64 keeps that in the 13th digit.
One upload of the stacked series and their masks, one read of every figure.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import torch.nn.functional as F

from foxhunt.evaluate import sharpe as sr
from foxhunt.evaluate.metrics import SeriesFigures

_GATHER_CELLS = 1 << 25  # block sums gathered at once (256 MB of float64): bounds the bootstrap's memory


@functools.lru_cache(maxsize=2)  # a fold's window length and the stitched record's, as on the host
def _device_starts(n_obs: int, block: int, resamples: int, seed: int, device: str) -> torch.Tensor:
    """`sharpe.bootstrap_starts` on `device`, as int64 indices (copied as drawn, int32 below 2³¹ bars: half
    the bytes to move, widened there)."""
    starts = sr.bootstrap_starts(n_obs, block, resamples, seed)
    return torch.from_numpy(starts.copy()).to(device).to(torch.int64)  # a copy: the draws are read-only


def device_figures(
    series: np.ndarray, in_market: np.ndarray, *, resamples: int, block: int, seed: int, device: str
) -> tuple[list[SeriesFigures], np.ndarray] | None:
    """`series.stacked_figures` of `series` (S, T ≥ 2) on `device`; None when a series is not finite."""
    n = series.shape[1]
    block = min(block or sr.default_block(n), n)
    # The block starts first: a copy to the device waits for the device's queue, empty at this point.
    starts = _device_starts(n, block, resamples, seed, device) if resamples > 0 else None
    x = torch.from_numpy(np.ascontiguousarray(series, dtype=np.float64)).to(device)
    market = torch.from_numpy(np.ascontiguousarray(in_market, dtype=bool)).to(device)
    mean = x.mean(dim=1, keepdim=True)
    centred = x - mean
    var = (centred * centred).mean(dim=1, keepdim=True)
    std = var.sqrt()
    safe_std = torch.where(std > 0, std, 1.0)  # a constant series: the host's special case, below
    z = centred / safe_std
    square = z * z
    lags = sr.newey_west_lags(n)
    influence = z - (centred * centred - var) * (mean / (2.0 * safe_std * safe_std * safe_std))
    # Moving sums over lags + 1 bars of the zero-padded influence, each summed directly (no running sum).
    moving = F.pad(influence, (lags, lags)).unfold(1, lags + 1, 1).sum(dim=2)
    quadratic = (moving * moving).sum(dim=1) / (n * (lags + 1.0))
    equity = x.cumsum(dim=1)
    peak = torch.cummax(equity, dim=1).values.clamp(min=0.0)  # wealth starts at 0 before the first bar
    market_bars = market.sum(dim=1)
    columns = [
        (mean / safe_std).squeeze(1),
        (square * z).mean(dim=1),
        (square * square).mean(dim=1),
        (quadratic.clamp(min=0.0) / n).sqrt(),
        std.squeeze(1),
        (x == x[:, :1]).all(dim=1).double(),
        x.sum(dim=1),
        -torch.expm1(-(peak - equity).amax(dim=1)),
        ((x > 0) & market).sum(dim=1).double() / market_bars.clamp(min=1).double(),  # int / int: float32
        market_bars.double(),
        torch.isfinite(x).all(dim=1).double(),
    ]
    draws = _bootstrap(centred, mean, block, starts) if starts is not None else None
    table = torch.stack(columns, dim=1)
    both = table if draws is None else torch.cat([table, draws], dim=1)
    host = both.cpu().numpy()  # the one read
    table_host, draws_host = host[:, : table.shape[1]], host[:, table.shape[1] :]
    if not table_host[:, -1].all():
        return None
    figures = [_figures(row, n) for row in table_host]
    return figures, np.ascontiguousarray(draws_host)


def _figures(row: np.ndarray, n: int) -> SeriesFigures:
    """A series' `SeriesFigures` from its row of the device's table, with the host's special cases."""
    sharpe, skew, kurt, hac, std, constant, log_return, drawdown, hit_rate, market_bars, _ = row.tolist()
    if std == 0:  # a constant series (a flat policy): its Sharpe of 0 is known exactly
        sharpe, skew, kurt, hac = 0.0, 0.0, 3.0, 0.0
    return SeriesFigures(
        sharpe=sharpe,
        skewness=skew,
        kurtosis=kurt,
        hac_error=hac,
        constant=bool(constant),
        log_return=log_return,
        max_drawdown=drawdown,
        hit_rate=hit_rate if market_bars > 0 else 0.0,
    )


def _bootstrap(centred: torch.Tensor, mean: torch.Tensor, block: int, starts: torch.Tensor) -> torch.Tensor:
    """`sharpe.stacked_bootstrap_sharpes` of the series (given centred, and their means) over the block
    starts `starts` of blocks of `block` bars: (S, resamples)."""
    count, n = centred.shape
    n_blocks = starts.shape[1]
    last = n - (n_blocks - 1) * block  # the cut last block's length
    extended = torch.cat([centred, centred[:, :block]], dim=1)
    sums = []  # per moment: (full blocks' sums at each start, the cut last block's)
    for values in (extended, extended * extended):
        cumulative = F.pad(values.cumsum(dim=1), (1, 0))
        sums.append(
            (
                cumulative[:, block : block + n] - cumulative[:, :n],
                cumulative[:, last : last + n] - cumulative[:, :n],
            )
        )
    inner, tail = starts[:, :-1], starts[:, -1]
    moments = []
    group = max(1, _GATHER_CELLS // starts.numel())  # series per gather: bounds its memory
    for full, cut in sums:
        moment = torch.cat([full[lo : lo + group][:, inner].sum(dim=2) for lo in range(0, count, group)])
        moments.append((moment + cut[:, tail]) / n)
    s1, s2 = moments
    std = (s2 - s1 * s1).clamp(min=0.0).sqrt()
    return torch.where(std > 0, (s1 + mean) / torch.where(std > 0, std, 1.0), 0.0)
