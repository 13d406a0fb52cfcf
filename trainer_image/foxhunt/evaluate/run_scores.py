"""A run's evaluation, wired: each fold's window as it completes, the stitched record at the end.

`foxhunt.evaluate.evaluation` holds the statistics; this module applies them to a run. A fold's greedy
validation positions are scored beside the baselines (fitted and traded on the run's device) right
after the fold trains, and saved as `fold_N/positions.npy` (int8, −1/0/1, one per validation bar).
The stitched record is built at the end of the run from those positions, so a resumed run reads the
folds it does not retrain from their files and its evaluation equals an uninterrupted run's, bit for
bit on the CPU: nothing is re-run but the baselines, which are deterministic functions of the data.

The bootstrap is seeded with the run's seed; `foxhunt evaluate` scores a saved run with the same
seed, so on the run's own fxcache it reproduces the run's figures exactly where it scores on the run's device
(a GPU run scores on the GPU: `evaluate.series`; rescored on the CPU its figures agree to 1e-9).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import numpy as np

from foxhunt import out_names
from foxhunt.config import EvalConfig
from foxhunt.evaluate.evaluation import (
    BUY_AND_HOLD,
    MODEL,
    RunEvaluation,
    ScoreMemo,
    Scoring,
    WindowEvaluation,
    evaluate_run,
    evaluate_window,
    fold_record,
    host_array,
)
from foxhunt.evaluate.execution import ExecutionRows
from foxhunt.evaluate.supervised import oracle_record
from foxhunt.train.epoch_figures import COLLAPSE_SHARE, COLLAPSED, IGNORED_AGREEMENT, EpochFigures

POSITIONS_FILE = out_names.POSITIONS
ACTION_NAMES = ("short", "flat", "long")
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
    key = (fold_range.fold, fold_range.train_start, fold_range.train_end, fold_range.val_start,
           fold_range.val_end, scoring.cost_per_unit)  # fmt: skip
    others = None if memo is None else memo.fold_baselines.get(key)
    if others is None:
        others = fold_baselines(features, targets, fold_range, scoring)
        if memo is not None:
            memo.fold_baselines[key] = others
    returns = targets[:, 0]
    records = {
        name: fold_record(fold_range.fold, fold_range.val_start, pos, timestamp, returns)
        for name, pos in {MODEL: positions, **others}.items()
    }
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
) -> RunEvaluation:
    """Every fold with positions, and the stitched record; baselines not given are computed here, and
    records `memo` holds are looked up."""
    known = dict(baselines or {})
    for fold_range in folds:
        if fold_range.fold in positions and fold_range.fold not in known:
            known[fold_range.fold] = fold_baselines(features, targets, fold_range, scoring)
    return evaluate_run(features, targets, timestamp, folds, positions, scoring, baselines=known, memo=memo)


# ---- positions on disk -----------------------------------------------------------------------------
def positions_bytes(positions) -> bytes:
    """A fold's validation positions as an int8 `.npy` file (one byte per bar)."""
    buf = io.BytesIO()
    np.save(buf, host_array(positions).astype(np.int8), allow_pickle=False)
    return buf.getvalue()


def positions_from_bytes(data: bytes) -> np.ndarray:
    """Positions (float64, −1/0/1) from what `positions_bytes` wrote."""
    return np.load(io.BytesIO(data), allow_pickle=False).astype(np.float64)


# ---- training diagnostics -------------------------------------------------------------------------
def fold_warnings(fold: int, epochs: Sequence[EpochFigures]) -> list[str]:
    """What the last epoch's diagnostics say is wrong with the fold's policy: collapse, features ignored."""
    if not epochs:
        return []
    last, found = epochs[-1], []
    if last.collapsed and last.action_shares is not None:
        share = max(last.action_shares)
        action = ACTION_NAMES[list(last.action_shares).index(share)]
        found.append(
            f"fold {fold}: {COLLAPSED}: {action} on {share:.1%} of validation "
            f"bars (warning at {COLLAPSE_SHARE:.0%})"
        )
    if last.features_ignored:
        found.append(
            f"fold {fold}: the policy ignores the features: {last.feature_agreement:.1%} of its actions "
            f"stay the same with every feature at its training mean (warning at {IGNORED_AGREEMENT:.0%})"
        )
    return found


def fold_flags(epochs: Sequence[EpochFigures]) -> tuple[bool, bool]:
    """(collapsed, ignores features) of a fold's policy after its last epoch: the tests `fold_warnings` words."""
    if not epochs:
        return False, False
    return epochs[-1].collapsed, epochs[-1].features_ignored


