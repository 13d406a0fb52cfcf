"""The sample's planted news process laid over real bars: a positive control on a user's own data.

`foxhunt precompute --bars FILE --overlay-drift X` asks "would foxhunt find an edge of this size in my
bars, with my costs?". The news process is the one `foxhunt.data.sample` plants in the sample bars:

* each row is a news bar with probability `news_rate`, with a direction s = ±1 (drawn from `seed`);
* a news bar's 1-bar log return gains `s · news_jump · sigma` (not predictable: it is the news) and
  its volume is multiplied by `NEWS_VOLUME_FACTOR`;
* each of the `NEWS_BARS` rows after a news bar gains `s · drift` (overlapping news add up), with

      drift = drift_multiple · SAMPLE_NEWS_DRIFT · sigma / SAMPLE_SIGMA.

The scaling rule: the drift is planted at the same size relative to the bars' own noise as the
sample's drift is to the sample's noise, so 1× is the sample's signal-to-noise (0.3 bp a bar on 4 bp
of noise) whatever the instrument's volatility; costs are the user's and are not scaled. `sigma` is the
bars' robust per-bar volatility unless given (`robust_sigma`). `drift_multiple=0` is the do-no-harm
twin: the same news bars, jumps and volume, nothing predictable.

Prices: every price of bar t (open, high, low, close) is multiplied by exp(offset[t]), where offset is
the running sum of what was added to the 1-bar log returns. A bar's own shape (open to close, its
range) is untouched, so the OHLC invariants hold as they did; the news move shows as a gap from the
previous close. Timestamps are unchanged. Rows count as bars: the drift runs over the next
`NEWS_BARS` rows, across overnight and weekend gaps, as the features and targets count them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import numpy as np

from foxhunt.data.bars import Bars
from foxhunt.data.sample import (
    NEWS_BARS,
    NEWS_JUMP_SIGMAS,
    NEWS_VOLUME_FACTOR,
    SAMPLE_NEWS_DRIFT,
    SAMPLE_NEWS_RATE,
    SAMPLE_SIGMA,
)

# robust_sigma clips each 1-bar return at this quantile of |r|: the rarest 1% of bars (weekend gaps,
# real news) do not set the scale, and Gaussian noise's estimate stays within 1% of its std.
SIGMA_CLIP_QUANTILE = 0.99


@dataclass(frozen=True)
class Overlay:
    """Overlaid bars and what was planted in them."""

    bars: Bars
    news: np.ndarray  # bool per row: the news bars
    direction: np.ndarray  # ±1 on news bars, 0 elsewhere
    added: np.ndarray  # what each row's 1-bar log return gained: jump + drift
    expected: np.ndarray  # the knowable part of `added`: the drift, known one bar ahead
    sigma: float  # the per-bar volatility the jump and drift are scaled by
    drift: float  # the drift per bar of one news bar's direction, log-return units


def robust_sigma(bars: Bars) -> float:
    """The bars' per-bar volatility: the root mean square of the 1-bar log close returns, each clipped to
    ±(their 99th percentile of |r|).

    Not the median absolute return: on exchange minute bars most returns are exactly zero (70% of the
    YNDX slice's), so the median says no noise at all; zeros count here as the quiet bars they are.
    """
    returns = np.diff(np.log(bars.close))
    if returns.size == 0:
        raise ValueError("robust_sigma needs at least two bars")
    clip = float(np.quantile(np.abs(returns), SIGMA_CLIP_QUANTILE))
    return float(np.sqrt(np.mean(np.clip(returns, -clip, clip) ** 2)))


def overlay_key(
    drift_multiple: float, seed: int, news_rate: float, news_jump: float, sigma: float | None
) -> str:
    """The overlay's settings as text: in the overlaid bars' source and content hash."""
    shown = "auto" if sigma is None else repr(sigma)
    return f"drift={drift_multiple!r}x,seed={seed},rate={news_rate!r},jump={news_jump!r},sigma={shown}"


def plant_overlay(
    bars: Bars,
    *,
    drift_multiple: float,
    seed: int,
    news_rate: float = SAMPLE_NEWS_RATE,
    news_jump: float = NEWS_JUMP_SIGMAS,
    sigma: float | None = None,
) -> Overlay:
    """`bars` with the sample's news process laid over them (the module docstring says how; `.bars`), and
    what was planted in them (news bars, directions, the knowable drift). The overlaid bars' source and
    content hash name the overlay, so their fxcache never passes for the plain bars'."""
    if not np.isfinite(drift_multiple) or drift_multiple < 0:
        raise ValueError(f"drift_multiple {drift_multiple!r}: expected a finite number ≥ 0")
    if not 0.0 <= news_rate <= 1.0:
        raise ValueError(f"news_rate {news_rate!r}: expected a share of bars in [0, 1]")
    scale = robust_sigma(bars) if sigma is None else float(sigma)
    n = len(bars)
    rng = np.random.default_rng(seed)
    # The same draws for every drift multiple: the driftless twin has the very same news.
    news = rng.random(n) < news_rate
    direction = np.where(rng.random(n) < 0.5, -1.0, 1.0) * news
    drift = drift_multiple * SAMPLE_NEWS_DRIFT * scale / SAMPLE_SIGMA
    # expected[t] sums the directions of the news bars t − NEWS_BARS .. t − 1, as the sample's drift.
    expected = np.zeros(n)
    expected[1:] = np.convolve(direction, np.ones(NEWS_BARS))[: n - 1] * drift
    added = expected + direction * news_jump * scale
    factor = np.exp(np.cumsum(added))
    key = overlay_key(drift_multiple, seed, news_rate, news_jump, sigma)
    overlaid = replace(
        bars,
        open=bars.open * factor,
        high=bars.high * factor,
        low=bars.low * factor,
        close=bars.close * factor,
        volume=np.where(news, bars.volume * NEWS_VOLUME_FACTOR, bars.volume),
        source=f"{bars.source} + overlay({key})",
        content_hash=hashlib.sha256(f"overlay:{bars.content_hash}:{key}".encode()).hexdigest(),
    )
    return Overlay(overlaid, news, direction, added, expected, scale, drift)
