"""`positions.png`: what the model held, bar by bar, and what it earned, over the stitched record's dates.

Top: net wealth of the model's stitched out-of-sample record beside buy-and-hold's on the same bars
(log scale, as cumulative return; a long record drawn as its envelope, `plot.envelope`). Bottom: the
position held (−1 short, 0 flat, 1 long). A record longer than MAX_POINTS bars is drawn per bucket of
bars: the mean position (the net exposure) as a line, and the range from the bucket's lowest to its
highest position shaded. Folds whose model never traded are shaded and say why in words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from foxhunt.evaluate.plot import (
    LINE_COLORS,
    FoldSharpe,
    agg_figure,
    date_axis,
    envelope,
    fold_sharpe,
    percent_label,
    pixel_columns,
    png_bytes,
)

if TYPE_CHECKING:
    from foxhunt.evaluate.evaluation import RunEvaluation
    from foxhunt.train.fold_selection import FoldSelection

MAX_POINTS = 2000  # buckets of the position panel: a longer record is drawn per bucket of bars


@dataclass(frozen=True)
class PositionsPicture:
    """The stitched record's bars: timestamps, the model's positions, its and buy-and-hold's net log P&L."""

    timestamp: np.ndarray  # int64 ns UTC, one per bar
    positions: np.ndarray  # −1/0/1, one per bar
    model_log_pnl: np.ndarray
    hold_log_pnl: np.ndarray
    folds: Sequence[FoldSharpe]  # each fold's window, with its flat words


def positions_picture(
    run: RunEvaluation, selections: Mapping[int, FoldSelection | None] | None = None
) -> PositionsPicture:
    """The stitched record's positions and net P&L (model, buy-and-hold) and each fold's flat words."""
    from foxhunt.evaluate.evaluation import BUY_AND_HOLD, MODEL

    chosen = selections or {}
    model = run.records[MODEL]
    return PositionsPicture(
        model.timestamp,
        model.positions,
        model.pnl(run.cost_per_unit, run.execution),
        run.records[BUY_AND_HOLD].pnl(run.cost_per_unit, run.execution),
        [fold_sharpe(w, [chosen.get(w.fold)]) for w in run.folds],
    )


def bucket_positions(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(first bar, mean, lowest, highest position) per bucket: each bar alone up to MAX_POINTS bars."""
    values = np.asarray(positions, dtype=np.float64)
    n = values.size
    starts = (
        np.arange(n) if n <= MAX_POINTS else np.linspace(0, n, MAX_POINTS, endpoint=False).astype(np.int64)
    )
    counts = np.diff(np.append(starts, values.size))
    mean = np.add.reduceat(values, starts) / counts
    return starts, mean, np.minimum.reduceat(values, starts), np.maximum.reduceat(values, starts)


def _draw_wealth(ax, dates: np.ndarray, picture: PositionsPicture) -> None:
    from matplotlib.ticker import FuncFormatter

    stamps, columns = np.asarray(picture.timestamp, dtype=np.int64), pixel_columns(ax.figure)
    for label, pnl, color, width in (("model", picture.model_log_pnl, LINE_COLORS[0], 1.8),
                                     ("buy and hold", picture.hold_log_pnl, LINE_COLORS[1], 1.1)):  # fmt: skip
        log_wealth = np.cumsum(pnl)
        idx = envelope(stamps, log_wealth, columns)
        ax.plot(dates[idx], np.exp(log_wealth[idx]), color=color, linewidth=width, label=label,
                gid=f"{label} wealth")  # fmt: skip
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(percent_label))
    ax.yaxis.set_minor_formatter(FuncFormatter(percent_label))
    ax.set_ylabel("cumulative return, net of costs")
    ax.set_title("stitched out-of-sample record: net wealth")
    ax.legend(fontsize=8, loc="upper left")


def _draw_positions(ax, dates: np.ndarray, positions: np.ndarray) -> None:
    starts, mean, low, high = bucket_positions(positions)
    if starts.size == len(positions):  # every bar drawn: the position itself, held until the next bar
        ax.step(dates, positions, where="post", color=LINE_COLORS[0], linewidth=0.8, gid="positions")
    else:
        ax.fill_between(dates[starts], low, high, step="post", color=LINE_COLORS[0], alpha=0.15,
                        linewidth=0, label="range within the bucket", gid="position range")  # fmt: skip
        ax.step(dates[starts], mean, where="post", color=LINE_COLORS[0], linewidth=0.8,
                label=f"mean position per bucket of {len(positions) // MAX_POINTS}+ bars", gid="positions")  # fmt: skip
        ax.legend(fontsize=7, loc="lower right")
    ax.set_ylim(-1.25, 1.25)
    ax.set_yticks([-1, 0, 1], ["short", "flat", "long"])
    ax.set_ylabel("position")
    ax.set_title("position held")


def positions_figure(picture: PositionsPicture, title: str):
    """Net wealth (model and buy-and-hold) over the dates, and the positions beneath; flat folds in words."""
    fig = agg_figure(figsize=(12, 7))
    ax_w, ax_p = fig.subplots(2, 1, height_ratios=(3, 1.6), sharex=True)
    dates = date_axis(picture.timestamp)
    _draw_wealth(ax_w, dates, picture)
    _draw_positions(ax_p, dates, np.asarray(picture.positions, dtype=np.float64))
    for fold in picture.folds:
        start, end = date_axis(fold.start_ns), date_axis(fold.end_ns)
        if fold.flat:
            for ax in (ax_w, ax_p):
                ax.axvspan(start, end, color="#000000", alpha=0.06, linewidth=0)
            ax_p.text(date_axis((fold.start_ns + fold.end_ns) // 2), 0.6, f"fold {fold.fold}\n{fold.flat}",
                      ha="center", fontsize=7, style="italic", gid=f"flat fold {fold.fold}")  # fmt: skip
        ax_p.axvline(start, color="grey", linewidth=0.5)
    fig.suptitle(title)
    fig.subplots_adjust(
        left=0.08, right=0.98, top=0.87, bottom=0.06, hspace=0.25
    )  # cheaper than tight_layout
    return fig


def render_positions_png(picture: PositionsPicture, title: str) -> bytes:
    """PNG bytes of `positions_figure`."""
    return png_bytes(positions_figure(picture, title))
