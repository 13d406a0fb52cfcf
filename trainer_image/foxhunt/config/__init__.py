"""Every setting of a run, with its default, unit and allowed range, checked when it is built.

Each field is declared with `setting(default, doc, ...)` (foxhunt.config.setting): the one-line doc
(with the unit) and the range live in the field's metadata, where the CLI's help, the range checks
and `describe()` read them. Building a config checks every field: a value of the wrong type is an
error, never a coercion (bool is not an int here; an int is a fine float), and a value out of range
is an error naming the field and its allowed range. This module imports nothing heavy: the CLI
parser and the workflows package read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace

from foxhunt.config.dqn import MAX_COST, DQNConfig
from foxhunt.config.dqn import MAX_N_STEP as MAX_N_STEP  # train.held_returns reads it here
from foxhunt.config.execution import FILLS, ExecutionSettings
from foxhunt.config.setting import check_fields, section, setting
from foxhunt.errors import ConfigError

# Forward-return horizons of the targets, in bars; the longest one sets the default purge gap.
TARGET_HORIZONS: tuple[int, ...] = (1, 5, 15, 60)
# The timed phases of every fold, in order: reports, metrics and the dashboard use these names. `select`:
# the epochs' tail scores and diagnostics (one computation) and the choice of the epoch a fold keeps.
PHASES: tuple[str, ...] = ("reset", "normalize", "collect", "train", "select", "validate", "checkpoint")
# How a run ends: summary.json's status and the foxhunt_run_finished label (reports and telemetry).
RUN_ENDINGS: tuple[str, ...] = ("succeeded", "failed", "interrupted")
# Nanoseconds per day, as in foxhunt.data.bars (which imports numpy; this module must not).
NS_PER_DAY = 86_400 * 10**9
NS_PER_YEAR = 365.25 * NS_PER_DAY  # the annualisation's year
# A run id is a Prometheus label value and a path component: keep it to a safe alphabet.
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


# Upper bounds of every size setting, checked before any work: generous for an H200 (a value past one
# is a typo or an attack, not a run), and low enough that no setting asks for terabytes or years.
MAX_DAYS = 36_500.0  # a century of bars
MAX_ROWS = 10**9
MAX_FOLDS = 100_000
MAX_EPOCHS = 100_000
MAX_TRIALS = 100_000
MIN_SEEDS_FOR_MAJORITY = 3  # with two, "more than half" is "both": an agreement, not a vote
MAJORITY = "majority"  # --result: the seeds' vote is the run's result
RESULTS = ("first-seed", MAJORITY)
# The execution model's upper bounds: past them every figure is noise or overflows (1e300 slippage
# gives NaN Sharpes). Slippage and the spread in returns share MAX_COST (100% of the position per
# change); financing is at most 100% a year; a session's spread at most 100 times the main one.
MAX_FINANCING = 1.0
MAX_OFF_SESSION_FACTOR = 100.0
MAX_PRICE = 1e9  # a close, and a spread, in price points


@dataclass(frozen=True)
class FoldConfig:
    """Walk-forward windows, in calendar days of bar timestamps."""

    train_days: float = setting(
        120.0, "Length of a fold's training window.", low=0, low_open=True, high=MAX_DAYS, unit="days"
    )
    val_days: float = setting(
        30.0, "Length of a fold's validation window.", low=0, low_open=True, high=MAX_DAYS, unit="days"
    )
    step_days: float = setting(
        30.0, "Shift between consecutive folds.", low=0, low_open=True, high=MAX_DAYS, unit="days"
    )
    # expanding by measurement (issue 34, bench/results/power-*): at two years and the default folds a
    # rolling month-by-month window kept 0% of a ½× planted edge over 3 seeds, expanding 139–236%.
    mode: str = setting(
        "expanding",
        "expanding keeps the first train start (every fold learns from all earlier bars); rolling "
        "keeps train_days of history.",
        choices=("rolling", "expanding"),
    )
    purge_bars: int = setting(
        max(TARGET_HORIZONS),
        "Bars dropped between training and validation, so no training target looks into validation.",
        low=0,
        high=MAX_ROWS,
        unit="bars",
    )
    min_train_rows: int = setting(
        1000,
        "A fold needs at least this many training rows after the purge.",
        low=1,
        high=MAX_ROWS,
        unit="rows",
    )
    min_val_rows: int = setting(
        100, "A fold needs at least this many validation rows.", low=1, high=MAX_ROWS, unit="rows"
    )
    max_folds: int = setting(
        0, "Most folds to run, the earliest first; 0 runs all that fit.", low=0, high=MAX_FOLDS
    )
    holdout_days: float = setting(
        0.0,
        "The last days that no fold and no trial sees; the headline is measured on them (0: none). They "
        "must hold at least min_val_rows bars, as a fold's validation must (checked on the data).",
        low=0,
        high=MAX_DAYS,
        unit="days",
    )

    def __post_init__(self) -> None:
        check_fields(self, "fold config")
        for name in ("train_days", "val_days", "step_days"):
            if round(getattr(self, name) * NS_PER_DAY) < 1:
                raise ConfigError(
                    "fold config", name, f"must be at least one nanosecond, got {getattr(self, name)!r}"
                )


@dataclass(frozen=True)
class EvalConfig:
    """How validation is scored: fixed for a run, never a training or search setting."""

    cost: float = setting(
        1e-4, "Cost per unit of position change (1e-4 = 1 bp).", low=0, high=MAX_COST, unit="log-return units"
    )
    spread: float = setting(
        0.0,
        "Full bid-ask spread; half of it is paid per unit of position change.",
        low=0,
        high=MAX_COST,
        unit="log-return units",
    )
    # The execution model (foxhunt.evaluate.execution): fixed for a run, never searched.
    spread_points: float = setting(
        0.0,
        "Full bid-ask spread in price points (needs first_close); half per unit of change. At most "
        "first_close × MAX_COST (a spread of 100% of the price).",
        low=0,
        high=MAX_PRICE,
        unit="points",
    )
    first_close: float = setting(
        0.0,
        "Close of the first loaded bar: the price level that turns points into returns.",
        low=0,
        high=MAX_PRICE,
        unit="price",
    )
    session: str = setting(
        "", "Main session HH:MM-HH:MM, Monday to Friday, on session_zone's clock ('' = every bar)."
    )
    session_zone: str = setting(
        "UTC", "IANA time zone of the session's hours and weekdays (follows its daylight saving)."
    )
    off_session_factor: float = setting(
        1.0,
        "How many times wider every spread is outside the main session.",
        low=1,
        high=MAX_OFF_SESSION_FACTOR,
    )
    slippage: float = setting(
        0.0, "Slippage per unit of position change.", low=0, high=MAX_COST, unit="log-return units"
    )
    fill: str = setting(
        "close", "Fill at the decision bar's close, or at the next bar's open.", choices=FILLS
    )
    financing: float = setting(
        0.0,
        "Overnight financing: yearly rate on |position| per 17:00 New York rollover held.",
        low=0,
        high=MAX_FINANCING,
        unit="per year",
    )

    def __post_init__(self) -> None:
        check_fields(self, "eval config")
        try:
            self.execution_settings()
        except ValueError as exc:
            raise ConfigError("eval config", "execution", str(exc)) from None
        if self.spread_points > 0 and self.spread_points > self.first_close * MAX_COST:
            raise ConfigError(
                "eval config",
                "spread_points",
                f"{self.spread_points:g} points is more than the price ({self.first_close:g}) itself: "
                f"at most first_close × {MAX_COST:g}",
            )

    def execution_settings(self) -> ExecutionSettings:
        """The execution model's settings (`foxhunt.evaluate.execution`)."""
        return ExecutionSettings(
            spread_points=self.spread_points,
            first_close=self.first_close,
            session=self.session,
            session_zone=self.session_zone,
            off_session_factor=self.off_session_factor,
            slippage=self.slippage,
            fill=self.fill,
            financing=self.financing,
        )

    @property
    def cost_per_change(self) -> float:
        """What one unit of position change costs in validation: the cost plus half the spread."""
        return trading_cost(self.cost, self.spread)


