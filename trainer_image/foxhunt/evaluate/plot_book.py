"""`book.png`: a universe run's book beside its baselines, and each instrument's stitched record.

Top panel: the book's cumulative net log return over the union calendar (evaluate/book.py's combined
series), beside the book's buy-and-hold, flat and feature oracle (the best combined supervised model, a
pick made after the fact), each combined with the book's weights. Bottom panel: each instrument's own
stitched cumulative net return on its own bars, labelled with its weight in the book. Both as wealth on a
log scale labelled as the cumulative return it is (as run.png draws it).

What is drawn (`book_picture`: plain arrays) is apart from the drawing (`render_book_png`), so the
drawn series can be checked exactly; matplotlib is imported only when a picture is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from foxhunt.evaluate.book import BOOK, FLAT, BookEvaluation, book_feature_oracle
from foxhunt.evaluate.evaluation import BUY_AND_HOLD, MODEL
from foxhunt.evaluate.plot import (
    LINE_COLORS,
    agg_figure,
    date_axis,
    envelope,
    percent_label,
    pixel_columns,
    png_bytes,
)


@dataclass(frozen=True)
class BookPicture:
    """What `render_book_png` draws: cumulative net log returns, the book's on the union calendar."""

    timestamp: np.ndarray  # int64 ns UTC: the book's union calendar
    book: dict[str, np.ndarray]  # label → cumulative net log return per calendar bar (the book's first)
    instruments: dict[str, tuple[np.ndarray, np.ndarray]]  # label → (its timestamps, its cumulative net)


def book_picture(book: BookEvaluation, series: Mapping[str, Mapping[str, np.ndarray]]) -> BookPicture:
    """The book's lines (`book.series`: the book, buy-and-hold, flat and the feature oracle when the book
    holds supervised models) and each instrument's from its stitched `series` (``timestamp``,
    ``net_returns``: `universe_book.stitched_series`), labelled with its weight in the book."""
    policies = {BOOK: MODEL, "buy and hold": BUY_AND_HOLD, FLAT: FLAT}
    oracle = book_feature_oracle(book)
    if oracle is not None:
        policies[f"feature oracle ({oracle['name']}, picked after the fact)"] = oracle["name"]
    lines = {label: np.cumsum(book.series[policy].net) for label, policy in policies.items()}
    instruments = {
        f"{name} (weight {book.weights[name]:.2f})": (
            np.asarray(arrays["timestamp"], dtype=np.int64),
            np.cumsum(np.asarray(arrays["net_returns"], dtype=np.float64)),
        )
        for name, arrays in series.items()
    }
    return BookPicture(book.series[MODEL].timestamp, lines, instruments)


def render_book_png(picture: BookPicture, title: str) -> bytes:
    """PNG bytes of `book_figure`."""
    return png_bytes(book_figure(picture, title))


def book_figure(picture: BookPicture, title: str):
    """The two panels (module docstring); long lines drawn as their envelope (`plot.envelope`)."""
    from matplotlib.ticker import FuncFormatter

    fig = agg_figure(figsize=(12, 9))
    ax_book, ax_each = fig.subplots(2, 1, height_ratios=(3, 2), sharex=True)
    stamps, columns = np.asarray(picture.timestamp, dtype=np.int64), pixel_columns(fig)
    for i, (label, cumulative) in enumerate(picture.book.items()):
        idx = envelope(stamps, cumulative, columns)
        width = 2.0 if i == 0 else 1.1
        style = ":" if label == FLAT else "-"
        ax_book.plot(date_axis(stamps[idx]), np.exp(cumulative[idx]), style, color=LINE_COLORS[i % len(LINE_COLORS)],
                     linewidth=width, label=label, gid=label)  # fmt: skip
    colors = [
        "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    ]  # fmt: skip
    for i, (label, (own, cumulative)) in enumerate(picture.instruments.items()):
        idx = envelope(own, cumulative, columns)
        ax_each.plot(date_axis(own[idx]), np.exp(cumulative[idx]), color=colors[i % len(colors)], linewidth=1.1,
                     label=label, gid=label)  # fmt: skip
    percent = FuncFormatter(percent_label)
    for ax, what in ((ax_book, "the book and its baselines"), (ax_each, "each instrument's stitched record")):
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(percent)
        ax.yaxis.set_minor_formatter(percent)
        ax.set_ylabel("cumulative return, net of costs (log scale)")
        ax.set_title(what)
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(title)
    fig.tight_layout()
    return fig
