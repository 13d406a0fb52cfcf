"""`learning.png`: how each fold learnt, epoch by epoch, and which epoch it kept.

Per fold two panels. Left: the mean Huber loss of the epoch's gradient steps and, on its own axis, the
mean |Q|. Right: the greedy policy's in-sample net Sharpe (epochs with diagnostics only: with
`--diagnostics-every K` the others hold none and are not drawn) and its net Sharpe on the training
slice's held-back tail (`select_tail_share`), the gate the best tail Sharpe had to exceed to trade, and
the epoch kept. A fold the gate held flat says so in words: a policy that learnt something and was held
flat reads apart from one that learnt nothing. Epochs are counted from 1, as the console counts them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from foxhunt.evaluate.plot import FLAT_GATE, LINE_COLORS, agg_figure, png_bytes
from foxhunt.evaluate.reports import FoldReport

FOLDS_PER_ROW = 2
GATE_COLOR = "#c0392b"
TAIL_COLOR = "#d4802a"


@dataclass(frozen=True)
class FoldCurve:
    """One fold's learning curve: per epoch (from 1) its loss and |Q|, its Sharpe figures where kept."""

    fold: int
    epochs: list[int]
    loss: list[float]
    q_mean: list[float | None]
    train_sharpe: list[float | None]  # in-sample net Sharpe; None where no diagnostics ran
    tail_sharpe: list[float]  # net Sharpe on the training tail, every epoch (empty: no tail selection)
    chosen_epoch: int | None  # the epoch whose weights the fold kept (from 1); None: none was scored
    gate: float | None  # the tail Sharpe it had to exceed to trade (None: no tail selection)
    flat: str  # why the fold is flat, in words ("" when it trades)


def fold_curve(report: FoldReport) -> FoldCurve:
    """A fold report's learning curve; without tail selection the last epoch is the one kept."""
    epochs = [e.epoch + 1 for e in report.epochs]
    selection = report.selection
    if selection is None:
        chosen, gate, tail, flat = (epochs[-1] if epochs else None), None, [], ""
    else:
        chosen = None if selection.epoch is None else selection.epoch + 1
        gate, tail = selection.gate, list(selection.tail_sharpes)
        flat = FLAT_GATE if selection.flat else ""
    return FoldCurve(
        report.fold,
        epochs,
        [e.loss for e in report.epochs],
        [e.q_mean for e in report.epochs],
        [e.train_sharpe for e in report.epochs],
        tail,
        chosen,
        gate,
        flat,
    )


def _present(epochs: Sequence[int], values: Sequence[float | None]) -> tuple[list[int], list[float]]:
    """The epochs that hold a finite value, and those values: only what exists is drawn."""
    kept = [(e, float(v)) for e, v in zip(epochs, values, strict=True) if v is not None and math.isfinite(v)]
    return [e for e, _ in kept], [v for _, v in kept]


def _draw_loss(ax, curve: FoldCurve) -> list:
    """The loss panel; returns it with its |Q| twin (when drawn), whose offset texts could lift its title."""
    ax.plot(curve.epochs, curve.loss, "o-", color=LINE_COLORS[0], markersize=3, gid=f"fold {curve.fold} loss")
    ax.set_ylabel("loss (Huber)", fontsize=8)
    x, q = _present(curve.epochs, curve.q_mean)
    if not q:
        return [ax]
    twin = ax.twinx()
    twin.plot(x, q, "--", color=LINE_COLORS[1], linewidth=1.0, gid=f"fold {curve.fold} q_mean")
    twin.set_ylabel("mean |Q|", fontsize=8, color=LINE_COLORS[1])
    twin.tick_params(labelsize=7)
    return [ax, twin]


