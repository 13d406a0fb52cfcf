"""A run's pictures, drawn from its evaluation and its folds' reports: `run.png` and `positions.png` (the
stitched record), `timings.png` and `learning.png` (`plot`, `plot_positions`, `plot_learning` draw them)."""

from __future__ import annotations

from collections.abc import Sequence

from foxhunt import out_names
from foxhunt.evaluate.evaluation import RunEvaluation


def run_pictures(run: RunEvaluation | None, reports: Sequence, title: str) -> dict[str, bytes]:
    """`run.png` and `positions.png` (the stitched record, when there is one), `timings.png` (phase seconds
    per fold) and `learning.png` (each fold's learning curve), from the folds' reports when given."""
    from foxhunt.config import PHASES
    from foxhunt.evaluate.plot import render_run_png, run_picture
    from foxhunt.evaluate.plot_learning import render_learning_png
    from foxhunt.evaluate.plot_positions import positions_picture, render_positions_png

    pictures = {}
    selections = {r.fold: r.selection for r in reports}
    if run is not None:
        pictures[out_names.RUN_PICTURE] = render_run_png(run_picture(run, selections), title)
        pictures[out_names.POSITIONS_PICTURE] = render_positions_png(
            positions_picture(run, selections), f"{title}: positions"
        )
    if reports:
        from foxhunt.evaluate.plot import render_timings_png

        phases = {p: [r.phases[p] for r in reports] for p in PHASES}
        pictures[out_names.TIMINGS_PICTURE] = render_timings_png(
            [r.fold for r in reports], phases, f"{title}: timings"
        )
        pictures[out_names.LEARNING_PICTURE] = render_learning_png(reports, f"{title}: learning")
    return pictures