def trading_cost(cost: float, spread: float = 0.0) -> float:
    """Cost per unit of position change: the fee plus half the bid-ask spread (both in log-return units).

    The one place the package computes it: training's reward cost, validation and `foxhunt evaluate`.
    """
    return cost + 0.5 * spread


@dataclass(frozen=True)
class RunConfig:
    """One `foxhunt train` run besides its URIs: what it trains and how it reports."""

    model: str = setting("dqn", "The model to train.", choices=("dqn",))
    epochs: int = setting(50, "Training epochs per fold.", low=1, high=MAX_EPOCHS)
    diagnostics_every: int | None = setting(
        None,
        "Run the greedy policy's diagnostics (action shares, in-sample and validation Sharpe, feature "
        "agreement) every this many epochs of a fold, and on its last; the other epochs record none. Unset: "
        "every epoch of a run, only the last of each fold of a search's trials (which read none of the "
        "others: a 64-trial search on an H100 took 244.1 s so, 264.8 s diagnosing every epoch). On a CPU "
        "they cost about a third of a fold (two years of EURUSD, 10 epochs: a run 41.2 s, 32.9 s at 10).",
        low=1,
        high=MAX_EPOCHS,
        unit="epochs",
    )
    pictures: str = setting(
        "on",
        "Draw the run's PNG pictures at its end (run, positions, learning, timings, seeds, the held-out "
        "period; a universe's book and instruments; a search's trials). off writes the same summary, "
        "reports, tables and weights without them: for studies that read only the figures (about 2 s "
        "less a run on a CPU).",
        choices=("on", "off"),
    )
    seed: int = setting(
        0, "Run seed; each fold derives its own, so folds are reproducible alone.", low=0, high=2**63 - 1
    )
    seeds: int = setting(
        1,
        "Seeds of the same settings trained side by side (seed, seed + 1, ...); the run's result is "
        "the first's (see --result), the report gives the spread of the stitched Sharpe across them and, "
        "with three or more, their majority's stitched record (the side more than half the seeds hold, "
        "else flat).",
        low=1,
        high=64,
    )
    result: str = setting(
        "first-seed",
        "What the run's stitched record, tables, pictures and held-out headline are: the first seed's "
        "policy, or (majority, with --seeds 3 or more) the seeds' vote, bar by bar the side more than "
        "half of them hold, else flat. The vote costs the extra seeds' training (--seeds).",
        choices=RESULTS,
    )
    device: str = setting(
        "auto", "Where to train: auto picks CUDA when present.", choices=("auto", "cpu", "cuda")
    )
    trials: int = setting(
        0, "Hyperparameter-search trials; 0 trains once with the given settings.", low=0, high=MAX_TRIALS
    )
    folds: FoldConfig = section(FoldConfig, "Walk-forward windows.")
    dqn: DQNConfig = section(DQNConfig, "Double DQN training settings.")
    eval: EvalConfig = section(EvalConfig, "Evaluation costs.")
    pushgateway: str | None = setting(
        None, "Pushgateway URL for the metrics (unset: $FOXHUNT_PUSHGATEWAY, else no pushes)."
    )
    run_id: str | None = setting(
        None,
        "Run id, the metrics' grouping key (unset: $FOXHUNT_RUN_ID, the Argo workflow name, or generated).",
    )
    metrics_port: int | None = setting(None, "Also serve live /metrics on this port.", low=1, high=65535)
    delete_metrics_group: bool = setting(
        False,
        "Delete the run's Pushgateway group once it succeeded, --metrics-keep-seconds after its final "
        "push (a failed or interrupted run keeps its group).",
    )
    metrics_keep_seconds: float = setting(
        30.0,
        "Seconds from the final push to deleting the run's Pushgateway group (--delete-metrics-group, "
        "which the workflow templates set), so Prometheus scrapes the final values: at least one "
        "scrape interval.",
        low=0,
        high=86_400,
        unit="seconds",
    )
    overwrite: bool = setting(
        False, "Remove an earlier run's outputs in --out instead of refusing or resuming."
    )
    log_format: str = setting(
        "text", "Console lines as text or as one JSON object per line.", choices=("text", "json")
    )
    compile_cache: str = setting(
        "auto",
        "Where the compiled training step is kept for the next run: auto (beside the fxcache), off, "
        "or a folder URI (local or s3://). Used on CUDA with compile by runs and searches (with several "
        "--fxcache: beside the first): one blob per step shape and member count (--seeds, --population).",
    )

    def __post_init__(self) -> None:
        check_fields(self, "run config")
        if self.seeds > 1 and self.trials > 0:
            raise ConfigError("run config", "seeds", "a search (trials > 0) trains one seed per trial; use 1")
        if self.result == MAJORITY and self.seeds < MIN_SEEDS_FOR_MAJORITY:
            raise ConfigError(
                "run config",
                "result",
                f"majority needs --seeds {MIN_SEEDS_FOR_MAJORITY} or more, got {self.seeds}",
            )
        if not self.compile_cache.strip():
            raise ConfigError("run config", "compile_cache", "must be auto, off or a folder URI, got ''")
        problem = None if self.run_id is None else run_id_problem(self.run_id)
        if problem:
            raise ConfigError("run config", "run_id", problem)

    def diagnostics_spacing(self, *, trial: bool = False) -> int:
        """Every how many epochs a fold runs the diagnostics (`diagnostics_every`): as given, else every epoch
        of a run and only the last of a search trial's fold (`trial`)."""
        if self.diagnostics_every is not None:
            return self.diagnostics_every
        return self.epochs if trial else 1

    @property
    def draws_pictures(self) -> bool:
        """Whether the run draws its PNG pictures at its end (`pictures`)."""
        return self.pictures == "on"


