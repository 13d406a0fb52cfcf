"""The run's pictures: the stitched out-of-sample record for a quant, and where the time went.

`run.png`: wealth of the model's stitched record against buy-and-hold and the best other
baseline on a date axis (log scale), its drawdown, and each fold's net Sharpe with its bootstrap
interval beside the fold's best baseline. `timings.png`: phase seconds per fold. Inputs are
arrays and small dataclasses (`run_picture` builds them from an evaluation); matplotlib is
imported only when a picture is drawn.
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

PHASE_COLORS = {
    "reset": "#4e79a7",
    "normalize": "#f28e2b",
    "collect": "#59a14f",
    "train": "#e15759",
    "validate": "#76b7b2",
    "checkpoint": "#edc948",
}
LINE_COLORS = ("#1f3b73", "#7f7f7f", "#d4802a", "#59a14f", "#b07aa1")
MAX_POINTS = 2000  # points per drawn line: a million-bar record draws as fast as a small one


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


@dataclass(frozen=True)
class RunPicture:
    """What `render_run_png` draws: lines on common bars (model first), per-fold and stitched Sharpe."""

    timestamp: np.ndarray  # int64 ns UTC, one per bar
    lines: Sequence[EquityLine]
    folds: Sequence[FoldSharpe]
    stitched: FoldSharpe | None = None


def fold_sharpe(window: WindowEvaluation) -> FoldSharpe:
    """A window's model Sharpe and interval beside its best baseline (net of costs)."""
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
    )


def run_picture(run: RunEvaluation) -> RunPicture:
    """The model, buy-and-hold and (when it differs) the stitched record's best baseline, net of costs."""
    from foxhunt.evaluate.evaluation import BUY_AND_HOLD, MODEL

    names = [MODEL, BUY_AND_HOLD]
    if run.stitched.best_baseline not in names:
        names.append(run.stitched.best_baseline)
    labels = {MODEL: "model", BUY_AND_HOLD: "buy and hold"}
    lines = [
        EquityLine(labels.get(n, f"best baseline: {n}"), run.records[n].pnl(run.cost_per_unit, run.execution))
        for n in names
    ]
    return RunPicture(
        run.records[MODEL].timestamp, lines, [fold_sharpe(w) for w in run.folds], fold_sharpe(run.stitched)
    )


