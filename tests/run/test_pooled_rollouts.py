"""A fold of a pooled walk (`select_pool` pooled) rolls its policy over the validation window once: the
pooled choice rolls the candidate out for its out-of-sample evidence, and the fold's record (its
evaluation and `positions.npy`) takes those positions instead of rolling the kept policy out again."""

from __future__ import annotations

from support.pooled_walks import CHURNING_POOLED, DAY_ROWS, arrays_folds, selections, walk
from support.signal_arrays import signal_arrays

from foxhunt.config import FoldConfig
from foxhunt.train import member_policy

# Two folds: 4 training days (a quarter of them the selection tail, 1 day), 3 validation days.
FOLDS = FoldConfig(train_days=4.0, val_days=3.0, step_days=2.0, max_folds=2)


def test_each_fold_of_a_pooled_walk_rolls_its_policy_over_validation_once(tmp_path, monkeypatch):
    arrays = signal_arrays(10 * DAY_ROWS, seed=0)
    folds = arrays_folds(arrays, FOLDS)
    rolled: list[int] = []  # the rows of every greedy rollout of the trainer's policies
    real = member_policy.greedy_rollout

    def counted(net, features, mean, std):
        rolled.append(len(features))
        return real(net, features, mean, std)

    monkeypatch.setattr(member_policy, "greedy_rollout", counted)
    walked = walk(arrays, folds, [CHURNING_POOLED], [0], 2, str(tmp_path / "walk"))
    val_rows = {f.val_rows for f in folds}
    assert len(folds) == 2 and len(val_rows) == 1 and min(rolled) > 0
    assert rolled.count(val_rows.pop()) == len(folds)  # once per fold, for the evidence and the record
    assert all("pooled" in s for s in selections(walked).values())
