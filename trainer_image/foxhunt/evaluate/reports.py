"""The typed reports of a run: what `fold_N/report.json` and `summary.json` hold.

These dataclasses are the one contract that the JSON files, the printed table, the metrics and the
picture read. `to_dict()` gives the JSON shape (keys unchanged since the first release; derived
figures such as `train_rows` and `final_loss` are written for readers of the files, not read back);
`from_dict()` reads it again, which is how a resumed run takes over the folds it does not retrain.

The evaluation (`foxhunt.evaluate.evaluation`) has one place in the files: each fold's window under
`evaluation` in `fold_N/report.json` (and so in `summary.json`'s folds), the stitched record under
`stitched` in `summary.json`. `validation` is the short form of the fold's `evaluation`: the model's
and each baseline's figures after costs, as earlier releases wrote them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace

from foxhunt.config import PHASES, RUN_ENDINGS
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.evaluation import MODEL, Evaluation, Metrics, Standing, WindowEvaluation
from foxhunt.evaluate.supervised import oracle_record
from foxhunt.redaction import scrub_record
from foxhunt.train.epoch_figures import EpochFigures
from foxhunt.train.fold_selection import FoldSelection

RUN_STATUSES: tuple[str, ...] = ("running", *RUN_ENDINGS)


def window_to_dict(window: WindowEvaluation) -> dict:
    """The JSON shape of a window's evaluation; `start`/`end` (ISO-8601 UTC) are for readers, not read back."""
    from foxhunt.data.bars import iso_utc

    return {"start": iso_utc(window.start_ns), "end": iso_utc(window.end_ns), **asdict(window)}


def _not_finite_as_nan(figures: dict) -> dict:
    """A figure the file holds as null (strict JSON has no NaN: foxhunt.strict_json) read as NaN again."""
    return {key: math.nan if value is None else value for key, value in figures.items()}


def window_from_dict(data: dict) -> WindowEvaluation:
    """Read what `window_to_dict` wrote (null figures as NaN)."""
    return WindowEvaluation(
        fold=int(data["fold"]),
        start_ns=int(data["start_ns"]),
        end_ns=int(data["end_ns"]),
        n_bars=int(data["n_bars"]),
        policies={
            name: Evaluation(
                gross=Metrics(**_not_finite_as_nan(e["gross"])), net=Metrics(**_not_finite_as_nan(e["net"]))
            )
            for name, e in data["policies"].items()
        },
        standings={name: Standing(**_not_finite_as_nan(s)) for name, s in data["standings"].items()},
        best_baseline=data["best_baseline"],
    )


def _epoch_to_dict(epoch: EpochFigures) -> dict:
    """An epoch as report.json holds it: its figures less the tail Sharpe (the fold's `selection` holds those)."""
    return {key: value for key, value in asdict(epoch).items() if key != "tail_sharpe"}


@dataclass(frozen=True)
class FoldDates:
    """The first and last bar (inclusive) of a fold's training and validation ranges, ISO-8601 UTC."""

    train_first_bar: str
    train_last_bar: str
    val_first_bar: str
    val_last_bar: str


