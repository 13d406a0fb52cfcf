"""Out-of-sample evaluation: per-fold and stitched records, their metrics, baselines beside the model.

Conventions (one place, every number in the reports follows them):

* A **record** is a run of bars in time order: the position held at each bar (−1, 0, 1, held
  from the bar's close to the next one's) and the bar's 1-bar forward log return (target
  column 0). A bar's gross P&L is position × return, in log-return units like the trainer's
  reward.
* **Costs**: each unit of position change costs `cost + spread / 2` (the spread is quoted
  bid-to-ask, and one unit of change crosses half of it). Net P&L = gross P&L − that cost ×
  |Δposition|. Every fold's window is entered from flat at its first bar, which pays the entry;
  closing at the window's end is not charged (the trainer's own accounting).
* **Stitching**: the folds' validation windows become one record in time order. Where windows
  overlap (step shorter than the validation length), a bar belongs to the latest fold whose
  window started at or before it: the most recently trained model trades it (between folds that
  start on the same bar, the later fold). Each fold's share of the record is a *segment*. The
  **handover** between two segments on consecutive rows costs the actual change from the last
  position of one to the first of the next (one continuous account changes models, not positions
  for nothing); a segment after a gap (rows no fold traded) is entered from flat.
* **Annualisation**: periods per year = the instrument's bars per year over the whole loaded data,
  (rows − 1) / (last − first timestamp in years), the same for every window: where a window's edges
  fall (a weekend, a holiday) does not change it.
* Sharpe statistics are in `foxhunt.evaluate.sharpe` (per-period, population std); reports annualise the
  Sharpe, its standard errors and its interval by sqrt(periods per year).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from foxhunt.config import trading_cost
from foxhunt.evaluate import sharpe as sr
from foxhunt.evaluate.execution import ExecutionRows
from foxhunt.evaluate.metrics import Evaluation, Metrics, SeriesFigures  # callers import them from here
from foxhunt.evaluate.records import (
    Record,
    fold_record,  # noqa: F401 (callers import it from here)
    host_array,
    record_key,
    stitch,  # noqa: F401 (callers import it from here)
    stitch_policies,
    window_records,
)
from foxhunt.evaluate.series import series_figures, stacked_figures
from foxhunt.evaluate.standing import Standing  # its own module; the reports import it from here

MODEL = "model"
BUY_AND_HOLD = "buy_and_hold"


@dataclass(frozen=True)
class Scoring:
    """How records are scored: the evaluation costs and the bootstrap (fixed for a run, never searched)."""

    cost: float = 1e-4  # per unit of position change, log-return units (1 bp)
    spread: float = 0.0  # bid-ask spread, log-return units; half of it is paid per unit of change
    resamples: int = 1000  # bootstrap resamples; 0 skips the interval
    level: float = 0.95  # two-sided level of the bootstrap interval
    block: int = 0  # bootstrap block length in bars; 0: round(T^(1/3))
    seed: int = 0  # seed of the bootstrap's block starts
    execution: ExecutionRows | None = None  # per-row costs and fills of the run's execution model
    device: str | None = None  # None: a window's series scored on the host; a torch device: there (to 1e-9)

    def __post_init__(self) -> None:
        for name in ("cost", "spread"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} {getattr(self, name)}: must be ≥ 0")
        if not 0 < self.level < 1:
            raise ValueError(f"level {self.level}: must lie in (0, 1)")
        if self.resamples < 0 or self.block < 0:
            raise ValueError(f"resamples {self.resamples}, block {self.block}: must be ≥ 0")

    @property
    def cost_per_unit(self) -> float:
        """What one unit of position change costs: cost + spread / 2."""
        return trading_cost(self.cost, self.spread)


def record_metrics(
    record: Record,
    pnl: np.ndarray,
    scoring: Scoring,
    benchmark_per_period: float = 0.0,
    draws: np.ndarray | None = None,
    turnover: float | None = None,
    figures: SeriesFigures | None = None,
) -> Metrics:
    """The metrics of one P&L series of `record` (gross or net); `draws`: its bootstrap Sharpe ratios
    (`bootstrap_draws`), `turnover`: its total |Δposition|, `figures`: its `series_figures`, when already
    computed."""
    n = pnl.size
    periods = record.periods_per_year()
    root = math.sqrt(periods)
    f = series_figures(pnl, record.positions != 0) if figures is None else figures
    per_period = f.sharpe

    def psr(benchmark: float) -> float:
        if f.constant:
            return float(per_period > benchmark)
        return sr.probabilistic_sharpe_ratio(per_period, benchmark, n, f.skewness, f.kurtosis)

    if draws is None:
        draws = bootstrap_draws(pnl, scoring)
    low, high = sr.percentile_interval(draws, scoring.level)
    changes = record.position_changes.sum() if turnover is None else turnover
    return Metrics(
        n_bars=n,
        periods_per_year=periods,
        sharpe=per_period * root,
        sharpe_per_period=per_period,
        sharpe_se=0.0 if f.constant else sr.lo_standard_error(per_period, n) * root,
        sharpe_se_hac=f.hac_error * root,
        sharpe_ci_low=low * root,
        sharpe_ci_high=high * root,
        psr_zero=psr(0.0),
        psr_benchmark=psr(benchmark_per_period),
        benchmark_sharpe=benchmark_per_period * root,
        skewness=f.skewness,
        kurtosis=f.kurtosis,
        log_return=f.log_return,
        total_return=math.expm1(f.log_return),
        annual_return=math.expm1(f.log_return / n * periods) if n else 0.0,
        max_drawdown=f.max_drawdown,
        turnover=float(changes),
        turnover_per_year=float(changes) / n * periods if n else 0.0,
        exposure=float(np.abs(record.positions).mean()) if n else 0.0,
        hit_rate=f.hit_rate,
    )


def bootstrap_draws(pnl: np.ndarray, scoring: Scoring) -> np.ndarray:
    """The per-period Sharpe ratios of `scoring`'s block-bootstrap resamples of one P&L series (the same
    blocks for every series of one length, so a paired test subtracts two series' draws)."""
    return sr.block_bootstrap_sharpes(
        pnl, resamples=scoring.resamples, block=scoring.block, seed=scoring.seed
    )


