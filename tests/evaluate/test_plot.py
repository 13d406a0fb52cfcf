"""The run's pictures: drawn from plain arrays and dataclasses, real PNGs with content, matplotlib lazily."""

import io
import subprocess
import sys

import numpy as np
import torch

from foxhunt.data.features import FEATURE_NAMES
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.evaluation import Scoring, evaluate_run
from foxhunt.evaluate.plot import (
    EquityLine,
    FoldSharpe,
    RunPicture,
    render_run_png,
    render_timings_png,
    run_picture,
)
from foxhunt.train.fold_selection import FoldSelection

MINUTE = 60_000_000_000
T0 = np.datetime64("2024-01-01T00:00", "ns").astype(np.int64)


def pixels(png: bytes) -> np.ndarray:
    import matplotlib.image

    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return matplotlib.image.imread(io.BytesIO(png), format="png")


def drawn_colours(image: np.ndarray) -> int:
    return len(np.unique(image.reshape(-1, image.shape[-1]), axis=0))


def small_run():
    rng = np.random.default_rng(0)
    n = 6000
    features = torch.from_numpy(rng.normal(size=(n, len(FEATURE_NAMES))).astype(np.float32))
    targets = torch.from_numpy(rng.normal(2e-5, 4e-4, size=(n, 4)).astype(np.float32))
    features[1:, 0] = targets[:-1, 0]  # column 0 is the bar's own return
    timestamp = T0 + np.arange(n, dtype=np.int64) * MINUTE
    folds = [FoldRange(k, 1000 * k, 2000 + 1000 * k, 2000 + 1000 * k, 3000 + 1000 * k, 0.0) for k in range(4)]
    model = {f.fold: torch.sign(features[f.val_slice, 5]) for f in folds}
    return evaluate_run(features, targets, timestamp, folds, model, Scoring(resamples=100))


def test_run_png_draws_the_stitched_record_from_an_evaluation():
    picture = run_picture(small_run())
    assert [line.label for line in picture.lines][:2] == ["model", "buy and hold"]
    assert len(picture.folds) == 4 and picture.stitched is not None
    image = pixels(render_run_png(picture, "a small run"))
    assert image.shape[0] > 800 and image.shape[1] > 1000
    assert drawn_colours(image) > 50  # lines, fills, markers and text, not a blank canvas


def test_run_png_thins_a_long_record_and_survives_a_fold_without_interval():
    n = 300_000
    rng = np.random.default_rng(1)
    timestamp = T0 + np.arange(n, dtype=np.int64) * MINUTE
    lines = [
        EquityLine("model", rng.normal(1e-5, 4e-4, n)),
        EquityLine("buy and hold", rng.normal(0, 4e-4, n)),
    ]
    folds = [
        FoldSharpe(0, int(timestamp[0]), int(timestamp[-1]), 1.5, float("nan"), float("nan"), 0.2, "ridge")
    ]
    png = render_run_png(RunPicture(timestamp, lines, folds), "long")
    assert drawn_colours(pixels(png)) > 50


def test_timings_png_draws_every_phase_per_fold():
    phases = {
        "reset": [0.001, 0.0008],
        "normalize": [0.002, 0.002],
        "collect": [0.5, 0.6],
        "train": [3.0, 3.2],
        "select": [0.4, 0.45],
        "validate": [0.2, 0.25],
        "checkpoint": [0.01, 0.012],
    }
    image = pixels(render_timings_png([0, 1], phases, "timings"))
    assert image.shape[1] > 1000 and drawn_colours(image) > 50


def test_a_tight_laid_out_figure_is_drawn_once_into_the_pixels_savefig_draws(monkeypatch):
    from matplotlib.figure import Figure

    from foxhunt.evaluate.plot import agg_figure, png_bytes

    def figure():
        fig = agg_figure(figsize=(4, 3))
        ax = fig.subplots()
        ax.plot([0, 1, 2], [1, 3, 2], label="a")
        ax.set_title("a title")
        ax.legend(loc="best")
        fig.tight_layout()
        return fig

    saved = io.BytesIO()
    figure().savefig(saved, format="png", dpi=100)
    draws = []
    draw = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda fig, renderer: draws.append(fig) or draw(fig, renderer))
    png = png_bytes(figure())
    assert len(draws) == 1
    assert np.array_equal(pixels(png), pixels(saved.getvalue()))


def test_importing_the_plot_module_does_not_import_matplotlib():
    code = "import sys, foxhunt.evaluate.plot; print('matplotlib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_return_axis_reads_as_percent_of_cumulative_return():
    from foxhunt.evaluate.plot import percent_label

    assert [percent_label(v) for v in (0.9, 1.0, 1.25, 20.0)] == ["-10%", "+0%", "+25%", "+1,900%"]


def test_run_png_says_a_flat_fold_in_words_and_draws_no_sharpe_mark_for_it():
    from foxhunt.evaluate.plot import FLAT_GATE, run_figure

    rng = np.random.default_rng(0)
    n = 6000
    features = torch.from_numpy(rng.normal(size=(n, len(FEATURE_NAMES))).astype(np.float32))
    targets = torch.from_numpy(rng.normal(2e-5, 4e-4, size=(n, 4)).astype(np.float32))
    timestamp = T0 + np.arange(n, dtype=np.int64) * MINUTE
    folds = [FoldRange(k, 1000 * k, 2000 + 1000 * k, 2000 + 1000 * k, 3000 + 1000 * k, 0.0) for k in range(4)]
    model = {f.fold: torch.sign(features[f.val_slice, 5]) * (f.fold != 1) for f in folds}  # fold 1 flat
    run = evaluate_run(features, targets, timestamp, folds, model, Scoring(resamples=100))
    selections = {f.fold: FoldSelection(0, 1.0, flat=f.fold == 1) for f in folds}
    fig = run_figure(run_picture(run, selections), "t")
    texts = {t.get_gid(): t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid()}
    assert texts == {"flat fold 1": f"fold 1\n{FLAT_GATE}"}
    sharpe_axes = fig.axes[2]
    marks = sharpe_axes.containers[0].lines[0]  # the model's per-fold errorbar marks
    assert len(marks.get_xdata()) == 3


def test_run_png_of_a_record_that_never_traded_says_so_instead_of_a_zero_sharpe():
    from foxhunt.evaluate.plot import FLAT_GATE, run_figure

    rng = np.random.default_rng(0)
    n = 4000
    features = torch.from_numpy(rng.normal(size=(n, len(FEATURE_NAMES))).astype(np.float32))
    targets = torch.from_numpy(rng.normal(2e-5, 4e-4, size=(n, 4)).astype(np.float32))
    timestamp = T0 + np.arange(n, dtype=np.int64) * MINUTE
    folds = [FoldRange(k, 1000 * k, 2000 + 1000 * k, 2000 + 1000 * k, 3000 + 1000 * k, 0.0) for k in range(2)]
    run = evaluate_run(features, targets, timestamp, folds, {f.fold: torch.zeros(1000) for f in folds},
                       Scoring(resamples=100))  # fmt: skip
    picture = run_picture(run, {0: FoldSelection(0, 1.0, flat=True), 1: FoldSelection(0, 1.0, flat=True)})
    fig = run_figure(picture, "t")
    texts = {t.get_gid(): t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid()}
    assert texts["flat stitched"] == f"stitched record {FLAT_GATE} in any fold"
    labels = [label for ax in fig.axes for label in ax.get_legend_handles_labels()[1]]
    assert not any(label.startswith("stitched 0.00") for label in labels)
    assert picture.lines[0].label == f"model ({FLAT_GATE} in any fold)"
