"""A run's pictures, drawn from its evaluation and its folds' reports: `run.png` and `positions.png` (the
stitched record), `timings.png` and `learning.png` (`plot`, `plot_positions`, `plot_learning` draw them)."""

from __future__ import annotations

from collections.abc import Sequence

from foxhunt import out_names
from foxhunt.evaluate.evaluation import RunEvaluation


def run_pictures(run: RunEvaluation | None, reports: Sequence, title: str) -> dict[str, bytes]:
    """`run.png` and `positions.png` (the stitched record, when there is one), `timings.png` (phase seconds
    per fold) and `learning.png` (each fold's learning curve), from the folds' reports when given."""
    from foxhunt.evaluate.plot_jobs import draw_pictures

    return draw_pictures(picture_jobs(run, reports, title))


def picture_jobs(run: RunEvaluation | None, reports: Sequence, title: str, folder: str = "") -> list:
    """`run_pictures`' pictures as jobs (`plot_jobs.PictureJob`) keyed by `folder` joined to their names:
    what each draws is computed here, the drawing left to `plot_jobs.draw_pictures`."""
    from foxhunt import storage
    from foxhunt.config import PHASES
    from foxhunt.evaluate.plot import render_run_png, render_timings_png, run_picture
    from foxhunt.evaluate.plot_jobs import PictureJob
    from foxhunt.evaluate.plot_learning import render_learning_png
    from foxhunt.evaluate.plot_positions import positions_picture, render_positions_png

    def key(name: str) -> str:
        return storage.join(folder, name) if folder else name

    jobs = []
    selections = {r.fold: r.selection for r in reports}
    if run is not None:
        jobs.append(
            PictureJob(key(out_names.RUN_PICTURE), render_run_png, (run_picture(run, selections), title))
        )
        jobs.append(
            PictureJob(
                key(out_names.POSITIONS_PICTURE),
                render_positions_png,
                (positions_picture(run, selections), f"{title}: positions"),
            )
        )
    if reports:
        phases = {p: [r.phases[p] for r in reports] for p in PHASES}
        timings = ([r.fold for r in reports], phases, f"{title}: timings")
        jobs.append(PictureJob(key(out_names.TIMINGS_PICTURE), render_timings_png, timings))
        jobs.append(
            PictureJob(
                key(out_names.LEARNING_PICTURE), render_learning_png, (list(reports), f"{title}: learning")
            )
        )
    return jobs