@dataclass(frozen=True)
class Scored:
    """A record's evaluation with its net P&L's bootstrap draws (and the P&L itself, where it is kept), which
    the paired tests reuse."""

    evaluation: Evaluation
    net_draws: np.ndarray
    net_pnl: np.ndarray | None = None  # None where a memo keeps the record but not its P&L (8 bytes a bar)


def score_record(record: Record, scoring: Scoring, benchmark: Evaluation | None = None) -> Scored:
    """`score`, keeping the net P&L and its bootstrap draws."""
    return score_records({"": record}, scoring, benchmark)[""]


def score_records(
    records: Mapping[str, Record], scoring: Scoring, benchmark: Evaluation | None = None
) -> dict[str, Scored]:
    """`score_record` of each record (all of one dataset), by name: the gross and net P&L of every distinct
    record of one length scored together (`series.stacked_figures`, on `scoring.device`), each figure as if
    scored alone.

    Identical records (`record_key`: a model that stays flat, two baselines that agree) are scored once, so
    the stack holds the same records whether or not a `ScoreMemo` filters them: a device's reduction rounds
    by the stack's shape, and a run and `foxhunt evaluate` then agree bit for bit."""
    first: dict[tuple, str] = {}
    keys = {name: first.setdefault(record_key(record), name) for name, record in records.items()}
    scored = _score_distinct({name: records[name] for name in first.values()}, scoring, benchmark)
    return {name: scored[keys[name]] for name in records}