@dataclass(frozen=True)
class FoldReport(FoldRange):
    """One trained fold: its range (the FoldRange it extends), timings, training history, and its
    evaluation beside the baselines."""

    dates: FoldDates
    phases: dict[str, float]  # seconds per phase, in PHASES order
    fold_seconds: float
    samples_per_second: float
    steps: int
    epochs: list[EpochFigures]
    evaluation: WindowEvaluation  # the model and the baselines over the validation window, each figure once
    warnings: list[str] = field(default_factory=list)  # training diagnostics: collapse, features ignored
    # select_tail_share: the epoch chosen on the training tail, its tail Sharpe, whether the fold went flat
    selection: FoldSelection | None = None

    @property
    def range(self) -> FoldRange:
        """The fold's range alone."""
        return FoldRange(**{f.name: getattr(self, f.name) for f in fields(FoldRange)})

    @property
    def epoch_seconds(self) -> list[float]:
        return [e.seconds for e in self.epochs]

    @property
    def loss(self) -> list[float]:
        return [e.loss for e in self.epochs]

    @property
    def final_loss(self) -> float:
        return self.epochs[-1].loss if self.epochs else float("nan")

    def to_dict(self) -> dict:
        """The JSON shape of `fold_N/report.json`."""
        return {
            **self.range.to_dict(),
            "train_rows": self.train_rows,
            "val_rows": self.val_rows,
            "dates": asdict(self.dates),
            "phases": {p: self.phases[p] for p in PHASES},
            "fold_seconds": self.fold_seconds,
            "epoch_seconds": self.epoch_seconds,
            "samples_per_second": self.samples_per_second,
            "final_loss": self.final_loss,
            "loss": self.loss,
            "steps": self.steps,
            "epochs": [_epoch_to_dict(e) for e in self.epochs],
            "evaluation": window_to_dict(self.evaluation),
            "warnings": list(self.warnings),
            **({} if self.selection is None else {"selection": self.selection.to_dict()}),
        }

    @classmethod
    def from_dict(cls, data: dict) -> FoldReport:
        """Read a `fold_N/report.json` again."""
        return cls(
            fold=int(data["fold"]),
            train_start=int(data["train_start"]),
            train_end=int(data["train_end"]),
            val_start=int(data["val_start"]),
            val_end=int(data["val_end"]),
            difficulty_score=float(data["difficulty_score"]),
            dates=FoldDates(**data["dates"]),
            # A report written before the `select` phase existed counts none.
            phases={p: float(data["phases"].get(p, 0.0)) for p in PHASES},
            fold_seconds=float(data["fold_seconds"]),
            samples_per_second=float(data["samples_per_second"]),
            steps=int(data["steps"]),
            epochs=[EpochFigures(**e) for e in data["epochs"]],
            evaluation=window_from_dict(data["evaluation"]),
            warnings=list(data.get("warnings", [])),
            selection=None if data.get("selection") is None else FoldSelection.from_dict(data["selection"]),
        )


@dataclass
class RunSummary:
    """A whole run, as `summary.json` holds it: what ran, on what, every fold, and how it ended."""

    run_id: str
    model: str
    device: str
    version: str
    fxcache: str
    fxcache_checksum: str | None
    rows: int
    epochs: int
    seed: int
    trials: int
    fold_config: dict
    dqn_config: dict
    eval_config: dict
    started_at: str  # ISO-8601 UTC
    status: str = "running"  # one of RUN_STATUSES
    data_load_seconds: float = 0.0
    graph_captures: int = 0
    folds_planned: int = 0
    folds: list[FoldReport] = field(default_factory=list)
    resumed_folds: list[int] = field(default_factory=list)  # taken over, verified, from an earlier attempt
    finished_at: str | None = None
    run_seconds: float = 0.0
    push_failures: int = 0
    error: str | None = None
    precompute: dict | None = None  # the pipeline's precompute figures
    stitched: WindowEvaluation | None = None  # the folds' validation windows as one record (fold −1)
    holdout: dict | None = None  # the headline on the held-out final period (run.holdout), when asked for
    seed_spread: dict | None = None  # --seeds K > 1: the seeds' stitched Sharpe (evaluate.seed_spread)
    result: str | None = None  # --result majority: whose record `stitched` is (walk_forward._run_result)
    n_step_choice: dict | None = None  # dqn.n_step 0: what the run chose and on what (run.n_step_choice)

    def __post_init__(self) -> None:
        if self.status not in RUN_STATUSES:
            raise ValueError(f"run status {self.status!r}: expected one of {', '.join(RUN_STATUSES)}")

    @property
    def warnings(self) -> list[str]:
        """Every fold's warnings, in fold order (written to `summary.json`, derived again when read)."""
        return [w for r in self.folds for w in r.warnings]

    def to_dict(self) -> dict:
        """The JSON shape of `summary.json`; `error` and `precompute` only when set."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["warnings"] = self.warnings
        reading = flat_run_reading(self.folds, self.stitched)
        if reading is not None:  # derived, as the warnings are: words beside the figures of a flat run
            data["flat_reading"] = reading
        data["folds"] = [r.to_dict() for r in self.folds]
        data["stitched"] = None if self.stitched is None else window_to_dict(self.stitched)
        if self.stitched is not None:  # derived: the oracle, and that it was picked after the fact
            data["feature_oracle"] = oracle_record(
                {n: p.net.sharpe for n, p in self.stitched.policies.items()}
            )
        for optional in ("error", "precompute", "holdout", "seed_spread", "n_step_choice", "result"):
            if data[optional] is None:
                del data[optional]
        return scrub_record(data)  # an error text or a setting may carry a URL with a password

    @classmethod
    def from_dict(cls, data: dict) -> RunSummary:
        """Read a `summary.json` again."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["folds"] = [FoldReport.from_dict(r) for r in data.get("folds", [])]
        values["stitched"] = window_from_dict(data["stitched"]) if data.get("stitched") else None
        return cls(**values)


