"""Every tunable setting of a run, with its default, in one place."""

from __future__ import annotations

from dataclasses import dataclass, fields

# Forward-return horizons of the targets, in bars; the longest one sets the default purge gap.
TARGET_HORIZONS: tuple[int, ...] = (1, 5, 15, 60)
# The timed phases of every fold, in order: reports, metrics and the dashboard use these names.
PHASES: tuple[str, ...] = ("reset", "normalize", "collect", "train", "validate", "checkpoint")


@dataclass(frozen=True)
class FoldConfig:
    """Walk-forward windows, in calendar days of bar timestamps."""

    train_days: float = 120.0
    val_days: float = 30.0
    step_days: float = 30.0
    mode: str = "rolling"  # "rolling" keeps train_days; "expanding" keeps the first train start
    purge_bars: int = max(TARGET_HORIZONS)
    min_train_rows: int = 1000
    min_val_rows: int = 100
    max_folds: int = 0  # 0: as many as fit


@dataclass(frozen=True)
class DQNConfig:
    """Double DQN hyperparameters; `--hyperopt-params` overrides these by name."""

    lr: float = 3e-4
    gamma: float = 0.9
    batch_size: int = 8192
    hidden: int = 256
    tau: float = 0.01  # Polyak step of the target network, once per gradient step
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_decay_fraction: float = 0.6  # share of a fold's epochs over which epsilon decays
    cost: float = 1e-4  # per unit of position change, in log-return units (1 bp)
    huber_delta: float = 1.0
    reward_scale: float = 1e4  # rewards in bp keep Q-values near 1 for Adam and the Huber knee
    grad_clip: float = 10.0
    steps_per_epoch: int = 0  # 0: ceil(train rows / batch size)
    steps_per_graph: int = 1  # training steps captured in one CUDA graph replay
    compile: bool = True  # torch.compile the TD loss on CUDA (CPU runs it eagerly)
    bf16: bool = False  # bfloat16 autocast of the training step's matmuls on CUDA
    q_limit: float = 1e6  # guard: |Q| beyond this is divergence
    weight_decay: float = 0.0


def config_keys(cls: type) -> list[str]:
    """The field names of a config dataclass, in order."""
    return [f.name for f in fields(cls)]


def override(config, params: dict, *, what: str):
    """Return `config` with `params` applied; an unknown key is a ValueError listing the valid ones."""
    valid = config_keys(type(config))
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise ValueError(f"{what}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(valid)}")
    typed = {}
    for f in fields(config):
        if f.name in params:
            default = getattr(config, f.name)
            value = params[f.name]
            typed[f.name] = type(default)(value) if isinstance(default, (int, float, str)) else value
    return type(config)(**{**{k: getattr(config, k) for k in valid}, **typed})
