"""Tiny hand-built networks and data for the RL core tests (tests/train/test_dqn_core.py, test_greedy_policy.py).

Hand-built networks use small integer weights and inputs: exact in float32 and in TF32 alike, so the
same cases run on CUDA where it is present.
"""

import numpy as np
import torch
from torch import nn

from foxhunt.config import DQNConfig
from foxhunt.data.folds import FoldRange
from foxhunt.train import DQNTrainer, to_device
from support.trainer_cases import MINUTE_NS

COST = 1e-4
# compile=False: on CUDA each tiny trainer still captures its graph, without a compile per test.
TINY = DQNConfig(
    hidden=4, batch_size=8, steps_per_epoch=1, cost=COST, reward_scale=1e4, gamma=0.9, compile=False
)
OFFSET = 8.0  # keeps the hand-built networks' hidden units positive, so ReLU passes them unchanged


def tiny_trainer(
    x0: np.ndarray, returns: np.ndarray, device: str, config: DQNConfig = TINY, **kwargs
) -> DQNTrainer:
    """A trainer on two features (x0, then zeros) and the given 1-bar returns; norm stats 0 and 1."""
    n = len(x0)
    features = np.zeros((n, 2), np.float32)
    features[:, 0] = x0
    targets = np.zeros((n, 4), np.float32)
    targets[:, 0] = returns
    data = to_device(features, targets, np.arange(n, dtype=np.int64) * MINUTE_NS, torch.device(device))
    trainer = DQNTrainer(data, config, max_train_rows=n, seed=0, **kwargs)
    train_end = n * 2 // 3
    trainer.window.set_fold_range(FoldRange(0, 0, train_end, train_end, n, 1.0))
    trainer.window.mean.zero_()
    trainer.window.std.fill_(1.0)
    return trainer


def set_layers(net: nn.Sequential, *layers: tuple[list, list]) -> None:
    """Overwrite the three Linear layers of a `build_qnet` network with (weight, bias), in place."""
    linears = [m for m in net if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for linear, (weight, bias) in zip(linears, layers, strict=True):
            linear.weight.copy_(torch.tensor(weight, dtype=torch.float32))
            linear.bias.copy_(torch.tensor(bias, dtype=torch.float32))


IDENTITY = (np.eye(4).tolist(), [0.0] * 4)


def readout_net(net: nn.Sequential, row_weight: float, position_weight: float, bias: list[float]) -> None:
    """Q_a = row_weight · (x0 + 8) + position_weight · (position + 8) + bias_a: Q tells the row and position."""
    first = ([[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]], [OFFSET, OFFSET, 0, 0])
    last = ([[row_weight, position_weight, 0, 0]] * 3, bias)
    set_layers(net, first, IDENTITY, last)


def sign_net(net: nn.Sequential, hold: float = 0.0, flat_value: float = 0.0) -> None:
    """Q_short = −x0 + hold·[short], Q_flat = flat_value, Q_long = x0 + hold·[long]: greedy follows the
    sign of x0, and `hold` > 0 makes it keep the position held (hysteresis)."""
    first = ([[1, 0, 0], [-1, 0, 0], [0, 0, 1], [0, 0, -1]], [0, 0, 0, 0])
    last = ([[-1, 1, 0, hold], [0, 0, 0, 0], [1, -1, hold, 0]], [0, flat_value, 0])
    set_layers(net, first, IDENTITY, last)


def draw_for(trainer: DQNTrainer, indices: list[int]) -> torch.Tensor:
    """Uniforms that make the step pick exactly these replay indices, as member 0's (1, batch) draw."""
    n = int(trainer.window.n_valid)
    return torch.tensor([[(i + 0.5) / n for i in indices]], device=trainer.device)


def fill_replay(
    trainer: DQNTrainer, positions: list[float], actions: list[int], rewards: list[float]
) -> None:
    k = len(positions)  # member 0's replay
    trainer.replay.position[0, :k] = torch.tensor(positions, device=trainer.device)
    trainer.replay.action[0, :k] = torch.tensor(actions, device=trainer.device)
    trainer.replay.reward[0, :k] = torch.tensor(rewards, device=trainer.device)


def constant_layers(q: list[float]) -> tuple:
    """A network whose Q-values are `q` whatever the state."""
    zero = ([[0.0] * 3] * 4, [0.0] * 4)
    return zero, IDENTITY, ([[0.0] * 4] * 3, q)


def member_q_and_target(trainer: DQNTrainer, u: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Member 0's Q taken, TD target and all Q for the draw `u` (1, batch)."""
    return tuple(t[0] for t in trainer.q_and_target(u))
