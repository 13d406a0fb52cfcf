"""Walks over several folds on the CPU with the pooled trading decision (`select_pool` pooled): the data
(tests/support/signal_arrays.py over many days), a population walked by `run.walk.walk_folds` as a run
walks it, and what each fold decided (its report.json `selection`).

The fold baselines (ridge, MLPs: most of a small fold's seconds) are replaced by buy-and-hold and flat
alone while walking: no decision reads them, and the scoring of the model's window is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pytest
import torch

from foxhunt.config import DQNConfig, EvalConfig, FoldConfig
from foxhunt.data.folds import FoldRange, generate_walk_forward_indices
from foxhunt.evaluate import run_scores
from foxhunt.evaluate.run_scores import run_scoring
from foxhunt.run.fold import FoldOutcome
from foxhunt.run.walk import Walked, WalkHooks, walk_folds
from foxhunt.train import DQNTrainer, to_device
from support.signal_arrays import SIGMA, SignalArrays, forward_sums

EVAL_COST = EvalConfig().cost  # the cost that scores the tails and the validation windows (1 bp)
DAY_ROWS = 24 * 60  # minute bars a day (the fixture's bars are a minute apart, without gaps)


def arrays_folds(arrays: SignalArrays, folds: FoldConfig) -> list[FoldRange]:
    """The walk-forward folds over the arrays' timestamps (the same for every redraw of their bars)."""
    return generate_walk_forward_indices(arrays.timestamp, folds)


def plain_baselines(features, targets, fold_range: FoldRange, scoring) -> dict[str, object]:
    """Buy-and-hold and flat over the fold's validation window: the baselines the window's scoring needs."""
    ones = torch.ones(fold_range.val_rows)
    return {"buy_and_hold": ones, "flat": torch.zeros_like(ones)}


def walk(
    arrays: SignalArrays,
    folds: Sequence[FoldRange],
    configs: Sequence[DQNConfig],
    member_seeds: Sequence[int],
    epochs: int,
    out: str,
    taken_over: Callable[[FoldRange], Mapping[int, FoldOutcome] | None] | None = None,
) -> Walked:
    """Walk `folds` with a fresh CPU trainer, one member per config (member i from `member_seeds[i]`),
    each writing under `out`/member_i; scored as a run scores (run_scoring of EvalConfig(), seed 0)."""
    data = to_device(arrays.features, arrays.targets, arrays.timestamp, torch.device("cpu"))
    trainer = DQNTrainer(
        data,
        list(configs),
        max_train_rows=max(f.train_rows for f in folds),
        seed=0,
        eval_cost=EVAL_COST,
        diagnostics=False,
        member_seeds=list(member_seeds),
    )
    hooks = WalkHooks(progress=lambda message: None)
    if taken_over is not None:
        hooks.taken_over = taken_over
    members = {i: f"{out}/member_{i}" for i in range(len(configs))}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run_scores, "fold_baselines", plain_baselines)
        return walk_folds(trainer, folds, members, epochs, run_scoring(EvalConfig(), 0, data), hooks=hooks)


def selections(walked: Walked, member: int = 0) -> dict[int, dict]:
    """Member `member`'s `selection` record per fold, as report.json holds it."""
    return {
        fold: {} if o.report.selection is None else o.report.selection.to_dict()
        for fold, o in walked.outcomes[member].items()
    }


def decision(selection: dict) -> dict:
    """What a fold decided on: the selection record less the out-of-sample window it recorded for later
    folds (its own validation, which no decision of the fold reads)."""
    return {k: v for k, v in selection.items() if k != "out_of_sample"}


def redrawn_from(arrays: SignalArrays, row: int, seed: int = 99) -> SignalArrays:
    """`arrays` with every bar from `row` on redrawn, as other bars would be: the 1-bar returns from
    `row` on (the fixture's noise, without the drift), the targets recomputed from
    them (so the rows before `row` whose forward sums reach past it change too) and the features from
    `row` on drawn again."""
    rng = np.random.default_rng(seed)
    returns = arrays.returns.copy()
    returns[row:] = SIGMA * rng.standard_normal(len(returns) - row)
    features = arrays.features.copy()
    features[row:] = rng.standard_normal(features[row:].shape).astype(np.float32)
    return SignalArrays(
        features=features,
        targets=np.ascontiguousarray(forward_sums(returns), dtype=np.float32),
        timestamp=arrays.timestamp,
        regime=arrays.regime,
        expected=arrays.expected,
        returns=returns,
    )


# A small learner that churns (its Sharpes are far below 0), with the gate and the guard lowered to its
# level so that some folds trade and some stay flat: both kinds of decision get compared.
CHURNING_POOLED = DQNConfig(
    hidden=16,
    batch_size=256,
    lr=1e-3,
    cost=2e-4,
    steps_per_epoch=20,
    compile=False,
    select_pool="pooled",
    select_min_sharpe=-150.0,
    select_pool_guard=-200.0,
)
