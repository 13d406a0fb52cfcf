"""`seeds.png` (`--seeds K`): every seed's stitched net wealth on the same bars, and the band they span.

One thin line per seed, the run's own seed (member 0) bold, the band between the lowest and the highest
seed's wealth at each bar shaded and edged, buy-and-hold dashed beside them, and with three seeds or more
their majority's wealth dotted (the side more than half hold, else flat); the title gives the seeds'
stitched net Sharpe median and IQR (`evaluate.seed_spread`), and the majority's. A lucky seed shows as a
line apart from the band's bulk; a seed that never traded says so in the legend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from foxhunt.evaluate.plot import (
    LINE_COLORS,
    agg_figure,
    date_axis,
    envelope,
    percent_label,
    pixel_columns,
    png_bytes,
)

if TYPE_CHECKING:
    from foxhunt.evaluate.evaluation import RunEvaluation
    from foxhunt.train.fold_selection import FoldSelection

BAND_COLOR = "#1f3b73"


@dataclass(frozen=True)
class SeedsPicture:
    """The seeds' stitched records on common bars: per seed its net log P&L (the run's seed first)."""

    timestamp: np.ndarray  # int64 ns UTC, one per bar
    seeds: Sequence[int]  # the run's seed first
    log_pnl: Mapping[int, np.ndarray]  # seed → per-bar net log P&L
    hold_log_pnl: np.ndarray | None = None  # buy-and-hold's on the same bars
    flat: Mapping[int, str] | None = None  # seed → why it never traded, in words ("" or absent: it traded)
    majority_log_pnl: np.ndarray | None = None  # the seeds' majority's on the same bars (K ≥ 3)


def seeds_picture(
    evaluations: Mapping[int, RunEvaluation],
    selections: Mapping[int, Sequence[FoldSelection | None]] | None = None,
    majority: RunEvaluation | None = None,
) -> SeedsPicture:
    """The seeds' stitched records (seed → its run evaluation, the run's own seed first), net of costs;
    `selections`: per seed its folds' tail selections, which say why a seed that never traded is flat;
    `majority`: the stitched evaluation of the seeds' majority, when scored."""
    from foxhunt.evaluate.evaluation import BUY_AND_HOLD, MODEL
    from foxhunt.evaluate.plot import flat_words

    chosen = selections or {}
    seeds = list(evaluations)
    first = evaluations[seeds[0]]
    return SeedsPicture(
        first.records[MODEL].timestamp,
        seeds,
        {s: e.records[MODEL].pnl(e.cost_per_unit, e.execution) for s, e in evaluations.items()},
        first.records[BUY_AND_HOLD].pnl(first.cost_per_unit, first.execution),
        {
            s: flat_words(e.stitched.policies[MODEL].net.exposure, chosen.get(s, ()))
            for s, e in evaluations.items()
        },
        None if majority is None else majority.records[MODEL].pnl(majority.cost_per_unit, majority.execution),
    )


def seed_wealth(picture: SeedsPicture) -> np.ndarray:
    """Net wealth per seed (rows, in `picture.seeds` order) and bar (columns)."""
    return np.exp(np.cumsum(np.stack([picture.log_pnl[s] for s in picture.seeds]), axis=1))


def seeds_figure(picture: SeedsPicture, spread: Mapping | None, title: str):
    """The seeds' wealth lines, the min–max band, buy-and-hold; `spread`: `seed_spread`'s dict, for the title."""
    from matplotlib.ticker import FuncFormatter

    fig = agg_figure(figsize=(12, 6))
    ax = fig.subplots(1, 1)
    stamps = np.asarray(picture.timestamp, dtype=np.int64)
    wealth = seed_wealth(picture)
    hold = None if picture.hold_log_pnl is None else np.exp(np.cumsum(picture.hold_log_pnl))
    vote = None if picture.majority_log_pnl is None else np.exp(np.cumsum(picture.majority_log_pnl))
    drawn = [
        wealth.min(axis=0),
        wealth.max(axis=0),
        *wealth,
        *(line for line in (hold, vote) if line is not None),
    ]
    # One set of bars for every line and the band, which keeps each line's extremes in every pixel column.
    idx = np.unique(np.concatenate([envelope(stamps, line, pixel_columns(fig)) for line in drawn]))
    dates, low, high = date_axis(stamps[idx]), drawn[0][idx], drawn[1][idx]
    ax.fill_between(dates, low, high, color=BAND_COLOR, alpha=0.15, linewidth=0)
    ax.plot(dates, low, color=BAND_COLOR, linewidth=0.6, alpha=0.6, gid="band low",
            label=f"band: lowest to highest of {len(picture.seeds)} seeds")  # fmt: skip
    ax.plot(dates, high, color=BAND_COLOR, linewidth=0.6, alpha=0.6, gid="band high")
    flat = picture.flat or {}
    for k, seed in enumerate(picture.seeds):
        words = f" ({flat[seed]})" if flat.get(seed) else ""
        first = k == 0
        ax.plot(dates, wealth[k][idx], color=LINE_COLORS[0] if first else LINE_COLORS[(k % 3) + 2],
                linewidth=2.2 if first else 0.9, label=f"seed {seed}{' (the run)' if first else ''}{words}",
                gid=f"seed {seed}", zorder=3 if first else 2)  # fmt: skip
    if hold is not None:
        ax.plot(dates, hold[idx], "--", color=LINE_COLORS[1], linewidth=1.0, label="buy and hold",
                gid="buy and hold")  # fmt: skip
    if vote is not None:
        ax.plot(dates, vote[idx], ":", color="black", linewidth=1.6, zorder=4, gid="majority",
                label=f"majority of {len(picture.seeds)} seeds (the side more than half hold)")  # fmt: skip
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(percent_label))
    ax.yaxis.set_minor_formatter(FuncFormatter(percent_label))
    ax.set_ylabel("cumulative return, net of costs (log scale)")
    ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(f"{title}\n{spread_title(spread, flat)}" if spread else title)
    fig.tight_layout()
    return fig


def spread_title(spread: Mapping, flat: Mapping[int, str] | None = None) -> str:
    """The seeds' spread in one line: median and IQR of the stitched net Sharpe, each seed's (a seed that
    never traded as "flat", not as a Sharpe of 0.00)."""
    flat = flat or {}
    if spread["seeds"] and all(flat.get(int(s)) for s in spread["seeds"]):
        return f"{len(spread['seeds'])} seeds, every one {flat[int(spread['seeds'][0])]} in any fold"
    each = ", ".join(f"{s} flat" if flat.get(int(s)) else f"{s} {v:.2f}" for s, v in spread["sharpe"].items())
    vote = f"; their majority {spread['majority']['sharpe']:.2f}" if spread.get("majority") else ""
    return (
        f"{len(spread['seeds'])} seeds, stitched net Sharpe median {spread['median']:.2f}, "
        f"IQR {spread['iqr']:.2f} ({spread['q1']:.2f} to {spread['q3']:.2f}); by seed: {each}{vote}"
    )


def render_seeds_png(picture: SeedsPicture, spread: Mapping | None, title: str) -> bytes:
    """PNG bytes of `seeds_figure`."""
    return png_bytes(seeds_figure(picture, spread, title))
