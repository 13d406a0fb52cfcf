"""A plain, one-series-at-a-time scoring to check the stacked one against: every resample built bar by bar.

`plain_window` scores a window's records the way the definitions read: each P&L series (gross and net of
each policy) on its own, its bootstrap resamples materialised from circular blocks and their Sharpe ratios
taken one by one, then the shared per-series figures (`record_metrics`) and the paired tests
(`compare`, `paired.sharpe_difference`) from those draws. `differences` lists the figures of two results that differ
by more than a relative tolerance.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from foxhunt.evaluate import sharpe as sr
from foxhunt.evaluate.evaluation import (
    BUY_AND_HOLD,
    MODEL,
    Evaluation,
    Scored,
    Scoring,
    WindowEvaluation,
    best_baseline,
    compare,
    record_metrics,
)
from foxhunt.evaluate.records import Record


def materialised_bootstrap(x: np.ndarray, resamples: int, block: int, seed: int) -> np.ndarray:
    """Each resample built bar by bar from circular blocks (the starts `numpy.random.default_rng(seed)`
    draws, the last block cut to T bars), then its mean over its population std (0 when it is constant)."""
    n = x.size
    if n < 2 or resamples < 1:
        return np.zeros(max(resamples, 0))
    block = min(block or sr.default_block(n), n)
    starts = np.random.default_rng(seed).integers(0, n, size=(resamples, -(-n // block)))
    bars = ((starts[:, :, None] + np.arange(block)) % n).reshape(resamples, -1)[:, :n]
    resampled = x[bars]
    std = resampled.std(axis=1)
    if not np.any(x != x[0]):
        return np.zeros(resamples)
    return np.divide(resampled.mean(axis=1), std, out=np.zeros(resamples), where=std > 0)


def plain_scored(record: Record, scoring: Scoring, benchmark: Evaluation | None) -> Scored:
    """One record's gross and net figures, each series bootstrapped on its own."""
    gross = record.gross_pnl(scoring.execution)
    net = record.pnl(scoring.cost_per_unit, scoring.execution)
    own = (scoring.resamples, scoring.block, scoring.seed)
    net_draws = materialised_bootstrap(net, *own)
    evaluation = Evaluation(
        gross=record_metrics(
            record,
            gross,
            scoring,
            benchmark.gross.sharpe_per_period if benchmark else 0.0,
            materialised_bootstrap(gross, *own),
        ),
        net=record_metrics(
            record, net, scoring, benchmark.net.sharpe_per_period if benchmark else 0.0, net_draws
        ),
    )
    return Scored(evaluation, net_draws, net)


def plain_window(records: Mapping[str, Record], scoring: Scoring, fold: int = -1) -> WindowEvaluation:
    """`evaluate_window` one series at a time, from materialised resamples."""
    bench = plain_scored(records[BUY_AND_HOLD], scoring, None)
    scored = {
        name: bench if name == BUY_AND_HOLD else plain_scored(record, scoring, bench.evaluation)
        for name, record in records.items()
    }
    policies = {name: s.evaluation for name, s in scored.items()}
    baselines = {name: ev for name, ev in policies.items() if name != MODEL}
    model = records[MODEL]
    return WindowEvaluation(
        fold=fold,
        start_ns=int(model.timestamp[0]),
        end_ns=int(model.timestamp[-1]),
        n_bars=len(model),
        policies=policies,
        standings=compare(policies[MODEL], baselines, records, scoring, scored),
        best_baseline=best_baseline(baselines),
    )


def differences(got, want, rel: float = 1e-9, path: str = "") -> list[str]:
    """Every figure of `got` that differs from `want`'s by more than `rel` (relative; absolute where the
    wanted figure is 0; two NaNs agree), named by its path through the dataclasses and mappings."""
    if dataclasses.is_dataclass(want):
        return [
            line
            for field in dataclasses.fields(want)
            for line in differences(
                getattr(got, field.name), getattr(want, field.name), rel, f"{path}.{field.name}"
            )
        ]
    if isinstance(want, Mapping):
        if list(got) != list(want):
            return [f"{path}: keys {list(got)} != {list(want)}"]
        return [line for key in want for line in differences(got[key], want[key], rel, f"{path}[{key}]")]
    if isinstance(want, float):
        if math.isnan(want) and math.isnan(got):
            return []
        if math.isclose(got, want, rel_tol=rel, abs_tol=rel if want == 0 else 0.0):
            return []
        return [f"{path}: {got!r} != {want!r}"]
    return [] if got == want else [f"{path}: {got!r} != {want!r}"]
