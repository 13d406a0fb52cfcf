"""A resumed walk decides as the first did (select_pool pooled): folds an earlier attempt completed are taken
over from its output (`run.fold.load_fold`), and the later folds it trains are handed the same out-of-sample
evidence from them and decide the same, to the bit; without the taken-over folds' evidence they would not."""

from __future__ import annotations

import dataclasses

from support.pooled_walks import CHURNING_POOLED, DAY_ROWS, arrays_folds, selections, walk
from support.signal_arrays import signal_arrays

from foxhunt.config import FoldConfig
from foxhunt.run.fold import load_fold

FOLDS = FoldConfig(train_days=4.0, val_days=2.0, step_days=2.0, max_folds=4)
TAKEN = 2  # folds 0 and 1 are taken over, 2 and 3 trained again
POOLED = CHURNING_POOLED
EPOCHS = 3


def test_a_resumed_walk_hands_later_folds_the_same_evidence_and_they_decide_the_same(tmp_path):
    arrays = signal_arrays(12 * DAY_ROWS, seed=0)
    folds = arrays_folds(arrays, FOLDS)
    first_out = str(tmp_path / "first")
    first = walk(arrays, folds, [POOLED], [0], EPOCHS, first_out)

    def taken_over(fold_range):
        if fold_range.fold >= TAKEN:
            return None
        return {0: load_fold(f"{first_out}/member_0", fold_range.fold)}

    resumed = walk(arrays, folds, [POOLED], [0], EPOCHS, str(tmp_path / "resumed"), taken_over)
    before, after = selections(first), selections(resumed)
    assert list(after) == list(before) == list(range(len(folds)))
    for fold in range(TAKEN, len(folds)):
        assert after[fold] == before[fold], f"fold {fold} decided differently after the resume"
        assert (resumed.outcomes[0][fold].positions == first.outcomes[0][fold].positions).all()
    # The later folds did weigh the taken-over folds' windows.
    assert [0, "out_of_sample"] in after[TAKEN]["pooled"]["windows"]
    assert [1, "out_of_sample"] in after[TAKEN + 1]["pooled"]["windows"]


def test_a_resumed_walk_that_lost_the_taken_over_folds_evidence_would_decide_otherwise(tmp_path):
    # The control: were the taken-over folds' records missing their out-of-sample windows, the later folds
    # would pool less and their figures would differ, so the first test can fail.
    arrays = signal_arrays(12 * DAY_ROWS, seed=0)
    folds = arrays_folds(arrays, FOLDS)
    first_out = str(tmp_path / "first")
    first = walk(arrays, folds, [POOLED], [0], EPOCHS, first_out)

    def stripped(fold_range):
        if fold_range.fold >= TAKEN:
            return None
        outcome = load_fold(f"{first_out}/member_0", fold_range.fold)
        selection = dataclasses.replace(outcome.report.selection, out_of_sample=None)
        return {
            0: dataclasses.replace(outcome, report=dataclasses.replace(outcome.report, selection=selection))
        }

    resumed = walk(arrays, folds, [POOLED], [0], EPOCHS, str(tmp_path / "resumed"), stripped)
    before, after = selections(first), selections(resumed)
    assert after[TAKEN]["pooled"]["pooled_sharpe"] != before[TAKEN]["pooled"]["pooled_sharpe"]
