"""The typed reports of a run: what `fold_N/report.json` and `summary.json` hold.

These dataclasses are the one contract that the JSON files, the printed table, the metrics and the
picture read. `to_dict()` gives the JSON shape (keys unchanged since the first release; derived
figures such as `train_rows` and `final_loss` are written for readers of the files, not read back);
`from_dict()` reads it again, which is how a resumed run takes over the folds it does not retrain.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from foxhunt.config import PHASES

RUN_STATUSES: tuple[str, ...] = ("running", "succeeded", "failed", "interrupted")


@dataclass(frozen=True)
class PolicyMetrics:
    """How a policy did over one window, after costs."""

    sharpe: float  # annualised with the window's bars per year
    total_return: float  # sum of per-bar log returns
    max_drawdown: float  # largest fall from a peak, as a fraction of the peak's equity
    turnover: float  # sum of |position change|, in units of position
    hit_rate: float  # share of bars with a position that made money
    gross_sharpe: float  # the Sharpe before costs
    gross_return: float  # the total log return before costs
    exposure: float  # mean |position|

    @classmethod
    def from_dict(cls, data: dict) -> PolicyMetrics:
        """Read the five figures from a dict holding at least them."""
        return cls(**{f.name: float(data[f.name]) for f in fields(cls)})


@dataclass(frozen=True)
class Validation:
    """The greedy policy over a fold's validation window, beside baselines under the same costs."""

    model: PolicyMetrics
    baselines: dict[str, PolicyMetrics]  # by name: buy_and_hold, flat, ...
    periods_per_year: float

    def to_dict(self) -> dict:
        """The model's figures at the top level, each baseline's under its name."""
        return {
            **asdict(self.model),
            **{name: asdict(m) for name, m in self.baselines.items()},
            "periods_per_year": self.periods_per_year,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Validation:
        """Read what `to_dict` wrote: every dict-valued key is a baseline."""
        baselines = {name: PolicyMetrics.from_dict(v) for name, v in data.items() if isinstance(v, dict)}
        return cls(PolicyMetrics.from_dict(data), baselines, float(data["periods_per_year"]))


@dataclass(frozen=True)
class EpochStats:
    """One training epoch of a fold."""

    epoch: int
    loss: float  # mean Huber loss of the epoch's gradient steps
    epsilon: float  # exploration probability of the epoch's collection
    steps: int  # gradient steps
    collect_seconds: float
    train_seconds: float
    samples_per_second: float  # transitions per second of the gradient steps
    q_mean: float | None = None  # mean |Q| over the epoch's batches
    q_max: float | None = None  # largest |Q| over the epoch's batches
    # Diagnostics of the greedy policy after the epoch, when the trainer keeps them:
    action_shares: list[float] | None = None  # validation bars short, flat, long
    train_sharpe: float | None = None  # in-sample net Sharpe
    val_sharpe: float | None = None  # validation net Sharpe at the evaluation cost
    feature_agreement: float | None = None  # share of actions unchanged with features at their mean

    @property
    def seconds(self) -> float:
        """Collection plus training."""
        return self.collect_seconds + self.train_seconds


@dataclass(frozen=True)
class FoldDates:
    """The first and last bar (inclusive) of a fold's training and validation ranges, ISO-8601 UTC."""

    train_first_bar: str
    train_last_bar: str
    val_first_bar: str
    val_last_bar: str


@dataclass
class FoldReport:
    """One trained fold: its ranges, timings, training history and validation."""

    fold: int
    train_start: int  # end-exclusive row indices into the fxcache
    train_end: int
    val_start: int
    val_end: int
    difficulty_score: float
    dates: FoldDates
    phases: dict[str, float]  # seconds per phase, in PHASES order
    fold_seconds: float
    samples_per_second: float
    steps: int
    epochs: list[EpochStats]
    validation: Validation

    @property
    def train_rows(self) -> int:
        return self.train_end - self.train_start

    @property
    def val_rows(self) -> int:
        return self.val_end - self.val_start

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
            "fold": self.fold,
            "train_start": self.train_start,
            "train_end": self.train_end,
            "val_start": self.val_start,
            "val_end": self.val_end,
            "difficulty_score": self.difficulty_score,
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
            "epochs": [asdict(e) for e in self.epochs],
            "validation": self.validation.to_dict(),
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
            phases={p: float(data["phases"][p]) for p in PHASES},
            fold_seconds=float(data["fold_seconds"]),
            samples_per_second=float(data["samples_per_second"]),
            steps=int(data["steps"]),
            epochs=[EpochStats(**e) for e in data["epochs"]],
            validation=Validation.from_dict(data["validation"]),
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

    def __post_init__(self) -> None:
        if self.status not in RUN_STATUSES:
            raise ValueError(f"run status {self.status!r}: expected one of {', '.join(RUN_STATUSES)}")

    def to_dict(self) -> dict:
        """The JSON shape of `summary.json`; `error` and `precompute` only when set."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["folds"] = [r.to_dict() for r in self.folds]
        for optional in ("error", "precompute"):
            if data[optional] is None:
                del data[optional]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> RunSummary:
        """Read a `summary.json` again."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["folds"] = [FoldReport.from_dict(r) for r in data.get("folds", [])]
        return cls(**values)


def fold_table(summary: RunSummary) -> str:
    """A plain-text table of the folds: validation dates, rows, phase seconds and validation Sharpe."""
    head = (
        f"{'fold':>4} {'validation from':<16} {'train':>9} {'val':>8} "
        + " ".join(f"{p:>10}" for p in PHASES)
        + f" {'sharpe':>8} {'b&h':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in summary.folds:
        v = r.validation
        lines.append(
            f"{r.fold:>4} {r.dates.val_first_bar[:16]:<16} {r.train_rows:>9,} {r.val_rows:>8,} "
            + " ".join(f"{r.phases[p]:>10.4f}" for p in PHASES)
            + f" {v.model.sharpe:>8.2f} {v.baselines['buy_and_hold'].sharpe:>8.2f}"
        )
    return "\n".join(lines)
