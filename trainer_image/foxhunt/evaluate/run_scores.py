"""A run's scoring: how it scores (`run_scoring`), each fold's window as it completes, the stitched record
at the end.

`foxhunt.evaluate.evaluation` holds the statistics; this module applies them to a run. A fold's greedy
validation positions are scored beside the baselines (fitted and traded on the run's device) right
after the fold trains, and saved as `fold_N/positions.npy` (int8, −1/0/1, one per validation bar:
`records.positions_bytes`).
The stitched record is built at the end of the run from those positions, so a resumed run reads the
folds it does not retrain from their files and its evaluation equals an uninterrupted run's, bit for
bit on the CPU: nothing is re-run but the baselines, which are deterministic functions of the data.

The bootstrap is seeded with the run's seed; `foxhunt evaluate` scores a saved run with the same
seed, so on the run's own fxcache it reproduces the run's figures exactly where it scores on the run's device
(a GPU run scores on the GPU: `evaluate.series`; rescored on the CPU its figures agree to 1e-9).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from foxhunt.config import EvalConfig
from foxhunt.evaluate.evaluation import (
    MODEL,
    RunEvaluation,
    Scoring,
    WindowEvaluation,
    evaluate_run,
    evaluate_window,
    host_array,
    window_records,
)
from foxhunt.evaluate.execution import ExecutionRows
from foxhunt.evaluate.score_memo import ScoreMemo
from foxhunt.evaluate.series import draw_blocks

BaselinePositions = Mapping[str, object]  # baseline name → positions over a validation window


def run_scoring(config: EvalConfig, seed: int, data=None) -> Scoring:
    """How a run scores its records: its evaluation costs, the bootstrap seeded with the run's seed, the
    execution model's per-row costs over `data` (the loaded arrays: timestamp, targets, features), and on
    the data's CUDA device when it has one (the series' figures to 1e-9 of the host's, `evaluate.series`)."""
    device = getattr(getattr(data, "features", None), "device", None)
    return Scoring(
        cost=config.cost,
        spread=config.spread,
        seed=seed,
        execution=execution_rows(config, data),
        device=str(device) if device is not None and device.type == "cuda" else None,
    )


def execution_rows(config: EvalConfig, data) -> ExecutionRows | None:
    """The execution model of `config` over the whole loaded data; None when it adds nothing to the flat costs."""
    from foxhunt.data.features import FEATURE_NAMES
    from foxhunt.evaluate import execution

    settings = config.execution_settings()
    if settings.is_plain:
        return None
    if data is None:
        raise ValueError("the execution model needs the loaded data")
    body = None
    if settings.fill == "next_open":
        body = host_array(data.features[:, FEATURE_NAMES.index("bar_body")])
    return execution.rows(settings, data.timestamp, host_array(data.targets[:, 0]), body, config.spread)


def fold_baselines(features, targets, fold_range, scoring: Scoring) -> dict[str, object]:
    """Every baseline's positions over the fold's validation window, on the features' device."""
    from foxhunt.evaluate import baselines  # torch: imported where the baselines are computed

    return dict(baselines.fold_baselines(features, targets, fold_range, scoring.cost_per_unit))


def memo_baselines(
    features, targets, fold_range, scoring: Scoring, memo: ScoreMemo | None
) -> dict[str, object]:
    """The fold window's baselines (`fold_baselines`), fitted once per window and cost where `memo` keeps
    them: the seeds of a run, the trials of a search and a resumed run's stitched records share one fit."""
    key = (fold_range.fold, fold_range.train_start, fold_range.train_end, fold_range.val_start,
           fold_range.val_end, scoring.cost_per_unit)  # fmt: skip
    others = None if memo is None else memo.fold_baselines.get(key)
    if others is None:
        others = fold_baselines(features, targets, fold_range, scoring)
        if memo is not None:
            memo.fold_baselines[key] = others
    return others


def evaluate_fold(
    features,
    targets,
    timestamp: np.ndarray,
    fold_range,
    positions,
    scoring: Scoring,
    memo: ScoreMemo | None = None,
) -> tuple[WindowEvaluation, dict[str, object]]:
    """The model's validation positions and the baselines' over one fold's window, scored (records
    `memo` holds are looked up); and the baselines' positions (the stitched record reuses them).

    The baselines depend on the data, the fold's rows and the cost only: `memo` keeps them, so the
    members of a population and the trials of a search fit them once per fold window, not once each."""
    others = memo_baselines(features, targets, fold_range, scoring, memo)
    if scoring.device is not None:
        # The host draws the window's bootstrap blocks while the device still fits the baselines (read below).
        own = {"resamples": scoring.resamples, "block": scoring.block, "seed": scoring.seed}
        draw_blocks(fold_range.val_rows, **own)
    named = {MODEL: positions, **others}
    records = window_records(fold_range.fold, fold_range.val_start, named, timestamp, targets[:, 0])
    return evaluate_window(records, scoring, fold_range.fold, memo), others


def stitched_evaluation(
    features,
    targets,
    timestamp: np.ndarray,
    folds: Sequence,
    positions: Mapping[int, object],
    scoring: Scoring,
    baselines: Mapping[int, BaselinePositions] | None = None,
    memo: ScoreMemo | None = None,
    windows: Mapping[int, WindowEvaluation] | None = None,
) -> RunEvaluation:
    """Every fold with positions, and the stitched record; baselines not given are computed here (once
    per fold window where `memo` holds them: a resumed run's seeds share the fit), records `memo` holds
    are looked up, and the folds' evaluations in `windows` are taken as they are (`evaluate_run`)."""
    known = dict(baselines or {})
    for fold_range in folds:
        if fold_range.fold in positions and fold_range.fold not in known:
            known[fold_range.fold] = memo_baselines(features, targets, fold_range, scoring, memo)
    return evaluate_run(
        features, targets, timestamp, folds, positions, scoring, baselines=known, memo=memo, windows=windows
    )
