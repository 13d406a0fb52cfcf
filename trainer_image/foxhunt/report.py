"""The run's picture: per-fold equity curves of the greedy policy and per-fold phase timings."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from foxhunt.reports import RunSummary

PHASE_COLORS = {
    "reset": "#4e79a7",
    "normalize": "#f28e2b",
    "collect": "#59a14f",
    "train": "#e15759",
    "validate": "#76b7b2",
    "checkpoint": "#edc948",
}


def render_run_png(summary: RunSummary, curves: dict[int, np.ndarray], title: str) -> bytes:
    """PNG bytes: left, each fold's validation equity curve; right, stacked phase seconds per fold."""
    folds = summary.folds
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_eq, ax_ph) = plt.subplots(1, 2, figsize=(13, 4.8))
    for report in folds:
        fold = report.fold
        curve = curves.get(fold)
        if curve is None or len(curve) == 0:
            continue
        sharpe = report.validation.model.sharpe
        x = np.linspace(0.0, 1.0, len(curve))
        ax_eq.plot(x, np.expm1(curve) * 100.0, label=f"fold {fold} (Sharpe {sharpe:.2f})")
    ax_eq.axhline(0.0, color="grey", linewidth=0.8)
    ax_eq.set_xlabel("share of validation window")
    ax_eq.set_ylabel("return after costs (%)")
    ax_eq.set_title("validation equity, greedy policy")
    if folds:
        ax_eq.legend(fontsize=8)

    labels = [str(r.fold) for r in folds]
    bottom = np.zeros(len(folds))
    for phase, color in PHASE_COLORS.items():
        values = np.array([r.phases.get(phase, 0.0) for r in folds])
        ax_ph.bar(labels, values, bottom=bottom, color=color, label=phase)
        bottom += values
    ax_ph.set_xlabel("fold")
    ax_ph.set_ylabel("seconds")
    ax_ph.set_title("phase seconds per fold")
    ax_ph.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()
