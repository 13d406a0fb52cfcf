"""A plain-torch Double DQN for one member, written apart from the trainer: the reference a trainer's
member is held to (tests/train/test_population_trainer.py).

It shares nothing with `foxhunt.train` but the documented random draws (per member, one CPU generator
seeded with `fold_seed(member seed, fold)`: collection draws the incoming positions, the exploration
uniforms and the random actions, in that order; each step one uniform per sample) and the initial
weights it is given. Everything else is torch's own: `nn.Sequential`, `F.smooth_l1_loss` (Huber with its
knee at `huber_delta`), `clip_grad_norm_`, `torch.optim.Adam` with L2 `weight_decay`, and the rows read
at the fold's own offset `train_start`.
"""

import copy

import torch
from torch import nn
from torch.nn import functional as F

from foxhunt.config import DQNConfig
from foxhunt.data.folds import FoldRange


def epsilon_at(epoch: int, epochs: int, config: DQNConfig) -> float:
    """eps_start → eps_end linearly over the first eps_decay_fraction of the epochs (at least one)."""
    span = max(1.0, config.eps_decay_fraction * epochs)
    return config.eps_start + (config.eps_end - config.eps_start) * min(1.0, epoch / span)


class ReferenceDQN:
    """One member's Double DQN on the rows [train_start, train_end) of `features` and `returns`."""

    def __init__(
        self,
        features: torch.Tensor,
        returns: torch.Tensor,
        fold: FoldRange,
        config: DQNConfig,
        initial: dict[str, torch.Tensor],
        seed: int,
    ) -> None:
        self.config, self.fold = config, fold
        train = features[fold.train_start : fold.train_end]
        std, mean = torch.std_mean(train, dim=0, correction=0)
        self.mean, self.std = mean, torch.where(std > 1e-8, std, torch.ones_like(std))
        self.features, self.returns = features, returns
        hidden = config.hidden
        self.online = nn.Sequential(
            nn.Linear(features.shape[1] + 1, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, 3),
        )  # fmt: skip
        self.online.load_state_dict(initial)
        self.target = copy.deepcopy(self.online)
        self.optimizer = torch.optim.Adam(
            self.online.parameters(), lr=config.lr, weight_decay=config.weight_decay, foreach=True
        )
        self.generator = torch.Generator().manual_seed(seed)
        self.n = fold.train_rows - 1  # the last training bar has no next state inside the slice

    def state(self, rows: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        """Rows of the whole data (absolute indices), normalised, with the incoming position."""
        return torch.cat([(self.features[rows] - self.mean) / self.std, position.unsqueeze(1)], dim=1)

    @torch.no_grad()
    def collect(self, epsilon: float) -> None:
        """One epsilon-greedy transition per training bar, from a uniformly drawn incoming position."""
        g, n = self.generator, self.n
        incoming = torch.randint(0, 3, (n,), generator=g)
        explore = torch.rand(n, generator=g)
        random_action = torch.randint(0, 3, (n,), generator=g)
        rows = torch.arange(n) + self.fold.train_start
        self.position = (incoming - 1).float()
        greedy = self.online(self.state(rows, self.position)).argmax(dim=1)
        self.action = torch.where(explore < epsilon, random_action, greedy)
        new = (self.action - 1).float()
        change = (new - self.position).abs()
        self.reward = (new * self.returns[rows] - self.config.cost * change) * self.config.reward_scale

    def step(self) -> None:
        """Draw a batch, Huber loss on the Double-DQN target, backward, clip, Adam, Polyak."""
        c = self.config
        u = torch.empty(c.batch_size).uniform_(0.0, 1.0, generator=self.generator)
        idx = torch.clamp((u * self.n).long(), max=self.n - 1)
        rows = idx + self.fold.train_start
        action = self.action[idx]
        q = self.online(self.state(rows, self.position[idx])).gather(1, action.unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            next_state = self.state(rows + 1, (action - 1).float())
            best = self.online(next_state).argmax(dim=1, keepdim=True)
            y = self.reward[idx] + c.gamma * self.target(next_state).gather(1, best).squeeze(1)
        loss = F.smooth_l1_loss(q, y, beta=c.huber_delta)
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.online.parameters(), c.grad_clip)
        self.optimizer.step()
        with torch.no_grad():
            for t, o in zip(self.target.parameters(), self.online.parameters(), strict=True):
                t.add_(c.tau * (o - t))

    def train(self, epochs: int) -> None:
        """`epochs` rounds of collection, then `steps_per_epoch` steps."""
        for epoch in range(epochs):
            self.collect(epsilon_at(epoch, epochs, self.config))
            for _ in range(self.config.steps_per_epoch):
                self.step()