@dataclass(frozen=True)
class TableRow:
    """One line of the printed table: a fold's validation window, or the stitched record."""

    label: str
    first_bar: str  # ISO-8601 UTC
    last_bar: str
    bars: int
    net_return: float  # exp(net log return) − 1
    max_drawdown: float
    sharpe: float  # net, annualised
    sharpe_se: float  # Lo (2002), annualised; NaN where the report has none
    buy_and_hold: float  # its net Sharpe on the same bars
    best_baseline: str
    best_sharpe: float
    note: str = ""  # words after the figures: a fold that was flat, and why


def window_row(label: str, window: WindowEvaluation) -> TableRow:
    """The table row of a window's evaluation."""
    from foxhunt.data.bars import iso_utc

    model = window.policies[MODEL].net
    return TableRow(
        label,
        iso_utc(window.start_ns),
        iso_utc(window.end_ns),
        window.n_bars,
        model.total_return,
        model.max_drawdown,
        model.sharpe,
        model.sharpe_se,
        window.policies["buy_and_hold"].net.sharpe,
        window.best_baseline,
        window.policies[window.best_baseline].net.sharpe,
    )


def _report_row(report: FoldReport) -> TableRow:
    """A fold's row of the table, from its evaluation, with a flat fold's words."""
    return replace(window_row(str(report.fold), report.evaluation), note=flat_fold_note(report))