def _figure(**kwargs):
    """A figure drawn by the Agg canvas without pyplot: pyplot and its backend machinery cost seconds to import
    in a fresh process, and a run draws only two pictures, at its end."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(**kwargs)
    FigureCanvasAgg(fig)
    return fig


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def _dates(ns) -> np.ndarray:
    return np.asarray(ns, dtype=np.int64).astype("datetime64[ns]")


def _thin(values: np.ndarray, reduce: np.ufunc | None = None) -> tuple[np.ndarray, np.ndarray]:
    """At most MAX_POINTS (index, value) pairs: every k-th value, or each bucket reduced by `reduce`."""
    n = values.size
    if n <= MAX_POINTS:
        return np.arange(n), values
    starts = np.linspace(0, n, MAX_POINTS, endpoint=False).astype(np.int64)
    return starts, (reduce.reduceat(values, starts) if reduce else values[starts])


def _percent(value: float, _position=None) -> str:
    """A wealth level as the cumulative return it is: −10%, +0%, +25%, +1,900% (never 1.9e+03%)."""
    change = (value - 1.0) * 100.0
    return f"{change:+,.0f}%" if abs(change) >= 100 else f"{change:+.3g}%"


def render_run_png(
    picture: RunPicture, title: str, record_title: str = "stitched out-of-sample record"
) -> bytes:
    """PNG bytes: wealth (log scale) by date, the drawdown panel, and per-fold Sharpe with intervals."""
    from matplotlib.ticker import FuncFormatter

    fig = _figure(figsize=(12, 10))
    ax_w, ax_dd, ax_sr = fig.subplots(3, 1, height_ratios=(3, 1.3, 2), sharex=True)
    dates = _dates(picture.timestamp)
    for i, line in enumerate(picture.lines):
        log_wealth = np.cumsum(line.log_pnl)
        idx, values = _thin(log_wealth)
        width, color = (2.0, LINE_COLORS[0]) if i == 0 else (1.1, LINE_COLORS[i % len(LINE_COLORS)])
        ax_w.plot(dates[idx], np.exp(values), color=color, linewidth=width, label=line.label)
        drawdown = np.exp(log_wealth - np.maximum.accumulate(np.maximum(log_wealth, 0.0))) - 1.0
        if i < 2:  # the model's and buy-and-hold's drawdowns; more lines would hide both
            idx, values = _thin(drawdown, np.minimum)
            ax_dd.fill_between(
                dates[idx], values * 100.0, 0.0, color=color, alpha=0.45 if i == 0 else 0.25, label=line.label
            )
    for k, fold in enumerate(picture.folds):  # shade every other fold's window
        if k % 2:
            for ax in (ax_w, ax_dd, ax_sr):
                ax.axvspan(
                    _dates(fold.start_ns), _dates(fold.end_ns), color="#000000", alpha=0.04, linewidth=0
                )
    ax_w.set_yscale("log")
    # Wealth on a log scale, labelled as the cumulative return it is: −10%, +0%, +25% (not 9×10⁻¹).
    percent = FuncFormatter(_percent)
    ax_w.yaxis.set_major_formatter(percent)
    ax_w.yaxis.set_minor_formatter(percent)
    ax_w.set_ylabel("cumulative return, net of costs (log scale)")
    ax_w.set_title(record_title)
    ax_w.legend(fontsize=8, loc="upper left")
    ax_dd.set_ylabel("drawdown (%)")
    ax_dd.legend(fontsize=8, loc="lower left")
    _draw_fold_sharpes(ax_sr, picture.folds, picture.stitched)
    fig.suptitle(title)
    fig.tight_layout()
    return _png(fig)


def _draw_fold_sharpes(ax, folds: Sequence[FoldSharpe], stitched: FoldSharpe | None) -> None:
    if stitched is not None:
        ax.axhspan(stitched.low, stitched.high, color=LINE_COLORS[0], alpha=0.1, linewidth=0)
        ax.axhline(
            stitched.sharpe,
            color=LINE_COLORS[0],
            linewidth=1.0,
            label=f"stitched {stitched.sharpe:.2f} [{stitched.low:.2f}, {stitched.high:.2f}]",
        )
    if folds:
        mids = _dates([(f.start_ns + f.end_ns) // 2 for f in folds])
        sharpe = np.array([f.sharpe for f in folds])
        errors = np.array([[f.sharpe - f.low for f in folds], [f.high - f.sharpe for f in folds]])
        ax.errorbar(
            mids,
            sharpe,
            yerr=np.where(np.isfinite(errors), errors, 0.0),
            fmt="o",
            color=LINE_COLORS[0],
            capsize=4,
            label="model, per fold (interval)",
        )
        ax.plot(
            mids,
            [f.baseline_sharpe for f in folds],
            "D",
            color=LINE_COLORS[2],
            markersize=5,
            label="best baseline of the fold",
        )
        for mid, f in zip(mids, folds, strict=True):
            if f.baseline:
                ax.annotate(
                    f.baseline,
                    (mid, f.baseline_sharpe),
                    fontsize=6,
                    textcoords="offset points",
                    xytext=(5, -2),
                    color=LINE_COLORS[2],
                )
            ax.annotate(
                f"fold {f.fold}",
                (mid, f.high if math.isfinite(f.high) else f.sharpe),
                fontsize=7,
                textcoords="offset points",
                xytext=(0, 4),
                ha="center",
            )
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_ylabel("net Sharpe (annualised)")
    ax.set_title("per-fold Sharpe with its bootstrap interval")
    ax.legend(fontsize=8, loc="best")


def render_timings_png(folds: Sequence[int], phases: Mapping[str, Sequence[float]], title: str) -> bytes:
    """PNG bytes: left, stacked phase seconds per fold; right, each phase per fold on a log scale."""
    fig = _figure(figsize=(13, 4.8))
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
    fig.tight_layout()
    return _png(fig)