def _draw_sharpe(ax, curve: FoldCurve) -> None:
    x, train = _present(curve.epochs, curve.train_sharpe)
    if train:
        ax.plot(x, train, "o-", color=LINE_COLORS[3], markersize=3, label="in-sample",
                gid=f"fold {curve.fold} train_sharpe")  # fmt: skip
    tail_x, tail = _present(curve.epochs[: len(curve.tail_sharpe)], curve.tail_sharpe)
    if tail:
        ax.plot(tail_x, tail, "s-", color=TAIL_COLOR, markersize=3, label="training tail",
                gid=f"fold {curve.fold} tail_sharpe")  # fmt: skip
    if curve.gate is not None and math.isfinite(curve.gate):
        ax.axhline(curve.gate, color=GATE_COLOR, linestyle="--", linewidth=1.0,
                   label=f"gate {curve.gate:.2f}", gid=f"fold {curve.fold} gate")  # fmt: skip
    if curve.chosen_epoch is not None:
        ax.axvline(curve.chosen_epoch, color="#555555", linestyle=":", linewidth=1.0,
                   label=f"kept: epoch {curve.chosen_epoch}", gid=f"fold {curve.fold} chosen")  # fmt: skip
    if curve.flat:
        ax.text(0.5, 0.5, curve.flat, transform=ax.transAxes, ha="center", va="center", fontsize=9,
                style="italic", color=GATE_COLOR, gid=f"fold {curve.fold} flat",
                bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})  # fmt: skip
    ax.set_ylabel("net Sharpe", fontsize=8)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6, loc="best")


def _title_may_move(panel: Sequence) -> bool:
    """Whether matplotlib's search at each draw could lift the title of `panel` (an Axes and its twin): only an
    offset text above a y axis (`1e-5`, `+1.2`: found as the draw finds it, the same ticks and formatter)
    or an x axis at the top can."""
    for ax in panel:
        if ax.xaxis.get_ticks_position() in ("top", "unknown") or ax.xaxis.get_label_position() == "top":
            return True
        formatter = ax.yaxis.get_major_formatter()
        formatter.set_locs(ax.yaxis.get_majorticklocs())
        if formatter.get_offset():
            return True
    return False


def learning_figure(curves: Sequence[FoldCurve], title: str):
    """The figure: per fold its loss panel and its Sharpe panel, FOLDS_PER_ROW folds to a row."""
    per_row = min(FOLDS_PER_ROW, max(len(curves), 1))
    rows = max(1, math.ceil(len(curves) / per_row))
    fig = agg_figure(figsize=(7 * per_row, 1.0 + 2.6 * rows))
    grid = fig.add_gridspec(rows, 2 * per_row)
    # Only the cells drawn (an odd fold count leaves the last one empty), in the order `subplots` made them.
    cells = [fig.add_subplot(grid[divmod(k, 2 * per_row)]) for k in range(2 * len(curves))]
    titled = []
    for k, curve in enumerate(curves):
        titled.append((_draw_loss(cells[2 * k], curve), f"fold {curve.fold}: loss and |Q|"))
        _draw_sharpe(cells[2 * k + 1], curve)
        titled.append(([cells[2 * k + 1]], f"fold {curve.fold}: Sharpe by epoch"))
    from matplotlib.ticker import MaxNLocator

    for ax in fig.axes:
        ax.tick_params(labelsize=7)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
        if ax.get_ylabel() != "mean |Q|":
            ax.set_xlabel("epoch", fontsize=8)
    fig.suptitle(title)
    # Fixed margins, in inches from the edges: tight_layout would measure every tick label first, which
    # doubled the picture's cost (it draws the figure once more).
    height = fig.get_figheight()
    fig.subplots_adjust(left=0.09 / per_row, right=1 - 0.07 / per_row, top=1 - 0.95 / height, bottom=0.45 / height,
                        wspace=0.42, hspace=0.6)  # fmt: skip
    for panel, text in titled:  # once the margins are set: the ticks are those the draw will find
        # A title given its height is not searched for at each draw (a tight box of every tick label of its
        # panel and twin: a seventh of the picture's time), and the search would leave it there.
        panel[0].set_title(text, fontsize=9, y=None if _title_may_move(panel) else 1.0)
    return fig


def render_learning_png(reports: Sequence[FoldReport], title: str) -> bytes:
    """PNG bytes of the folds' learning curves (`learning_figure` of each report's `fold_curve`)."""
    return png_bytes(learning_figure([fold_curve(r) for r in reports], title))
