"""A universe run's pictures: each instrument's, as a single run draws them, and the book's.

``instruments/<name>/`` gets `run.png`, `positions.png`, `learning.png` and `timings.png` of its stitched
record and its folds' reports (`plot_run.run_pictures`; the timings are the universe fold's phases, the
same in every instrument's folder); the run's top gets `book.png` (`plot_book`). Drawn once the book is
scored, by the run only (a search's trials draw none: seconds each). Without matplotlib (a slim image)
the run says so and writes its records without pictures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from foxhunt import collector, out_names, storage
from foxhunt.evaluate.book import BookEvaluation
from foxhunt.evaluate.evaluation import MODEL, RunEvaluation
from foxhunt.evaluate.plot import flat_words
from foxhunt.evaluate.stitched_report import verdict_line
from foxhunt.run.fold import Progress
from foxhunt.run.universe_walk import InstrumentView, instrument_folder, instrument_outcomes
from foxhunt.run.walk import Walked


def instrument_title(name: str, evaluation: RunEvaluation, reports: Sequence) -> str:
    """An instrument's pictures' title: its name in the universe and its stitched verdict (a record that
    never traded says why, in words)."""
    net = evaluation.stitched.policies[MODEL].net
    flat = flat_words(net.exposure, [r.selection for r in reports])
    verdict = f"its record is {flat} in any fold" if flat else verdict_line(evaluation.stitched)
    return f"foxhunt universe run: {name}\n{verdict}"


def write_universe_pictures(
    out_uri: str,
    views: Sequence[InstrumentView],
    walked: Walked,
    evaluations: Mapping[str, RunEvaluation],
    series: Mapping[str, Mapping[str, np.ndarray]],
    book: BookEvaluation | None,
    progress: Progress,
) -> None:
    """Each traded instrument's pictures in its folder (`evaluations`: the first seed's stitched
    evaluations by name) and `book.png` of `book` beside each instrument's stitched `series`."""
    try:
        from foxhunt.evaluate.plot_book import book_picture, render_book_png
        from foxhunt.evaluate.plot_jobs import PictureJob, draw_pictures
        from foxhunt.evaluate.plot_run import picture_jobs

        jobs: list[PictureJob] = []
        for i, view in enumerate(views):
            if view.name in evaluations:
                evaluation = evaluations[view.name]
                outcomes = instrument_outcomes(walked, 0, i)
                reports = [outcomes[fold].report for fold in sorted(outcomes)]
                title = instrument_title(view.name, evaluation, reports)
                jobs += picture_jobs(evaluation, reports, title, instrument_folder(out_uri, view.name))
        if book is not None:
            title = f"foxhunt universe run: the book of {len(book.weights)} instruments\n{verdict_line(book.window)}"
            book_args = (book_picture(book, series), title)
            jobs.append(PictureJob(storage.join(out_uri, out_names.BOOK_PICTURE), render_book_png, book_args))
        # Side by side in worker processes where the cores allow, and only in a console command's own
        # process: a spawned worker re-imports the main module, which a library caller's script need not guard.
        drawn = draw_pictures(jobs, workers=None if collector.owned() else 1)
    except ImportError as exc:  # a slim image without matplotlib still trains and reports in JSON
        progress(f"the run's pictures not drawn: {exc}")
        return
    for uri, png in drawn.items():
        storage.write_bytes(uri, png)