def _score_distinct(
    records: Mapping[str, Record], scoring: Scoring, benchmark: Evaluation | None
) -> dict[str, Scored]:
    gross_bench = benchmark.gross.sharpe_per_period if benchmark else 0.0
    net_bench = benchmark.net.sharpe_per_period if benchmark else 0.0
    series = {}
    for name, record in records.items():
        net = record.pnl(scoring.cost_per_unit, scoring.execution)
        series[name] = (record.gross_pnl(scoring.execution), net, record.position_changes.sum())
    draws: dict[str, np.ndarray] = {}
    figures: dict[str, list[SeriesFigures]] = {}
    for length in {len(record) for record in records.values()}:
        names = [name for name, record in records.items() if len(record) == length]
        rows = [pnl for name in names for pnl in series[name][:2]]  # gross, net of each record in turn
        in_market = [mask for name in names for mask in [records[name].positions != 0] * 2]
        own = {"resamples": scoring.resamples, "block": scoring.block, "seed": scoring.seed}
        found, stacked = stacked_figures(np.stack(rows), np.stack(in_market), device=scoring.device, **own)
        draws.update(zip(names, stacked.reshape(len(names), 2, -1), strict=True))
        figures.update((name, found[2 * i : 2 * i + 2]) for i, name in enumerate(names))
    out = {}
    for name, record in records.items():
        gross, net, turnover = series[name]
        (gross_draws, net_draws), (gross_figures, net_figures) = draws[name], figures[name]
        evaluation = Evaluation(
            gross=record_metrics(record, gross, scoring, gross_bench, gross_draws, turnover, gross_figures),
            net=record_metrics(record, net, scoring, net_bench, net_draws, turnover, net_figures),
        )
        out[name] = Scored(evaluation, net_draws, net)
    return out


def score(record: Record, scoring: Scoring, benchmark: Evaluation | None = None) -> Evaluation:
    """Gross and net metrics of `record`; PSR against `benchmark`'s Sharpe at the same cost level (0 if none)."""
    return score_record(record, scoring, benchmark).evaluation


def compare(
    model: Evaluation,
    baselines: Mapping[str, Evaluation],
    records: Mapping[str, Record],
    scoring: Scoring,
    scored: Mapping[str, Scored] | None = None,
) -> dict[str, Standing]:
    """The model against each baseline by the paired test of their net Sharpe difference on the same bars;
    `scored` (by policy) supplies net P&L and bootstrap draws already computed."""
    from foxhunt.evaluate import paired

    def stream(name: str) -> tuple[np.ndarray, np.ndarray | None]:
        found = scored.get(name) if scored is not None else None
        pnl = found.net_pnl if found is not None else None
        if pnl is None:
            pnl = records[name].pnl(scoring.cost_per_unit, scoring.execution)
        return pnl, found.net_draws if found is not None else None

    out = {}
    m = model.net
    model_pnl, model_draws = stream(MODEL)
    model_sharpe = sr.sharpe_ratio(model_pnl)  # once, not once per baseline
    root = math.sqrt(m.periods_per_year)
    streams = {name: stream(name) for name in baselines}
    relatives = paired.relative_to_each(model_pnl, [pnl for pnl, _ in streams.values()], m.periods_per_year)
    for (name, evaluation), rel in zip(baselines.items(), relatives, strict=True):
        b = evaluation.net.sharpe
        other, other_draws = streams[name]
        draws = None if model_draws is None or other_draws is None else (model_draws, other_draws)
        test = paired.sharpe_difference(
            model_pnl,
            other,
            resamples=scoring.resamples,
            level=scoring.level,
            block=scoring.block,
            seed=scoring.seed,
            draws=draws,
            sharpes=(model_sharpe, sr.sharpe_ratio(other)),
        )
        out[name] = Standing(
            baseline=name,
            model_sharpe=m.sharpe,
            baseline_sharpe=b,
            difference=m.sharpe - b,
            difference_ci_low=test.ci_low * root,
            difference_ci_high=test.ci_high * root,
            p_value=test.p_value,
            alpha=rel.alpha,
            beta=rel.beta,
            information_ratio=rel.information_ratio,
            verdict=test.verdict,
        )
    return out


def best_baseline(baselines: Mapping[str, Evaluation]) -> str:
    """The baseline with the highest net Sharpe (ties: the first named)."""
    return max(baselines, key=lambda name: baselines[name].net.sharpe)


@dataclass(frozen=True)
class WindowEvaluation:
    """The model and the baselines on one window (a fold's, or the stitched record with fold −1)."""

    fold: int
    start_ns: int
    end_ns: int  # the last bar's timestamp
    n_bars: int
    policies: dict[str, Evaluation]  # MODEL first, then the baselines
    standings: dict[str, Standing]
    best_baseline: str


class RecordsScorer(Protocol):
    """What `evaluate_window` and `evaluate_run` look scores up in (`score_memo.ScoreMemo`)."""

    def score_records(
        self, records: Mapping[str, Record], scoring: Scoring, benchmark: Evaluation | None = None
    ) -> dict[str, Scored]: ...


