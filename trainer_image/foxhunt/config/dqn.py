"""The Double DQN's training settings (`DQNConfig`) and their bounds: what `--hyperopt-params` and a
search's space set by name. Light: imports nothing heavy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from foxhunt.config.setting import check_fields, setting

# Upper bounds, checked before any work: generous for an H200 (a value past one is a typo or an attack).
MAX_LR = 10.0
MAX_BATCH = 2**24
MAX_HIDDEN = 2**14
MAX_STEPS = 10**7  # gradient steps per epoch
MAX_COST = 1.0  # a cost of 100% of the position per change (the evaluation's costs share it)
MAX_N_STEP = 240  # bars a TD target may hold its action: the longest window of the features (4 hours)
# n_step 0's held target. Measured (H100, 3 seeds): at a cost of 0.76x the one-bar noise (EURUSD minute
# bars at 1 bp) the one-bar target kept 0% of an overlaid edge's oracle, 5 bars 39%, 15 bars 54%, 30 bars
# 62%, 60 bars 64%; at 0.21x (the sample) the one-bar target kept 79%, 15 bars 70%, 30 bars 66%. Noise
# (two sets of 10 seeds) stayed flat at 5, 15 and 30 (bench/README, "n-step by the cost's share").
HELD_N_STEP = 30


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
    bf16: bool = setting(
        True,
        "bfloat16 autocast of the training step's products on CUDA, their odd sizes (43 inputs, 3 actions) "
        "padded to multiples of 8 for the tensor cores.",
    )
    paired_next_state: bool = setting(
        True,
        "On CUDA, a lone member's online and target networks value the next state in one batched product "
        "per layer (same arithmetic; CPU and populations run them apart, faster there).",
    )
    fused_activation: bool = setting(
        True,
        "On CUDA, collection's forward passes add bias and apply ReLU inside the matrix products "
        "(same arithmetic; CPU runs the modules). The greedy maps that score and roll out a policy always "
        "do on CUDA, so that evaluate, which has no training settings, rolls out what the run scored.",
    )
    q_limit: float = setting(
        1e6, "Guard: a |Q| beyond this stops the fold as diverged.", low=0, low_open=True, high=1e30
    )
    weight_decay: float = setting(0.0, "Adam weight decay.", low=0, high=1.0)
    select_tail_share: float = setting(
        0.25,
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
    select_min_t: float = setting(
        3.0,
        "With select_tail_share: the fold's policy is flat unless its best tail net Sharpe also exceeds "
        "this many standard errors of a zero Sharpe over the tail, sqrt(bars a year / tail bars), so a "
        "short tail needs a larger Sharpe; 0: select_min_sharpe alone.",
        low=0,
        high=100,
        unit="standard errors",
    )
    select_pool: str = setting(
        "pooled",
        "With select_tail_share, what decides whether a fold trades: fold, its own tail alone "
        "(select_min_t); pooled, its tail and the earlier folds' out-of-sample windows of the policies "
        "they chose, bar-weighted (foxhunt.train.evidence).",
        choices=("fold", "pooled"),
    )
    select_pool_t: float = setting(
        3.0,
        "With select_pool pooled: the pooled net Sharpe must exceed select_min_sharpe plus this many "
        "standard errors of a zero Sharpe over all the pooled bars, sqrt(bars a year / pooled bars).",
        low=0,
        high=100,
        unit="standard errors",
    )
    select_pool_guard: float = setting(
        0.0,
        "With select_pool pooled: the fold's own best tail net Sharpe must also exceed this (a fold "
        "whose own tail loses does not trade on the others' evidence).",
        low=-1e3,
        high=1e3,
        unit="annualised Sharpe",
    )
    n_step: int = setting(
        0,
        "Bars the TD target holds the action before it bootstraps (discounted held returns, cost paid "
        "once, truncated at the end of the learning rows); 1: the one-bar target; 0: chosen when the run "
        f"starts, {HELD_N_STEP} where the reward's cost is at least n_step_switch times the first fold's "
        "training bars' one-bar noise, else 1.",
        low=0,
        high=MAX_N_STEP,
        unit="bars",
    )
    n_step_switch: float = setting(
        0.5,
        "With n_step 0: the reward's cost against the first fold's training bars' one-bar noise (their "
        f"standard deviation) at and above which the TD target holds {HELD_N_STEP} bars.",
        low=0,
        high=1e3,
        unit="multiples of the one-bar noise",
    )

    def __post_init__(self) -> None:
        check_fields(self, "dqn config")


def choose_n_step(config: DQNConfig, noise: float) -> DQNConfig:
    """`config` with n_step 0 resolved against the training bars' one-bar `noise` (a standard deviation of
    log returns): HELD_N_STEP where the reward's cost is positive and at least n_step_switch × noise, else 1."""
    if config.n_step:
        return config
    held = config.cost > 0.0 and config.cost >= config.n_step_switch * noise  # no cost: nothing to amortise
    return replace(config, n_step=HELD_N_STEP if held else 1)


def trainer_configs(config: DQNConfig | Sequence[DQNConfig]) -> list[DQNConfig]:
    """A trainer's members' settings: an n_step 0 that no run resolved (`choose_n_step`) trains the
    one-bar target."""
    given = [config] if isinstance(config, DQNConfig) else list(config)
    return [c if c.n_step else replace(c, n_step=1) for c in given]