def evaluation_table(rows: list[TableRow]) -> str:
    """Plain text: per window its dates, bars, net return, max drawdown, Sharpe ± SE, buy-and-hold, best baseline."""
    head = (
        f"{'fold':>8}  {'validation from':<16}  {'validation to':<16}  {'bars':>9}  {'net return':>10}  "
        f"{'max dd':>7}  {'sharpe ± se':>15}  {'b&h':>7}  {'best baseline':<16}  {'sharpe':>7}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        se = f"{r.sharpe_se:6.2f}" if math.isfinite(r.sharpe_se) else f"{'n/a':>6}"
        lines.append(
            f"{r.label:>8}  {r.first_bar[:16]:<16}  {r.last_bar[:16]:<16}  {r.bars:>9,}  "
            f"{r.net_return:>+10.2%}  {r.max_drawdown:>7.2%}  {r.sharpe:>6.2f} ± {se}  {r.buy_and_hold:>7.2f}  "
            f"{r.best_baseline:<16}  {r.best_sharpe:>7.2f}" + (f"  {r.note}" if r.note else "")
        )
    return "\n".join(lines)


def holdout_row(holdout: dict) -> TableRow:
    """The table row of the held-out final period (`RunSummary.holdout`, foxhunt.run.holdout's figures)."""
    return TableRow(
        "held-out",
        holdout["start"],
        holdout["end"],
        holdout["n_bars"],
        holdout["net_return"],
        holdout["max_drawdown"],
        holdout["net_sharpe"],
        holdout["net_sharpe_se"],
        holdout["buy_and_hold_sharpe"],
        holdout["best_baseline"],
        holdout["best_baseline_sharpe"],
    )


def fold_table(summary: RunSummary) -> str:
    """The run's table: a row per fold, the stitched record's when the run has one, then the held-out headline's."""
    rows = [_report_row(r) for r in summary.folds]
    if summary.stitched is not None:
        note = "flat in every fold" if flat_run_reading(summary.folds, summary.stitched) else ""
        rows.append(replace(window_row("stitched", summary.stitched), note=note))
    if summary.holdout is not None:
        rows.append(holdout_row(summary.holdout))
    return evaluation_table(rows)


def time_line(summary: RunSummary) -> str:
    """Where the run's seconds went (`phase_time_line`); folds taken over from an earlier attempt spent their
    time there, not in this run."""
    resumed = set(summary.resumed_folds)
    trained = [(r.phases, r.fold_seconds) for r in summary.folds if r.fold not in resumed]
    seeds = summary.seed_spread is not None  # --seeds K > 1: the other seeds' reports are not these
    return phase_time_line(summary.run_seconds, summary.data_load_seconds, trained, seeds=seeds)


def phase_time_line(
    run_seconds: float,
    data_seconds: float,
    folds: Sequence[tuple[Mapping[str, float], float]],
    small: float = 0.05,
    seeds: bool = False,
) -> str:
    """Where a run's seconds went: loading the data, the `folds` trained in this process (each its phases'
    seconds and its own) by phase, largest first (those under `small` of the folds' time together), and the
    rest (the trainer's build, the run's scoring, pictures and files; with `seeds`, the first seed's folds are
    given and the other seeds' validation is in the rest)."""
    total = sum(seconds for _, seconds in folds)
    phases = {p: sum(f[p] for f, _ in folds) for p in PHASES}
    named = sorted((p for p in PHASES if phases[p] >= small * total), key=lambda p: -phases[p])
    rest = [p for p in PHASES if p not in named]
    parts = [f"{p} {phases[p]:.1f} s" for p in named]
    if rest:
        together = ", ".join(rest[:-1]) + (" and " if len(rest) > 1 else "") + rest[-1]
        parts.append(f"{together} {sum(phases[p] for p in rest):.1f} s")
    count = f"{len(folds)} fold{'' if len(folds) == 1 else 's'}"
    trained_here = f"{count} {total:.1f} s ({', '.join(parts)})" if folds else "no fold trained here"
    others = "the other seeds' validation, " if seeds else ""
    return (
        f"time: {run_seconds:.1f} s: data {data_seconds:.1f} s, {trained_here}, the rest "
        f"{run_seconds - data_seconds - total:.1f} s (trainer build, {others}the run's scoring, pictures and files)"
    )


# ---- flat folds in words ---------------------------------------------------------------------------
def _gate_words(selection: FoldSelection) -> str:
    """What the tail selection found, from a fold's selection."""
    if selection.epoch is None:
        return f"no epoch was scored on the training tail (gate {selection.gate:.2f})"
    pooled = selection.pooled
    if pooled is not None:  # select_pool pooled: the evidence of the tail and the earlier folds' windows
        words = f"pooled Sharpe {pooled.pooled_sharpe:.2f} over {len(pooled.windows)} window(s)"
        if pooled.pooled_sharpe > pooled.gate:
            return f"{words} cleared its gate, but the own tail {pooled.own_tail_sharpe:.2f} not the guard"
        return f"{words} against a gate of {pooled.gate:.2f}"
    return f"learned tail Sharpe {selection.tail_sharpe:.2f} against a gate of {selection.gate:.2f}"


def _held_nothing(report: FoldReport) -> bool:
    return report.evaluation.policies[MODEL].net.exposure == 0


def flat_fold_note(report: FoldReport) -> str:
    """A fold whose model held no position, in words (why: the tail gate, or the policy itself); "" else."""
    selection = report.selection
    if selection is not None and selection.flat:
        return f"flat: the gate found no edge; {_gate_words(selection)}"
    return "flat: the policy took no position" if _held_nothing(report) else ""


def flat_run_reading(folds: Sequence[FoldReport], stitched: WindowEvaluation | None = None) -> str | None:
    """A run whose model held no position in any fold, in words, with each fold's tail Sharpe against its
    gate; None when some fold traded, or the `stitched` result (the seeds' vote of `--result majority`) did.
    (Its PSR 0 and hit rate 0% are figures of a record with no trade, not a fault.)"""
    if not folds or not all(map(_held_nothing, folds)):
        return None
    if stitched is not None and stitched.policies[MODEL].net.exposure > 0:
        return None
    selections = [r.selection for r in folds]
    if not all(s is not None and s.flat for s in selections):
        return "flat in every fold: the policy took no position"
    gated = [s for s in selections if s is not None]  # every fold's (the check above)
    if len(folds) == 1 or any(s.pooled is not None for s in gated):
        return "flat in every fold: the gate found no edge; " + "; ".join(
            f"fold {r.fold}: {_gate_words(s)}" if len(folds) > 1 else _gate_words(s)
            for r, s in zip(folds, gated, strict=True)
        )
    figures = ", ".join(
        f"{s.tail_sharpe:.2f} against {s.gate:.2f} (fold {r.fold})"
        if s.epoch is not None
        else f"none scored, gate {s.gate:.2f} (fold {r.fold})"
        for r, s in zip(folds, gated, strict=True)
    )
    return f"flat in every fold: the gate found no edge; learned tail Sharpe {figures}"