def evaluate_window(
    records: Mapping[str, Record], scoring: Scoring, fold: int = -1, memo: RecordsScorer | None = None
) -> WindowEvaluation:
    """Score the model's and the baselines' records of one window; PSR against buy-and-hold.

    With `memo`, records it has scored before (the same baselines in every trial) are looked up.
    """
    scorer = memo.score_records if memo is not None else score_records
    bench = scorer({BUY_AND_HOLD: records[BUY_AND_HOLD]}, scoring)[BUY_AND_HOLD]
    others = scorer(
        {name: rec for name, rec in records.items() if name != BUY_AND_HOLD}, scoring, bench.evaluation
    )
    scored = {name: bench if name == BUY_AND_HOLD else others[name] for name in records}
    policies = {name: s.evaluation for name, s in scored.items()}
    baselines = {name: ev for name, ev in policies.items() if name != MODEL}
    model_record = records[MODEL]
    return WindowEvaluation(
        fold=fold,
        start_ns=int(model_record.timestamp[0]),
        end_ns=int(model_record.timestamp[-1]),
        n_bars=len(model_record),
        policies=policies,
        standings=compare(policies[MODEL], baselines, records, scoring, scored),
        best_baseline=best_baseline(baselines),
    )


@dataclass(frozen=True)
class RunEvaluation:
    """Every fold's window, the stitched record's evaluation, and the stitched records (for the picture)."""

    folds: list[WindowEvaluation]
    stitched: WindowEvaluation
    records: dict[str, Record]  # by policy, MODEL first
    cost_per_unit: float  # what the net figures paid per unit of position change
    execution: ExecutionRows | None = None  # the execution model's per-row costs and fills, if any


def evaluate_run(
    features,
    targets,
    timestamp: np.ndarray,
    folds: Sequence,
    model_positions: Mapping[int, object],
    scoring: Scoring,
    *,
    baselines: Mapping[int, Mapping[str, object]] | None = None,
    ridge_lambda: float | None = None,
    memo: RecordsScorer | None = None,
    windows: Mapping[int, WindowEvaluation] | None = None,
) -> RunEvaluation:
    """Evaluate the model's validation positions per fold and stitched, beside the baselines.

    `features`/`targets` are the loaded arrays (torch tensors on the run's device, or numpy),
    `folds` the run's `FoldRange`s, `model_positions[fold]` the positions over that fold's
    validation window. `baselines[fold]` may carry precomputed baseline positions (trials reuse
    them); otherwise `baselines.fold_baselines` computes them on the device. `memo` looks up the
    windows already scored (each fold's, as it ended); `windows[fold]`, a fold's evaluation as it ended
    (of these positions beside these baselines, under this scoring), is taken as it is.
    """
    from foxhunt.evaluate import baselines as base  # torch: only where baselines are computed

    returns = host_array(targets[:, 0])  # one transfer serves every fold and policy
    by_policy: dict[str, list[Record]] = {}
    scored: list[WindowEvaluation] = []
    for fold_range in folds:
        if fold_range.fold not in model_positions:
            continue
        if baselines is not None:
            others = baselines[fold_range.fold]
        else:
            lam = base.RIDGE_LAMBDA if ridge_lambda is None else ridge_lambda
            others = base.fold_baselines(
                features, targets, fold_range, scoring.cost_per_unit, ridge_lambda=lam
            )
        positions = {MODEL: model_positions[fold_range.fold], **others}
        records = window_records(fold_range.fold, fold_range.val_start, positions, timestamp, returns)
        known = None if windows is None else windows.get(fold_range.fold)
        scored.append(
            known if known is not None else evaluate_window(records, scoring, fold_range.fold, memo)
        )
        for name, record in records.items():
            by_policy.setdefault(name, []).append(record)
    if not scored:
        raise ValueError("no fold has model positions to evaluate")
    stitched = stitch_policies(by_policy)
    return RunEvaluation(
        folds=scored,
        stitched=evaluate_window(stitched, scoring, memo=memo),
        records=stitched,
        cost_per_unit=scoring.cost_per_unit,
        execution=scoring.execution,
    )
