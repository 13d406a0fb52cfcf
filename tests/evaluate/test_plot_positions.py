"""positions.png: the stitched record's positions and net wealth over its dates; flat folds in words."""

import numpy as np
import torch

from foxhunt.data.features import FEATURE_NAMES
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.evaluation import BUY_AND_HOLD, MODEL, Scoring, evaluate_run
from foxhunt.evaluate.plot import FLAT_GATE
from foxhunt.evaluate.plot_positions import (
    MAX_POINTS,
    positions_figure,
    positions_picture,
    render_positions_png,
)
from foxhunt.train.fold_selection import FoldSelection

MINUTE = 60_000_000_000
T0 = np.datetime64("2024-01-01T00:00", "ns").astype(np.int64)


def small_run(val_rows: int, flat_fold: int | None = None):
    """Three folds of `val_rows` validation bars each; the model trades the sign of feature 5 (flat in `flat_fold`)."""
    rng = np.random.default_rng(0)
    n = 1000 + 3 * val_rows
    features = torch.from_numpy(rng.normal(size=(n, len(FEATURE_NAMES))).astype(np.float32))
    targets = torch.from_numpy(rng.normal(2e-5, 4e-4, size=(n, 4)).astype(np.float32))
    timestamp = T0 + np.arange(n, dtype=np.int64) * MINUTE
    folds = [FoldRange(k, val_rows * k, 1000 + val_rows * k, 1000 + val_rows * k, 1000 + val_rows * (k + 1), 0.0)
             for k in range(3)]  # fmt: skip
    model = {f.fold: torch.sign(features[f.val_slice, 5]) for f in folds}
    if flat_fold is not None:
        model[flat_fold] = torch.zeros_like(model[flat_fold])
    return evaluate_run(features, targets, timestamp, folds, model, Scoring(resamples=0))


def drawn(fig) -> dict:
    return {a.get_gid(): a for ax in fig.axes for a in [*ax.lines, *ax.texts, *ax.collections] if a.get_gid()}


def test_the_position_line_is_each_bars_position_over_its_timestamps():
    run = small_run(300)
    lines = drawn(positions_figure(positions_picture(run), "t"))
    record = run.records[MODEL]
    assert np.array_equal(lines["positions"].get_ydata(), record.positions)
    assert np.array_equal(lines["positions"].get_xdata(), record.timestamp.astype("datetime64[ns]"))


def test_a_long_record_draws_the_mean_position_of_each_bucket_of_bars():
    run = small_run(1500)  # 4,500 bars: more than MAX_POINTS
    lines = drawn(positions_figure(positions_picture(run), "t"))
    positions = run.records[MODEL].positions
    starts = np.linspace(0, positions.size, MAX_POINTS, endpoint=False).astype(np.int64)
    ends = np.append(starts[1:], positions.size)
    means = [positions[a:b].mean() for a, b in zip(starts, ends, strict=True)]
    assert np.allclose(lines["positions"].get_ydata(), means)
    assert "position range" in lines


def test_the_wealth_lines_are_the_model_and_buy_and_hold_net_wealth():
    run = small_run(300)
    lines = drawn(positions_figure(positions_picture(run), "t"))
    for label, name in (("model", MODEL), ("buy and hold", BUY_AND_HOLD)):
        wealth = np.exp(np.cumsum(run.records[name].pnl(run.cost_per_unit, run.execution)))
        assert np.allclose(lines[f"{label} wealth"].get_ydata(), wealth)


def test_a_flat_fold_is_said_in_words_and_a_trading_one_is_not():
    run = small_run(300, flat_fold=1)
    selections = {k: FoldSelection(0, 1.0, flat=k == 1) for k in range(3)}
    fig = positions_figure(positions_picture(run, selections), "t")
    texts = drawn(fig)
    assert texts["flat fold 1"].get_text() == f"fold 1\n{FLAT_GATE}"
    assert "flat fold 0" not in texts and "flat fold 2" not in texts
    assert render_positions_png(positions_picture(run, selections), "t")[:4] == b"\x89PNG"


def test_a_real_run_writes_positions_png(quick_run):
    assert (quick_run.out / "positions.png").read_bytes()[:4] == b"\x89PNG"
