"""The run's pictures: the stitched out-of-sample record for a quant, and where the time went.

`run.png`: wealth of the model's stitched record against buy-and-hold and the best other
baseline on a date axis (log scale), its drawdown, and each fold's net Sharpe with its bootstrap
interval beside the fold's best baseline. `timings.png`: phase seconds per fold. Inputs are
arrays and small dataclasses (`run_picture` builds them from an evaluation); matplotlib is
imported only when a picture is drawn. Every picture of a long record draws its lines through
`envelope` (what each pixel column shows) and is saved by `png_bytes` (drawn once).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from foxhunt.evaluate.evaluation import RunEvaluation, WindowEvaluation
    from foxhunt.train.fold_selection import FoldSelection

PHASE_COLORS = {
    "reset": "#4e79a7",
    "normalize": "#f28e2b",
    "collect": "#59a14f",
    "train": "#e15759",
    "validate": "#76b7b2",
    "checkpoint": "#edc948",
}
LINE_COLORS = ("#1f3b73", "#7f7f7f", "#d4802a", "#59a14f", "#b07aa1")
DPI = 100  # every picture's pixels per inch, drawn and saved


@dataclass(frozen=True)
class EquityLine:
    """One policy's per-bar net log P&L over the picture's bars."""

    label: str
    log_pnl: np.ndarray


@dataclass(frozen=True)
class FoldSharpe:
    """A window's net annualised Sharpe with its interval, beside its best baseline's."""

    fold: int
    start_ns: int
    end_ns: int
    sharpe: float
    low: float
    high: float
    baseline_sharpe: float = math.nan
    baseline: str = ""
    flat: str = ""  # why the model never traded the window, in words ("" when it traded)


@dataclass(frozen=True)
class RunPicture:
    """What `render_run_png` draws: lines on common bars (model first), per-fold and stitched Sharpe."""

    timestamp: np.ndarray  # int64 ns UTC, one per bar
    lines: Sequence[EquityLine]
    folds: Sequence[FoldSharpe]
    stitched: FoldSharpe | None = None


FLAT_GATE = "flat: no edge cleared the gate"
FLAT_UNTRADED = "flat: the policy never left flat"


def flat_words(exposure: float, selections: Sequence[FoldSelection | None] = ()) -> str:
    """Why a record never traded, in words ("" when it traded): the tail gate held every fold of it flat
    (each fold's report `selection`), or its policy chose flat on its own."""
    if exposure > 0.0:
        return ""
    gated = bool(selections) and all(s is not None and s.flat for s in selections)
    return FLAT_GATE if gated else FLAT_UNTRADED


def fold_sharpe(window: WindowEvaluation, selections: Sequence[FoldSelection | None] = ()) -> FoldSharpe:
    """A window's model Sharpe and interval beside its best baseline (net of costs); `selections`: the
    tail selections of the folds it covers, which say why a window that never traded is flat."""
    from foxhunt.evaluate.evaluation import MODEL

    net = window.policies[MODEL].net
    best = window.best_baseline
    return FoldSharpe(
        window.fold,
        window.start_ns,
        window.end_ns,
        net.sharpe,
        net.sharpe_ci_low,
        net.sharpe_ci_high,
        window.policies[best].net.sharpe,
        best,
        flat_words(net.exposure, selections),
    )


def run_picture(
    run: RunEvaluation, selections: Mapping[int, FoldSelection | None] | None = None
) -> RunPicture:
    """The model, buy-and-hold and (when it differs) the stitched record's best baseline, net of costs;
    `selections`: each fold's tail selection (fold → its report's `selection`), for the flat folds' words."""
    from foxhunt.evaluate.evaluation import BUY_AND_HOLD, MODEL

    chosen = selections or {}
    folds = [fold_sharpe(w, [chosen.get(w.fold)]) for w in run.folds]
    stitched = fold_sharpe(run.stitched, [chosen.get(w.fold) for w in run.folds])
    names = [MODEL, BUY_AND_HOLD]
    if run.stitched.best_baseline not in names:
        names.append(run.stitched.best_baseline)
    model = f"model ({stitched.flat} in any fold)" if stitched.flat else "model"
    labels = {MODEL: model, BUY_AND_HOLD: "buy and hold"}
    lines = [
        EquityLine(labels.get(n, f"best baseline: {n}"), run.records[n].pnl(run.cost_per_unit, run.execution))
        for n in names
    ]
    return RunPicture(run.records[MODEL].timestamp, lines, folds, stitched)


def agg_figure(**kwargs):
    """A figure drawn by the Agg canvas without pyplot: pyplot and its backend machinery cost seconds to import
    in a fresh process, and a run draws only a few pictures, at its end."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(dpi=DPI, **kwargs)
    FigureCanvasAgg(fig)
    return fig


def png_bytes(fig) -> bytes:
    """The figure as PNG bytes (written atomically by the caller, `storage.write_bytes`), drawn once."""
    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    if isinstance(fig.get_layout_engine(), PlaceHolderLayoutEngine):
        # What a one-off `tight_layout` leaves behind: savefig would lay the figure out by drawing it once
        # more before drawing it, for nothing (the margins are set).
        fig.set_layout_engine(None)
    buf = io.BytesIO()
    # zlib level 1: the same pixels, files within a few per cent, about 60% of level 6's encoding time.
    fig.savefig(buf, format="png", dpi=DPI, pil_kwargs={"compress_level": 1})
    return buf.getvalue()


def date_axis(ns) -> np.ndarray:
    """Timestamps (int64 ns UTC) as datetime64, which matplotlib draws on a date axis."""
    return np.asarray(ns, dtype=np.int64).astype("datetime64[ns]")


def pixel_columns(fig) -> int:
    """The figure's width in pixels as saved: an upper bound on the pixel columns any of its axes spans."""
    return round(fig.get_figwidth() * DPI)


def envelope(x: np.ndarray, y: np.ndarray, columns: int) -> np.ndarray:
    """Which points of a long line to draw so that it looks the same `columns` pixel columns wide: x (sorted,
    numbers such as int64 ns) cut into `columns` equal spans, each span's first, lowest, highest and last
    point, as indices in x order. A line of at most 4 × `columns` points is kept whole.

    A million-bar record draws as fast as a short one, and a one-bar spike stays drawn (every k-th point
    would drop it). Pass at least the pixel columns its axes spans (`pixel_columns`)."""
    n = len(y)
    if n <= 4 * columns:
        return np.arange(n)
    offset = (np.asarray(x) - x[0]).astype(np.float64)
    column = np.zeros(n, dtype=np.int64)
    if offset[-1] > 0:
        column = np.minimum((offset * (columns / offset[-1])).astype(np.int64), columns - 1)
    starts = np.concatenate(([0], np.flatnonzero(np.diff(column)) + 1))
    span = np.repeat(np.arange(starts.size), np.diff(np.append(starts, n)))  # each point's span
    values = np.asarray(y)
    kept = [starts, np.append(starts[1:], n) - 1]
    for extreme in (np.minimum, np.maximum):
        hits = np.flatnonzero(values == extreme.reduceat(values, starts)[span])
        kept.append(hits[np.diff(span[hits], prepend=-1) != 0])  # a span's first point at its extreme
    return np.unique(np.concatenate(kept))


def percent_label(value: float, _position=None) -> str:
    """A wealth level as the cumulative return it is: −10%, +0%, +25%, +1,900% (never 1.9e+03%)."""
    change = (value - 1.0) * 100.0
    return f"{change:+,.0f}%" if abs(change) >= 100 else f"{change:+.3g}%"


def render_run_png(
    picture: RunPicture, title: str, record_title: str = "stitched out-of-sample record"
) -> bytes:
    """PNG bytes of `run_figure`."""
    return png_bytes(run_figure(picture, title, record_title))


def run_figure(picture: RunPicture, title: str, record_title: str = "stitched out-of-sample record"):
    """Wealth (log scale) by date, the drawdown panel, and per-fold Sharpe with intervals (flat folds in words)."""
    from matplotlib.ticker import FuncFormatter

    fig = agg_figure(figsize=(12, 10))
    ax_w, ax_dd, ax_sr = fig.subplots(3, 1, height_ratios=(3, 1.3, 2), sharex=True)
    stamps, columns = np.asarray(picture.timestamp, dtype=np.int64), pixel_columns(fig)
    dates = date_axis(stamps)
    for i, line in enumerate(picture.lines):
        log_wealth = np.cumsum(line.log_pnl)
        idx = envelope(stamps, log_wealth, columns)
        width, color = (2.0, LINE_COLORS[0]) if i == 0 else (1.1, LINE_COLORS[i % len(LINE_COLORS)])
        ax_w.plot(dates[idx], np.exp(log_wealth[idx]), color=color, linewidth=width, label=line.label)
        if i < 2:  # the model's and buy-and-hold's drawdowns; more lines would hide both
            drawdown = np.exp(log_wealth - np.maximum.accumulate(np.maximum(log_wealth, 0.0))) - 1.0
            idx = envelope(stamps, drawdown, columns)
            ax_dd.fill_between(dates[idx], drawdown[idx] * 100.0, 0.0, color=color, alpha=0.45 if i == 0 else 0.25,
                               label=line.label)  # fmt: skip
    for k, fold in enumerate(picture.folds):  # shade every other fold's window
        if k % 2:
            for ax in (ax_w, ax_dd, ax_sr):
                ax.axvspan(
                    date_axis(fold.start_ns), date_axis(fold.end_ns), color="#000000", alpha=0.04, linewidth=0
                )
    ax_w.set_yscale("log")
    # Wealth on a log scale, labelled as the cumulative return it is: −10%, +0%, +25% (not 9×10⁻¹).
    percent = FuncFormatter(percent_label)
    ax_w.yaxis.set_major_formatter(percent)
    ax_w.yaxis.set_minor_formatter(percent)
    ax_w.set_ylabel("cumulative return, net of costs (log scale)")
    ax_w.set_title(record_title)
    ax_w.legend(fontsize=8, loc="upper left")
    ax_dd.set_ylabel("drawdown (%)")
    ax_dd.legend(fontsize=8, loc="lower left")
    _draw_fold_sharpes(ax_sr, picture.folds, picture.stitched)
    fig.suptitle(title)
    # Fixed margins (inches from the edges of 12 × 10): tight_layout measures every tick label first, which
    # cost a run 0.7 s of its end for this picture alone.
    fig.subplots_adjust(left=0.9 / 12, right=1 - 0.15 / 12, top=1 - 1.0 / 10, bottom=0.45 / 10, hspace=0.2)
    return fig


def _draw_fold_sharpes(ax, folds: Sequence[FoldSharpe], stitched: FoldSharpe | None) -> None:
    if stitched is not None and stitched.flat:  # said in words: a Sharpe of 0.00 ± 0.00 reads as a fault
        ax.text(0.5, 0.9, f"stitched record {stitched.flat} in any fold", transform=ax.transAxes,
                ha="center", fontsize=9, style="italic", gid="flat stitched")  # fmt: skip
    elif stitched is not None:
        ax.axhspan(stitched.low, stitched.high, color=LINE_COLORS[0], alpha=0.1, linewidth=0)
        ax.axhline(
            stitched.sharpe,
            color=LINE_COLORS[0],
            linewidth=1.0,
            label=f"stitched {stitched.sharpe:.2f} [{stitched.low:.2f}, {stitched.high:.2f}]",
        )
    if folds:
        mids = date_axis([(f.start_ns + f.end_ns) // 2 for f in folds])
        traded = [i for i, f in enumerate(folds) if not f.flat]
        if traded:
            sharpe = np.array([folds[i].sharpe for i in traded])
            errors = np.array([[folds[i].sharpe - folds[i].low for i in traded],
                               [folds[i].high - folds[i].sharpe for i in traded]])  # fmt: skip
            ax.errorbar(mids[traded], sharpe, yerr=np.where(np.isfinite(errors), errors, 0.0), fmt="o",
                        color=LINE_COLORS[0], capsize=4, label="model, per fold (interval)")  # fmt: skip
        ax.plot(mids, [f.baseline_sharpe for f in folds], "D", color=LINE_COLORS[2], markersize=5,
                label="best baseline of the fold")  # fmt: skip
        for mid, f in zip(mids, folds, strict=True):
            _annotate_fold(ax, mid, f)
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_ylabel("net Sharpe (annualised)")
    ax.set_title("per-fold Sharpe with its bootstrap interval")
    ax.legend(fontsize=8, loc="best")


def _annotate_fold(ax, mid, fold: FoldSharpe) -> None:
    """A fold's name above its interval, its best baseline's beside its mark, and a flat fold's words at 0."""
    if fold.baseline:
        ax.annotate(fold.baseline, (mid, fold.baseline_sharpe), fontsize=6, textcoords="offset points",
                    xytext=(5, -2), color=LINE_COLORS[2])  # fmt: skip
    if fold.flat:
        ax.annotate(f"fold {fold.fold}\n{fold.flat}", (mid, 0.0), fontsize=7, textcoords="offset points",
                    xytext=(0, 4), ha="center", style="italic", gid=f"flat fold {fold.fold}")  # fmt: skip
        return
    top = fold.high if math.isfinite(fold.high) else fold.sharpe
    ax.annotate(f"fold {fold.fold}", (mid, top), fontsize=7, textcoords="offset points", xytext=(0, 4),
                ha="center")  # fmt: skip


def render_timings_png(folds: Sequence[int], phases: Mapping[str, Sequence[float]], title: str) -> bytes:
    """PNG bytes: left, stacked phase seconds per fold; right, each phase per fold on a log scale."""
    fig = agg_figure(figsize=(13, 4.8))
    ax_stack, ax_log = fig.subplots(1, 2)
    labels = [str(f) for f in folds]
    bottom = np.zeros(len(folds))
    for phase, seconds in phases.items():
        values = np.asarray(seconds, dtype=np.float64)
        color = PHASE_COLORS.get(phase)
        ax_stack.bar(labels, values, bottom=bottom, color=color, label=phase)
        bottom += values
        # The short phases (reset, normalize: milliseconds) vanish on a linear scale.
        ax_log.plot(labels, np.maximum(values, 1e-6), "o-", color=color, label=phase)
    ax_stack.set_xlabel("fold")
    ax_stack.set_ylabel("seconds")
    ax_stack.set_title("phase seconds per fold")
    ax_stack.legend(fontsize=8)
    ax_log.set_yscale("log")
    ax_log.set_xlabel("fold")
    ax_log.set_ylabel("seconds (log scale)")
    ax_log.set_title("each phase per fold")
    fig.suptitle(title)
    # Fixed margins (inches from the edges of 13 × 4.8), as `run_figure`'s.
    fig.subplots_adjust(left=0.75 / 13, right=1 - 0.25 / 13, top=1 - 1.0 / 4.8, bottom=0.6 / 4.8, wspace=0.2)
    return png_bytes(fig)
