"""learning.png: each fold's loss and Sharpe by epoch, the epoch kept and the gate, read back from the figure."""

import io
import math

import matplotlib.image
import numpy as np

from foxhunt.evaluate import plot_learning
from foxhunt.evaluate.plot import FLAT_GATE, png_bytes
from foxhunt.evaluate.plot_learning import FoldCurve, fold_curve, learning_figure, render_learning_png
from foxhunt.evaluate.reports import FoldDates, FoldReport, RunSummary
from foxhunt.train.epoch_figures import EpochFigures
from foxhunt.train.fold_selection import FoldSelection


def epoch(k: int, loss: float, train_sharpe: float | None) -> EpochFigures:
    return EpochFigures(
        k, loss, 0.1, 4, 0.01, 0.02, 1e4, q_mean=0.5 + k, q_max=1.0, train_sharpe=train_sharpe
    )


def report(fold: int, selection: FoldSelection | None, train=(1.0, 9.0, 2.0, 3.0)) -> FoldReport:
    """A fold of four epochs; the evaluation is not read by the picture."""
    epochs = [epoch(k, 2.0 - 0.1 * k, s) for k, s in enumerate(train)]
    dates = FoldDates("a", "b", "c", "d")
    phases = dict.fromkeys(
        ("reset", "normalize", "collect", "train", "select", "validate", "checkpoint"), 0.0
    )
    return FoldReport(
        fold, 0, 10, 10, 20, 1.0, dates, phases, 1.0, 1e4, 16, epochs, None, selection=selection
    )  # type: ignore[arg-type]


def selection(chosen: int, tails: list[float], gate: float, flat: bool) -> FoldSelection:
    return FoldSelection(chosen, tails[chosen], flat, tuple(tails), gate)


KEPT = selection(2, [0.5, 1.0, 4.0, 3.0], 2.5, flat=False)
GATED = selection(1, [0.5, 1.5, 1.0, 0.2], 2.5, flat=True)


def drawn(fig) -> dict:
    """The figure's lines and texts by their gid."""
    found = {}
    for ax in fig.axes:
        for artist in [*ax.lines, *ax.texts]:
            if artist.get_gid():
                found[artist.get_gid()] = artist
    return found


def test_the_loss_line_holds_each_epochs_loss_by_epoch_counted_from_one():
    lines = drawn(learning_figure([fold_curve(report(0, KEPT))], "t"))
    assert list(lines["fold 0 loss"].get_xdata()) == [1, 2, 3, 4]
    assert np.allclose(lines["fold 0 loss"].get_ydata(), [2.0, 1.9, 1.8, 1.7])
    assert np.allclose(lines["fold 0 q_mean"].get_ydata(), [0.5, 1.5, 2.5, 3.5])


def test_the_in_sample_and_tail_sharpe_lines_hold_the_reports_values():
    lines = drawn(learning_figure([fold_curve(report(0, KEPT))], "t"))
    assert np.allclose(lines["fold 0 train_sharpe"].get_ydata(), [1.0, 9.0, 2.0, 3.0])
    assert list(lines["fold 0 tail_sharpe"].get_xdata()) == [1, 2, 3, 4]
    assert np.allclose(lines["fold 0 tail_sharpe"].get_ydata(), KEPT.tail_sharpes)


def test_the_kept_epoch_mark_sits_at_the_selected_epoch_not_the_best_in_sample_one():
    # selected_epoch 2 (from 0) is the third epoch; in-sample Sharpe peaks at the second.
    lines = drawn(learning_figure([fold_curve(report(0, KEPT))], "t"))
    assert list(lines["fold 0 chosen"].get_xdata()) == [3, 3]


def test_the_gate_line_sits_at_the_gate_sharpe():
    lines = drawn(learning_figure([fold_curve(report(0, KEPT))], "t"))
    assert list(lines["fold 0 gate"].get_ydata()) == [2.5, 2.5]


def test_epochs_without_diagnostics_are_left_out_not_drawn_as_zero():
    # --diagnostics-every 2: the first and third epochs hold no in-sample Sharpe.
    lines = drawn(learning_figure([fold_curve(report(0, KEPT, train=(None, 9.0, None, 3.0)))], "t"))
    assert list(lines["fold 0 train_sharpe"].get_xdata()) == [2, 4]
    assert np.allclose(lines["fold 0 train_sharpe"].get_ydata(), [9.0, 3.0])


def test_a_fold_the_gate_held_flat_says_so_in_words_and_a_kept_one_does_not():
    lines = drawn(learning_figure([fold_curve(report(0, KEPT)), fold_curve(report(1, GATED))], "t"))
    assert lines["fold 1 flat"].get_text() == FLAT_GATE
    assert "fold 0 flat" not in lines


def test_without_tail_selection_the_last_epoch_is_kept_and_no_gate_is_drawn():
    lines = drawn(learning_figure([fold_curve(report(0, None))], "t"))
    assert list(lines["fold 0 chosen"].get_xdata()) == [4, 4]
    assert "fold 0 gate" not in lines and "fold 0 tail_sharpe" not in lines


def offset_curve(fold: int) -> FoldCurve:
    """A fold whose mean |Q| barely moves: its axis writes its ticks as an offset above the panel (+1.23e3)."""
    epochs = list(range(1, 9))
    q = [1234.5678 + 1e-5 * e for e in epochs]
    return FoldCurve(fold, epochs, [2.0 - 0.1 * e for e in epochs], q, [None] * 8, [], 8, None, "")  # type: ignore[arg-type]


def axes_drawing(fig, gid: str):
    return next(ax for ax in fig.axes for line in ax.lines if line.get_gid() == gid)


def test_a_title_is_lifted_clear_of_an_offset_text_above_its_panel():
    fig = learning_figure([offset_curve(0), fold_curve(report(1, KEPT))], "t")
    fig.canvas.draw()
    title = axes_drawing(fig, "fold 0 loss").title
    offset = axes_drawing(fig, "fold 0 q_mean").yaxis.offsetText
    assert offset.get_text()
    assert title.get_window_extent().y0 >= offset.get_window_extent().y1 - 1.0


def test_titles_sit_to_the_pixel_where_matplotlibs_own_search_puts_them(monkeypatch):
    curves = [fold_curve(report(0, KEPT)), fold_curve(report(1, GATED)), offset_curve(2)]
    pinned = png_bytes(learning_figure(curves, "t"))
    monkeypatch.setattr(plot_learning, "_title_may_move", lambda panel: True)  # every title searched for
    searched = png_bytes(learning_figure(curves, "t"))
    read = [matplotlib.image.imread(io.BytesIO(png), format="png") for png in (pinned, searched)]
    assert np.array_equal(*read)


def test_a_real_runs_learning_png_is_written_and_draws_each_folds_reported_losses(quick_run):
    assert (quick_run.out / "learning.png").read_bytes()[:4] == b"\x89PNG"
    summary = RunSummary.from_dict(quick_run.summary)
    lines = drawn(learning_figure([fold_curve(r) for r in summary.folds], "t"))
    for r in summary.folds:
        assert np.allclose(lines[f"fold {r.fold} loss"].get_ydata(), r.loss)
        assert list(lines[f"fold {r.fold} chosen"].get_xdata()) == [len(r.epochs)] * 2
    assert render_learning_png(summary.folds, "t")[:4] == b"\x89PNG"
    assert not math.isnan(summary.folds[0].loss[0])
