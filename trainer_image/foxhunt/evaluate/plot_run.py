"""A run's pictures, drawn from its evaluation and its folds' reports: `run.png` and `positions.png` (the
stitched record), `timings.png` and `learning.png` (`plot`, `plot_positions`, `plot_learning` draw them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from foxhunt import out_names
from foxhunt.evaluate.evaluation import RunEvaluation

if TYPE_CHECKING:
    from foxhunt.evaluate.plot_jobs import PictureJob, PicturePool


def run_pictures(
    run: RunEvaluation | None,
    reports: Sequence,
    title: str,
    pool: PicturePool | None = None,
    folds_title: str | None = None,
) -> dict[str, bytes]:
    """`run.png` and `positions.png` (the stitched record, when there is one, titled `title`), `timings.png`
    (phase seconds per fold) and `learning.png` (each fold's learning curve), from the folds' reports when
    given, titled `folds_title` (default `title`).

    With `pool`, to which `send_fold_pictures` handed the folds' pictures, the record's pictures are drawn
    here and the worker's bytes collected after them."""
    from foxhunt.evaluate.plot_jobs import draw_pictures

    if pool is None:
        return draw_pictures(picture_jobs(run, reports, title, folds_title=folds_title))
    return draw_pictures(record_jobs(run, reports, title), workers=1) | pool.results()


def send_fold_pictures(pool: PicturePool, reports: Sequence, title: str) -> None:
    """`timings.png` and `learning.png`, which need only the folds' reports, to `pool`'s worker: drawn there
    while the run scores its stitched record, writes its tables and draws the record's pictures
    (`run_pictures` collects them)."""
    for job in fold_jobs(reports, title):
        pool.submit(job)


def picture_jobs(
    run: RunEvaluation | None,
    reports: Sequence,
    title: str,
    folder: str = "",
    folds_title: str | None = None,
) -> list:
    """`run_pictures`' pictures as jobs (`plot_jobs.PictureJob`) keyed by `folder` joined to their names:
    what each draws is computed here, the drawing left to `plot_jobs.draw_pictures`."""
    folds_title = title if folds_title is None else folds_title
    return record_jobs(run, reports, title, folder) + fold_jobs(reports, folds_title, folder)


def record_jobs(
    run: RunEvaluation | None, reports: Sequence, title: str, folder: str = ""
) -> list[PictureJob]:
    """The stitched record's pictures (`run.png`, `positions.png`) as jobs; none without a record."""
    from foxhunt.evaluate.plot import render_run_png, run_picture
    from foxhunt.evaluate.plot_jobs import PictureJob
    from foxhunt.evaluate.plot_positions import positions_picture, render_positions_png

    if run is None:
        return []
    selections = {r.fold: r.selection for r in reports}
    return [
        PictureJob(
            _key(folder, out_names.RUN_PICTURE), render_run_png, (run_picture(run, selections), title)
        ),
        PictureJob(
            _key(folder, out_names.POSITIONS_PICTURE),
            render_positions_png,
            (positions_picture(run, selections), f"{title}: positions"),
        ),
    ]


def fold_jobs(reports: Sequence, title: str, folder: str = "") -> list[PictureJob]:
    """The folds' pictures (`timings.png`, `learning.png`) as jobs; none without reports."""
    from foxhunt.config import PHASES
    from foxhunt.evaluate.plot import render_timings_png
    from foxhunt.evaluate.plot_jobs import PictureJob
    from foxhunt.evaluate.plot_learning import render_learning_png

    if not reports:
        return []
    phases = {p: [r.phases[p] for r in reports] for p in PHASES}
    timings = ([r.fold for r in reports], phases, f"{title}: timings")
    return [
        PictureJob(_key(folder, out_names.TIMINGS_PICTURE), render_timings_png, timings),
        PictureJob(
            _key(folder, out_names.LEARNING_PICTURE),
            render_learning_png,
            (list(reports), f"{title}: learning"),
        ),
    ]


def _key(folder: str, name: str) -> str:
    from foxhunt import storage

    return storage.join(folder, name) if folder else name