# ---- the stitched report as text ---------------------------------------------------------------------
def stitched_report(
    stitched: WindowEvaluation, folds: int, level: float = 0.95, flat: str | None = None
) -> list[str]:
    """The stitched record in words: the model's figures after costs, then where it stands against each baseline.

    `flat`: the words of a run whose model held no position in any fold (`reports.flat_run_reading`), said
    instead of its Sharpe, PSR and hit rate, which are the figures of a record with no trade (0), not readings.
    """
    from foxhunt.data.bars import iso_utc

    net, gross = stitched.policies[MODEL].net, stitched.policies[MODEL].gross
    lines = [
        f"stitched out-of-sample record: {iso_utc(stitched.start_ns)[:16]} → {iso_utc(stitched.end_ns)[:16]}, "
        f"{stitched.n_bars:,} bars from {folds} fold(s)",
    ]
    if flat is not None:
        lines.append(
            f"  model: {flat}; it held no position, so it has no Sharpe, PSR or hit rate to read "
            f"(return {net.total_return:+.2%})"
        )
    else:
        lines += [
            f"  model after costs: Sharpe {net.sharpe:.2f} ± {net.sharpe_se:.2f} (HAC ± {net.sharpe_se_hac:.2f}; "
            f"{level:.0%} bootstrap [{net.sharpe_ci_low:.2f}, {net.sharpe_ci_high:.2f}]), "
            f"PSR(>0) {net.psr_zero:.2f}, PSR(>buy-and-hold) {net.psr_benchmark:.2f}",
            f"  return {net.total_return:+.2%} ({net.annual_return:+.2%} a year), max drawdown "
            f"{net.max_drawdown:.2%}, turnover {net.turnover_per_year:,.0f} a year, exposure {net.exposure:.0%}, "
            f"hit rate {net.hit_rate:.1%}; before costs: Sharpe {gross.sharpe:.2f}, "
            f"return {gross.total_return:+.2%}",
        ]
    oracle = oracle_record({name: ev.net.sharpe for name, ev in stitched.policies.items()})
    if oracle is not None:
        best = oracle["net_sharpe"]
        share = f"; the model earns {net.sharpe / best:.0%} of it" if best > 0 else ""
        lines.append(
            f"  feature oracle ({oracle['label']}: {oracle['name']}): Sharpe {best:.2f} after costs{share}"
        )
    for name, standing in stitched.standings.items():
        best = " (best baseline)" if name == stitched.best_baseline else ""
        lines.append(
            f"  vs {name}{best}: its Sharpe {standing.baseline_sharpe:.2f}, model − it "
            f"{standing.difference:+.2f} (paired {level:.0%} interval [{standing.difference_ci_low:+.2f}, "
            f"{standing.difference_ci_high:+.2f}], p {standing.p_value:.2f}): {standing.verdict}"
        )
    hold = stitched.standings.get(BUY_AND_HOLD)
    if hold is not None:
        lines.append(
            f"  against buy-and-hold: alpha {hold.alpha:+.2%} a year (log), beta {hold.beta:.2f}, "
            f"information ratio {hold.information_ratio:.2f}"
        )
    lines.append(f"  verdict: {verdict_line(stitched)}")
    return lines


def verdict_line(stitched: WindowEvaluation) -> str:
    """The stitched record's verdict in one line: the model's net Sharpe against the best baseline's, by
    the paired test."""
    best = stitched.best_baseline
    standing = stitched.standings[best]
    return (
        f"model net Sharpe {standing.model_sharpe:.2f} vs best baseline {best} {standing.baseline_sharpe:.2f}: "
        f"{standing.verdict} (paired interval of the difference [{standing.difference_ci_low:+.2f}, "
        f"{standing.difference_ci_high:+.2f}])"
    )


# ---- pictures ----------------------------------------------------------------------------------------
def run_pictures(run: RunEvaluation | None, reports: Sequence, title: str) -> dict[str, bytes]:
    """`run.png` and `positions.png` (the stitched record, when there is one), `timings.png` (phase seconds
    per fold) and `learning.png` (each fold's learning curve), from the folds' reports when given."""
    from foxhunt.config import PHASES
    from foxhunt.evaluate.plot import render_run_png, run_picture
    from foxhunt.evaluate.plot_learning import render_learning_png
    from foxhunt.evaluate.plot_positions import positions_picture, render_positions_png

    pictures = {}
    selections = {r.fold: r.selection for r in reports}
    if run is not None:
        pictures[out_names.RUN_PICTURE] = render_run_png(run_picture(run, selections), title)
        pictures[out_names.POSITIONS_PICTURE] = render_positions_png(
            positions_picture(run, selections), f"{title}: positions"
        )
    if reports:
        from foxhunt.evaluate.plot import render_timings_png

        phases = {p: [r.phases[p] for r in reports] for p in PHASES}
        pictures[out_names.TIMINGS_PICTURE] = render_timings_png(
            [r.fold for r in reports], phases, f"{title}: timings"
        )
        pictures[out_names.LEARNING_PICTURE] = render_learning_png(reports, f"{title}: learning")
    return pictures