# Settings that shape the results: a resumed run must have the same ones (the manifest compares them).
# `seeds` too: a resume takes over every seed's folds, so they must be the same seeds.
RESULT_SETTINGS: tuple[str, ...] = (
    "model", "epochs", "seed", "seeds", "result", "trials", "folds", "dqn", "eval"
)  # fmt: skip

# Pipeline defaults (`foxhunt pipeline`, the local run on generated bars): about 25 s on 2 CPU cores.
# Without a --hyperopt-params file its DQN settings differ from `train`'s GPU defaults where half a
# minute of CPU needs it: batches of 1024 give 60 updates an epoch instead of 8 for the same compute,
# at a higher learning rate, and a training cost of 2 bp (twice the evaluation cost) keeps so briefly
# trained a policy from churning. With `train`'s settings the same budget ends with a turnover of
# ~75,000 a year and a stitched Sharpe near −35 after costs (measured on the default sample, seed 0).
PIPELINE_FOLDS = FoldConfig(train_days=60.0, val_days=20.0, step_days=20.0, max_folds=3)
PIPELINE_EPOCHS = 3
PIPELINE_DQN = DQNConfig(batch_size=1024, lr=1e-3, cost=2e-4)
SAMPLE_BARS = 200_000


def run_id_problem(run_id: str) -> str | None:
    """Why `run_id` is not a safe label value and path component, or None when it is."""
    if RUN_ID_PATTERN.fullmatch(run_id) and run_id not in (".", ".."):
        return None
    return f"must be 1-128 characters of A-Z a-z 0-9 _ . : - and not . or .., got {run_id!r}"


def config_keys(cls: type) -> list[str]:
    """The field names of a config dataclass, in order."""
    return [f.name for f in fields(cls)]


def override(config, params: dict, *, what: str):
    """Return `config` with `params` applied, checked strictly; a bad key or value is BadInput naming `what`."""
    from foxhunt.errors import BadInput

    valid = config_keys(type(config))
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise BadInput(f"{what}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(valid)}")
    try:
        return replace(config, **params)
    except ConfigError as exc:
        raise BadInput(f"{what}: {exc}") from exc
