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
from dataclasses import MISSING, Field, dataclass, fields, replace
from typing import Any

from foxhunt.config.execution import FILLS, ExecutionSettings
from foxhunt.config.setting import check_fields, expectation, section, setting
from foxhunt.errors import ConfigError

# Forward-return horizons of the targets, in bars; the longest one sets the default purge gap.
TARGET_HORIZONS: tuple[int, ...] = (1, 5, 15, 60)
# The timed phases of every fold, in order: reports, metrics and the dashboard use these names.
PHASES: tuple[str, ...] = ("reset", "normalize", "collect", "train", "validate", "checkpoint")
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
MAX_LR = 10.0
MAX_BATCH = 2**24
MAX_HIDDEN = 2**14
MAX_STEPS = 10**7  # gradient steps per epoch
MAX_EPOCHS = 100_000
MAX_TRIALS = 100_000
MAX_COST = 1.0  # a cost of 100% of the position per change
MAX_N_STEP = 240  # bars a TD target may hold its action: the longest window of the features (4 hours)


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
    mode: str = setting(
        "rolling",
        "rolling keeps train_days of history; expanding keeps the first train start.",
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
        "The last days that no fold and no trial sees; the headline is measured on them (0: none).",
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
class DQNConfig:
    """Double DQN training settings; `--hyperopt-params` overrides these by name."""

    lr: float = setting(3e-4, "Adam learning rate.", low=0, low_open=True, high=MAX_LR)
    gamma: float = setting(0.9, "Discount factor of the TD target, per bar.", low=0, high=1, high_open=True)
    batch_size: int = setting(8192, "Transitions per gradient step.", low=1, high=MAX_BATCH)
    hidden: int = setting(
        256, "Width of the Q-network's two hidden layers.", low=1, high=MAX_HIDDEN, unit="units"
    )
    tau: float = setting(
        0.01, "Polyak step of the target network, once per gradient step.", low=0, high=1, low_open=True
    )
    eps_start: float = setting(1.0, "Exploration probability at the first epoch of a fold.", low=0, high=1)
    eps_end: float = setting(0.05, "Exploration probability after the decay.", low=0, high=1)
    eps_decay_fraction: float = setting(
        0.6, "Share of a fold's epochs over which epsilon decays linearly.", low=0, high=1
    )
    cost: float = setting(
        1e-4,
        "Training reward's cost per unit of position change (1e-4 = 1 bp).",
        low=0,
        high=MAX_COST,
        unit="log-return units",
    )
    huber_delta: float = setting(
        1.0, "Knee of the Huber loss.", low=0, low_open=True, high=1e6, unit="reward units"
    )
    reward_scale: float = setting(
        1e4, "Reward multiplier: rewards in bp keep Q-values near 1 for Adam.", low=0, low_open=True, high=1e8
    )
    grad_clip: float = setting(10.0, "Largest global gradient norm.", low=0, low_open=True, high=1e9)
    steps_per_epoch: int = setting(
        0, "Gradient steps per epoch; 0: ceil(train rows / batch size).", low=0, high=MAX_STEPS
    )
    steps_per_graph: int = setting(1, "Training steps captured in one CUDA graph replay.", low=1, high=1024)
    compile: bool = setting(True, "torch.compile the training step on CUDA (CPU runs it eagerly).")
    bf16: bool = setting(False, "bfloat16 autocast of the training step's matmuls on CUDA.")
    paired_next_state: bool = setting(
        True,
        "On CUDA, the online and target networks value the next state in one batched product per layer "
        "(same arithmetic; CPU runs them apart).",
    )
    fused_activation: bool = setting(
        True,
        "On CUDA, collection's forward passes add bias and apply ReLU inside the matrix products "
        "(same arithmetic; CPU runs the modules).",
    )
    q_limit: float = setting(
        1e6, "Guard: a |Q| beyond this stops the fold as diverged.", low=0, low_open=True, high=1e30
    )
    weight_decay: float = setting(0.0, "Adam weight decay.", low=0, high=1.0)
    select_tail_share: float = setting(
        0.0,
        "Share of each training slice held back (its last rows) to pick the epoch whose greedy policy "
        "scores best after the evaluation cost; 0 turns the selection off (train on all, keep the last).",
        low=0,
        high=0.5,
        unit="share of training rows",
    )
    abstain_cost_multiple: float = setting(
        0.0,
        "The fold's greedy policy takes short or long only where its Q exceeds flat's by this many "
        "evaluation costs (in the reward's units); 0: plain argmax.",
        low=0,
        high=100,
        unit="multiples of the evaluation cost",
    )
    select_min_sharpe: float = setting(
        0.0,
        "With select_tail_share: the fold's policy is flat unless its best tail net Sharpe exceeds this.",
        low=-1e3,
        high=1e3,
        unit="annualised Sharpe",
    )
    n_step: int = setting(
        1,
        "Bars the TD target holds the action before it bootstraps (discounted held returns, cost paid "
        "once, truncated at the end of the learning rows); 1: the one-bar target.",
        low=1,
        high=MAX_N_STEP,
        unit="bars",
    )

    def __post_init__(self) -> None:
        check_fields(self, "dqn config")


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
        "Full bid-ask spread in price points (needs first_close); half per unit of change.",
        low=0,
        unit="points",
    )
    first_close: float = setting(
        0.0,
        "Close of the first loaded bar: the price level that turns points into returns.",
        low=0,
        unit="price",
    )
    session: str = setting("", "Main session HH:MM-HH:MM UTC, Monday to Friday ('' = every bar).")
    off_session_factor: float = setting(
        1.0, "How many times wider every spread is outside the main session.", low=1
    )
    slippage: float = setting(0.0, "Slippage per unit of position change.", low=0, unit="log-return units")
    fill: str = setting(
        "close", "Fill at the decision bar's close, or at the next bar's open.", choices=FILLS
    )
    financing: float = setting(
        0.0, "Overnight financing: yearly rate on |position| per daily rollover held.", low=0, unit="per year"
    )

    def __post_init__(self) -> None:
        check_fields(self, "eval config")
        try:
            self.execution_settings()
        except ValueError as exc:
            raise ConfigError("eval config", "execution", str(exc)) from None

    def execution_settings(self) -> ExecutionSettings:
        """The execution model's settings (`foxhunt.evaluate.execution`)."""
        return ExecutionSettings(
            spread_points=self.spread_points,
            first_close=self.first_close,
            session=self.session,
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
    seed: int = setting(
        0, "Run seed; each fold derives its own, so folds are reproducible alone.", low=0, high=2**63 - 1
    )
    seeds: int = setting(
        1,
        "Seeds of the same settings trained side by side (seed, seed + 1, ...); the run's result is "
        "the first's, the report gives the spread of the stitched Sharpe across them.",
        low=1,
        high=64,
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
    delete_metrics_group: bool = setting(False, "Delete the run's Pushgateway group after its final push.")
    metrics_keep_seconds: float = setting(
        30.0,
        "Wait before deleting the group, so Prometheus scrapes the final "
        "values (at least one scrape interval).",
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
        "or a folder URI (local or s3://). Used on CUDA with compile.",
    )

    def __post_init__(self) -> None:
        check_fields(self, "run config")
        if self.seeds > 1 and self.trials > 0:
            raise ConfigError("run config", "seeds", "a search (trials > 0) trains one seed per trial; use 1")
        if not self.compile_cache.strip():
            raise ConfigError("run config", "compile_cache", "must be auto, off or a folder URI, got ''")
        problem = None if self.run_id is None else run_id_problem(self.run_id)
        if problem:
            raise ConfigError("run config", "run_id", problem)


# Settings that shape the results: a resumed run must have the same ones (the manifest compares them).
RESULT_SETTINGS: tuple[str, ...] = ("model", "epochs", "seed", "trials", "folds", "dqn", "eval")

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


# ---- reading settings by name -------------------------------------------------------------------
# Every `foxhunt train` flag that sets a RunConfig field: flag name → dotted field path. The CLI builds
# its flags from this table and the workflow templates take their parameters' defaults from it.
FLAGS: dict[str, str] = {
    "model": "model",
    "epochs": "epochs",
    "trials": "trials",
    "seed": "seed",
    "seeds": "seeds",
    "device": "device",
    "train-days": "folds.train_days",
    "val-days": "folds.val_days",
    "step-days": "folds.step_days",
    "window": "folds.mode",
    "purge-bars": "folds.purge_bars",
    "min-train-rows": "folds.min_train_rows",
    "min-val-rows": "folds.min_val_rows",
    "max-folds": "folds.max_folds",
    "holdout-days": "folds.holdout_days",
    "eval-cost": "eval.cost",
    "eval-spread": "eval.spread",
    "eval-spread-points": "eval.spread_points",
    "eval-first-close": "eval.first_close",
    "eval-session": "eval.session",
    "eval-off-session-factor": "eval.off_session_factor",
    "eval-slippage": "eval.slippage",
    "eval-fill": "eval.fill",
    "eval-financing": "eval.financing",
    "pushgateway": "pushgateway",
    "run-id": "run_id",
    "metrics-port": "metrics_port",
    "delete-metrics-group": "delete_metrics_group",
    "metrics-keep-seconds": "metrics_keep_seconds",
    "overwrite": "overwrite",
    "log-format": "log_format",
    "compile-cache": "compile_cache",
}
# The section of a dotted path → the label its errors carry.
SECTION_LABELS = {"": "run config", "folds": "fold config", "dqn": "dqn config", "eval": "eval config"}


def config_keys(cls: type) -> list[str]:
    """The field names of a config dataclass, in order."""
    return [f.name for f in fields(cls)]


def _default(f: Field) -> Any:
    """A config field's default value (its factory's product for a nested config)."""
    if f.default is not MISSING:
        return f.default
    factory = f.default_factory
    assert callable(factory), f"{f.name}: a config field has a default"
    return factory()


def field_at(path: str, cls: type = RunConfig):
    """The dataclass Field at a dotted path like "folds.train_days"."""
    head, _, rest = path.partition(".")
    f = next(f for f in fields(cls) if f.name == head)
    return field_at(rest, _default(f).__class__) if rest else f


def value_at(config, path: str):
    """The value at a dotted path of a config."""
    for part in path.split("."):
        config = getattr(config, part)
    return config


def flag_value(value) -> str:
    """A setting as a command-line or workflow-parameter string: 120.0 → "120", True → "true", None → ""."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def run_defaults(config: RunConfig | None = None) -> dict[str, str]:
    """{flag name: default as a string} for every flag in FLAGS: the one source of workflow defaults."""
    config = RunConfig() if config is None else config
    return {flag: flag_value(value_at(config, path)) for flag, path in FLAGS.items()}


ENUMS: dict[str, tuple[str, ...]] = {
    flag: field_at(path).metadata["choices"]
    for flag, path in FLAGS.items()
    if field_at(path).metadata["choices"]
}


def flag_of(error: ConfigError) -> str | None:
    """The flag that sets the field an error is about, if one does."""
    prefix = next((s for s, label in SECTION_LABELS.items() if label == error.section), None)
    if prefix is None:
        return None
    path = f"{prefix}.{error.path}" if prefix else error.path
    return next((flag for flag, p in FLAGS.items() if p == path), None)


def run_config_from_flags(values: dict[str, object], base: RunConfig | None = None, **sections) -> RunConfig:
    """A RunConfig from `base` with flag values (by flag name) applied; `sections` replace whole sections."""
    base = RunConfig() if base is None else base
    top: dict[str, object] = dict(sections)
    nested: dict[str, dict[str, object]] = {}
    for flag, value in values.items():
        head, _, rest = FLAGS[flag].partition(".")
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            top[head] = value
    for head, changes in nested.items():
        top[head] = replace(top.get(head, getattr(base, head)), **changes)  # type: ignore[type-var]
    return replace(base, **top)  # type: ignore[arg-type]  # the values were checked field by field


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


def describe(cls: type) -> list[str]:
    """One line per field of a config class: name, doc, allowed values and default."""
    lines = []
    for f in fields(cls):
        default = _default(f)
        shown = type(default).__name__ if f.default is MISSING else flag_value(default) or "none"
        lines.append(f"{f.name}: {f.metadata['doc']} Allowed: {expectation(f)}. Default: {shown}.")
    return lines
