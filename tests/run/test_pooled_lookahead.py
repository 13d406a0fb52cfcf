"""No look-ahead in the pooled trading decision, over a whole walk (issue 34, "Prove it"): every bar at or
after fold K's validation start redrawn, a walk from scratch decides folds 0..K exactly as before, while
fold K's own out-of-sample record, which only LATER folds may weigh, does change.

The validation windows (3 days) are longer than the step (2 days), so fold K−1's out-of-sample window
runs past fold K's validation start: the look-ahead rule (`evidence.usable`, a window must end before
the validation start) is what keeps it out of fold K's decision. The second test drops that rule and
shows the same perturbation then reaches fold K's pooled figure: the first test can fail.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.pooled_walks import (
    CHURNING_POOLED,
    DAY_ROWS,
    arrays_folds,
    decision,
    redrawn_from,
    selections,
    walk,
)
from support.signal_arrays import signal_arrays

from foxhunt.config import TARGET_HORIZONS, FoldConfig
from foxhunt.train import evidence

# Folds 0..3: 4 training days (a quarter of them the selection tail), 3 validation days, a step of 2.
FOLDS = FoldConfig(train_days=4.0, val_days=3.0, step_days=2.0, max_folds=4)
K = 3  # the fold whose validation start the bars are redrawn from (the walk's last)
# A small learner that churns (its Sharpes are far below 0) with the gate and the guard lowered to its level,
# so that some folds trade and some stay flat: both kinds of decision are compared.
POOLED = CHURNING_POOLED
EPOCHS = 3


def _walks(tmp_path, name: str) -> tuple[dict[int, dict], dict[int, dict], int]:
    """Fold selections of a walk on the data and of one on the data redrawn from fold K's validation start."""
    arrays = signal_arrays(13 * DAY_ROWS, seed=0)
    folds = arrays_folds(arrays, FOLDS)
    start = folds[K].val_start
    redrawn = redrawn_from(arrays, start)
    # Targets whose forward sums end before the start are the same bars; the ones reaching past it moved.
    reach = start - max(TARGET_HORIZONS) + 1
    assert np.array_equal(redrawn.targets[:reach], arrays.targets[:reach])
    assert not np.array_equal(redrawn.targets[reach:start, -1], arrays.targets[reach:start, -1])
    base = selections(walk(arrays, folds, [POOLED], [0], EPOCHS, str(tmp_path / f"{name}_base")))
    moved = selections(walk(redrawn, folds, [POOLED], [0], EPOCHS, str(tmp_path / f"{name}_redrawn")))
    return base, moved, len(folds)


def test_bars_from_a_folds_validation_start_on_change_no_decision_of_it_or_an_earlier_fold(tmp_path):
    base, moved, count = _walks(tmp_path, "rule")
    assert count == K + 1
    assert {s["went_flat"] for s in base.values()} == {True, False}  # folds that trade and folds that do not
    for fold in range(K + 1):
        assert decision(moved[fold]) == decision(base[fold]), f"fold {fold} decided differently"
    # The redrawn bars reached fold K: its own out-of-sample record (for later folds) changed.
    assert moved[K]["out_of_sample"]["sharpe"] != base[K]["out_of_sample"]["sharpe"]
    # Fold K−1's window runs past fold K's start and changed too; fold K left it out of its decision.
    assert moved[K - 1]["out_of_sample"]["sharpe"] != base[K - 1]["out_of_sample"]["sharpe"]
    assert base[K]["pooled"]["ignored"] == 1 and [K - 1, "out_of_sample"] not in base[K]["pooled"]["windows"]


def test_without_the_look_ahead_rule_the_same_perturbation_reaches_the_folds_decision(tmp_path, monkeypatch):
    def no_time_rule(window, fold, before_ns):  # the rule less "ends strictly before the validation start"
        return window.fold < fold or (window.fold == fold and window.kind == "tail")

    monkeypatch.setattr(evidence, "usable", no_time_rule)
    base, moved, _ = _walks(tmp_path, "leak")
    assert [K - 1, "out_of_sample"] in base[K]["pooled"]["windows"]  # the overlapping window is admitted
    assert moved[K]["pooled"]["pooled_sharpe"] != pytest.approx(base[K]["pooled"]["pooled_sharpe"])
