"""Trials side by side: several Double-DQN trials of one shape trained as one batched population.

A trial's network is small (43 → hidden → hidden → 3), and at batch 8192 its step is bound by kernel
launches and latency, not by FLOPs. A population stacks the weights of its P members in one buffer
per layer, (P, out, in), and runs each product of the step as one batched product, so P trials'
steps launch about the kernels of one. The algorithm is dqn.py's, member by member: each member has
its own settings (a (P,) device vector per setting), its own replay, its own Adam moments (Adam is
written out here because torch's takes one learning rate per parameter, and a stacked parameter
holds P trials), its own gradient-norm clip, and its own divergence guard.

Random draws. On CPU each member draws from its own generator, seeded as a lone trainer's, so a
member learns exactly what a `DQNTrainer` of its settings learns (a test holds them equal). On CUDA
all members draw from the default generator as one (P, batch) tensor inside the captured graph, so
a member's stream differs from a lone trial's; results are reproducible for the same population.

The members train the same folds in lockstep. After training, `Member` is one member seen as a lone
trainer (its own `nn.Sequential` whose parameters are views of its slot), which fold_training
validates and checkpoints like any trainer.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import torch
from torch import nn

from foxhunt.config import DQNConfig
from foxhunt.train.device_data import DeviceData, chunk_rows, synchronize
from foxhunt.train.diagnostics import (
    FoldHistory,
    TrainingDiverged,
    check_divergence,
    greedy_diagnostics,
    record_diagnostics,
)
from foxhunt.train.dqn import (
    epsilon_schedule,
    fold_seed,
    huber_loss,
    polyak_update,
    td_target,
    transition_reward,
)
from foxhunt.train.fold_window import FoldWindow
from foxhunt.train.networks import build_qnet, inference_q, linears
from foxhunt.train.policy import FLAT, N_ACTIONS, GreedyEvaluation, policy_state
from foxhunt.train.settings import SHAPE_FIELDS, StepSettings
from foxhunt.train.step import StepParts, TrainStep
from foxhunt.train.warmup import warm_up

# Settings every member of a population shares: the step's shapes and code, and its step count.
POPULATION_SHARED = (*SHAPE_FIELDS, "steps_per_epoch")
ADAM_BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults, which the lone trainer uses
ADAM_EPS = 1e-8


def per_member(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A (P,) vector shaped to broadcast over a stacked (P, ...) tensor."""
    return values.view(-1, *([1] * (like.dim() - 1)))


def population_q(params: list[torch.Tensor], states: torch.Tensor) -> torch.Tensor:
    """Q-values of every member on its own states: (P, rows, in) → (P, rows, actions)."""
    w1, b1, w2, b2, w3, b3 = params
    # Product, then bias: compiled, the bias joins the ReLU's kernel. baddbmm would first copy the
    # bias over the whole (P, rows, out) output, 12 copies a step (bench/population_variants.py:
    # 1.19 ms against 1.58 ms a step for 8 members on an H200).
    h = (torch.bmm(states, w1.transpose(1, 2)) + b1.unsqueeze(1)).relu()
    h = (torch.bmm(h, w2.transpose(1, 2)) + b2.unsqueeze(1)).relu()
    return torch.bmm(h, w3.transpose(1, 2)) + b3.unsqueeze(1)


@torch.no_grad()
def clip_grad_norm_per_member(grads: list[torch.Tensor], max_norm: torch.Tensor) -> None:
    """Scale each member's gradients down so their L2 norm over all its tensors is at most its `max_norm`."""
    # Norm of the per-tensor norms, as torch's get_total_norm computes a lone trainer's.
    total = torch.linalg.vector_norm(torch.stack([g.flatten(1).norm(dim=1) for g in grads]), dim=0)
    scale = torch.clamp(torch.reciprocal(total + 1e-6) * max_norm, max=1.0)
    torch._foreach_mul_(grads, [per_member(scale, g) for g in grads])


@torch.no_grad()
def adam_update(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    exp_avg: list[torch.Tensor],
    exp_avg_sq: list[torch.Tensor],
    step: torch.Tensor,
    lr: torch.Tensor,
) -> None:
    """torch's Adam (no decay term: the L2 is in the gradient) with a learning rate per member, in place."""
    beta1, beta2 = ADAM_BETAS
    step.add_(1)
    torch._foreach_lerp_(exp_avg, grads, 1 - beta1)
    torch._foreach_mul_(exp_avg_sq, beta2)
    torch._foreach_addcmul_(exp_avg_sq, grads, grads, 1 - beta2)
    step_size = lr / (1 - torch.pow(beta1, step))  # (P,)
    bias2_sqrt = torch.sqrt(1 - torch.pow(beta2, step))
    denom = torch._foreach_div(torch._foreach_sqrt(exp_avg_sq), bias2_sqrt)
    torch._foreach_add_(denom, ADAM_EPS)
    updates = torch._foreach_div(exp_avg, denom)
    torch._foreach_mul_(updates, [per_member(-step_size, p) for p in params])
    torch._foreach_add_(params, updates)


def check_population(configs: list[DQNConfig]) -> None:
    """ValueError naming the first setting that members of one population do not share."""
    if not configs:
        raise ValueError("a population needs at least one member")
    first = configs[0]
    for i, config in enumerate(configs[1:], start=1):
        for name in POPULATION_SHARED:
            if getattr(config, name) != getattr(first, name):
                raise ValueError(
                    f"member {i}: {name} {getattr(config, name)!r} differs from member 0's "
                    f"{getattr(first, name)!r}; a population shares {', '.join(POPULATION_SHARED)}"
                )


class Member(GreedyEvaluation):
    """One trial of a population, seen as a lone trainer by validation, diagnostics and checkpointing."""

    def __init__(self, population: PopulationTrainer, index: int, config: DQNConfig):
        self.population, self.index, self.config = population, index, config
        self.history = FoldHistory()
        self.failure: TrainingDiverged | None = None  # the guard stopped this member in this fold
        self.active = True  # False once its trial ended (pruned or failed): its results are not read
        # Its own modules over views of its slot: evaluation code reads a plain nn.Sequential.
        self.online = build_qnet(population.n_features, config.hidden).to(population.device)
        self.online.requires_grad_(False)
        for layer, (weight, bias) in zip(linears(self.online), population.layer_params(), strict=True):
            layer.weight = nn.Parameter(weight.detach()[index], requires_grad=False)
            layer.bias = nn.Parameter(bias.detach()[index], requires_grad=False)

    data = property(lambda self: self.population.data)
    device = property(lambda self: self.population.device)
    mean = property(lambda self: self.population.mean)
    std = property(lambda self: self.population.std)
    fold_range = property(lambda self: self.population.fold_range)
    steps_done = property(lambda self: self.population.steps_done)
    seed = property(lambda self: self.population.seed)
    eval_cost = property(lambda self: self.population.eval_cost)
    eval_spread = property(lambda self: self.population.eval_spread)

    def epoch_diagnostics(self) -> dict[str, torch.Tensor]:
        """The member's greedy policy now (see `DQNTrainer.epoch_diagnostics`)."""
        return greedy_diagnostics(
            self.online, self.data, self.mean, self.std, self.fold_range, self.evaluation_cost()
        )

    def norm_stats_dict(self) -> dict:
        """The fold's norm stats (shared by every member)."""
        return self.population.norm_stats_dict()

    def state_dict_cpu(self) -> dict:
        """The member's online weights on the CPU, keyed as a lone trainer's (`torch.load`-able alone)."""
        return {k: v.detach().cpu().clone() for k, v in self.online.state_dict().items()}


class PopulationTrainer(FoldWindow):
    """P trials of one shape trained side by side; built once, reset in place between folds and trials.

    `members[i]` is trial i's view; `apply_settings` gives the population new members' settings
    (shape-free, as a lone trainer's) without a new capture or compile.
    """

    def __init__(
        self,
        data: DeviceData,
        configs: list[DQNConfig],
        *,
        max_train_rows: int,
        seed: int = 0,
        eval_cost: float | None = None,
        eval_spread: float = 0.0,
        diagnostics: bool = True,
    ):
        check_population(configs)
        self.data, self.config, self.seed = data, configs[0], seed
        self.size = len(configs)
        self.eval_cost, self.eval_spread, self.diagnostics = eval_cost, eval_spread, diagnostics
        self.device = data.features.device
        self.cuda = self.device.type == "cuda"
        if self.cuda:
            torch.set_float32_matmul_precision("high")
        self.n_features = data.features.shape[1]
        self.fused_activation = self.cuda and self.config.fused_activation
        self._build_networks(configs)
        self._build_buffers(int(max_train_rows))
        self.members = [Member(self, i, c) for i, c in enumerate(configs)]
        self.fold_range = None
        self.steps_done = 0
        parts = StepParts(
            draw=self.draw_batch, loss=self.td_loss, update=self.update, zero_grad=self.zero_grad
        )
        self.step = TrainStep(
            parts,
            device=self.device,
            steps_per_graph=self.config.steps_per_graph,
            compile=self.config.compile,
        )
        if self.cuda:
            warm_up(self, int(max_train_rows))
        self.reset_for_fold(0)

    def _build_networks(self, configs: list[DQNConfig]) -> None:
        """Stacked online and target weights, Adam's moments, the settings vectors, the generators."""
        dev, size = self.device, self.size
        shapes = [
            (lin.weight.shape, lin.bias.shape)
            for lin in linears(build_qnet(self.n_features, self.config.hidden))
        ]
        self.params = [
            nn.Parameter(torch.zeros(size, *shape, device=dev)) for pair in shapes for shape in pair
        ]
        self.target_params = [torch.zeros_like(p, requires_grad=False) for p in self.params]
        self.exp_avg = [torch.zeros_like(p, requires_grad=False) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p, requires_grad=False) for p in self.params]
        self.adam_step = torch.zeros((), device=dev)
        self.settings = StepSettings.stacked(dev, configs)
        self.init_generator = torch.Generator(device=dev)
        # As in the lone trainer: private generators on CPU (one per member), the default one on CUDA.
        self.generators = None if self.cuda else [torch.Generator() for _ in configs]

    def layer_params(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The online network's stacked (weight, bias) per layer, input to output."""
        return list(zip(self.params[0::2], self.params[1::2], strict=True))

    def _build_buffers(self, capacity: int) -> None:
        dev, size = self.device, self.size
        self.mean = torch.zeros(self.n_features, device=dev)
        self.std = torch.ones(self.n_features, device=dev)
        self.train_start = torch.zeros((), dtype=torch.long, device=dev)
        self.n_valid = torch.ones((), dtype=torch.long, device=dev)
        self.capacity = capacity
        self.replay_position = torch.zeros(size, capacity, device=dev)
        self.replay_action = torch.full((size, capacity), FLAT, dtype=torch.long, device=dev)
        self.replay_reward = torch.zeros(size, capacity, device=dev)
        self.epsilon_now = torch.zeros(size, device=dev)
        self._u = torch.zeros(size, self.config.batch_size, device=dev)
        self.loss_sum = torch.zeros(size, device=dev)
        self.q_abs_sum = torch.zeros(size, device=dev)
        self.q_absmax = torch.zeros(size, device=dev)

    @property
    def graph_captures(self) -> int:
        """CUDA graphs captured by this population (1 on CUDA for its whole life, 0 on CPU)."""
        return self.step.graph_captures

    @property
    def compiles(self) -> int:
        """Times the step was wrapped by torch.compile (1 on CUDA with `compile`, else 0)."""
        return self.step.compiles

    def apply_settings(self, configs: list[DQNConfig]) -> None:
        """New members' shape-free settings in place (as many as the population has members)."""
        if len(configs) != self.size:
            raise ValueError(f"{len(configs)} settings for a population of {self.size}")
        check_population([self.config, *configs])
        self.settings.fill_(list(configs))
        self.config = configs[0]
        for member, config in zip(self.members, configs, strict=True):
            member.config = config

    # ---- fold lifecycle -------------------------------------------------------------------------
    @torch.no_grad()
    def reset_for_fold(self, fold: int) -> None:
        """Every member forgets, in place: weights drawn as a lone trainer's, target, Adam, replay, counters."""
        seed = fold_seed(self.seed, fold)
        for i in range(self.size):
            init = self.init_generator.manual_seed(seed)
            for weight, bias in self.layer_params():
                bound = 1.0 / math.sqrt(weight.shape[2])
                weight[i].uniform_(-bound, bound, generator=init)
                bias[i].uniform_(-bound, bound, generator=init)
        for t, o in zip(self.target_params, self.params, strict=True):
            t.copy_(o)
        for p in self.params:
            p.grad = None
        for moment in (*self.exp_avg, *self.exp_avg_sq, self.adam_step):
            moment.zero_()
        self.replay_position.zero_()
        self.replay_action.fill_(FLAT)
        self.replay_reward.zero_()
        for accumulator in (self.loss_sum, self.q_abs_sum, self.q_absmax):
            accumulator.zero_()
        for member in self.members:
            member.history, member.failure = FoldHistory(), None
        self.steps_done = 0
        if self.cuda:
            torch.cuda.manual_seed(seed)
        else:
            for generator in self.generators:
                generator.manual_seed(seed)

    # ---- collection: one epsilon-greedy transition per training bar, per member --------------------
    def _draws(self, rows: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Incoming positions, exploration uniforms and random actions, (P, rows) each."""
        dev, size = self.device, self.size
        if self.generators is None:
            incoming = torch.randint(0, N_ACTIONS, (size, rows), device=dev)
            return (
                incoming,
                torch.rand(size, rows, device=dev),
                torch.randint(0, N_ACTIONS, (size, rows), device=dev),
            )
        # A lone trainer's order per member: incoming, then the uniforms, then the random actions.
        draws = [
            (
                torch.randint(0, N_ACTIONS, (rows,), generator=g),
                torch.rand(rows, generator=g),
                torch.randint(0, N_ACTIONS, (rows,), generator=g),
            )
            for g in self.generators
        ]
        return tuple(torch.stack(parts) for parts in zip(*draws, strict=True))

    @torch.no_grad()
    def collect(self, epsilon: float | list[float]) -> int:
        """Fill every member's replay with one epsilon-greedy transition per training bar of the fold."""
        eps = epsilon if isinstance(epsilon, list) else [epsilon] * self.size
        self.epsilon_now.copy_(torch.tensor(eps, dtype=torch.float32))
        fr = self.fold_range
        n = fr.train_rows - 1
        # A lone trainer's chunk, so a CPU member draws exactly its numbers.
        chunk = chunk_rows(self.device)
        for lo in range(0, n, chunk):
            hi = min(lo + chunk, n)
            rows = slice(fr.train_start + lo, fr.train_start + hi)
            incoming, explore_u, random_action = self._draws(hi - lo)
            position = (incoming - 1).to(torch.float32)
            features = self.data.features[rows]
            greedy = torch.stack([self._greedy(m, features, position[i]) for i, m in enumerate(self.members)])
            action = torch.where(explore_u < self.epsilon_now.unsqueeze(1), random_action, greedy)
            self.replay_position[:, lo:hi] = position
            self.replay_action[:, lo:hi] = action
            self.replay_reward[:, lo:hi] = transition_reward(
                position,
                (action - 1).to(torch.float32),
                self.data.targets[rows, 0],
                self.settings.cost.unsqueeze(1),
                self.settings.reward_scale.unsqueeze(1),
            )
        return n

    def _greedy(self, member: Member, features: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        # Member by member, as a lone trainer collects: over a million rows the pass is bound by
        # memory, and the fused bias-and-ReLU products (CUDA) write each activation once; a batched
        # product would write it twice (product, then ReLU) for no fewer bytes.
        state = policy_state(features, position, self.mean, self.std)
        return inference_q(member.online, state, self.fused_activation).argmax(dim=1)

    # ---- the learning step (plain: step.py compiles and captures it) ----------------------------------
    def draw_batch(self) -> torch.Tensor:
        """The batch's random draw: one uniform per sample and member, picking its replay index."""
        if self.generators is None:
            return self._u.uniform_(0.0, 1.0)
        for row, generator in zip(self._u, self.generators, strict=True):
            row.uniform_(0.0, 1.0, generator=generator)
        return self._u

    def q_and_target(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per member, for the transitions drawn by `u` (P, batch): Q taken, TD target, all Q of the states."""
        batch = u.shape[1]
        idx = torch.minimum((u * self.n_valid).long(), self.n_valid - 1)
        rows = idx + self.train_start
        action = self.replay_action.gather(1, idx)
        position = torch.cat(
            [self.replay_position.gather(1, idx), (action - 1).to(self.replay_position.dtype)], dim=1
        )
        states = policy_state(
            self.data.features[torch.cat([rows, rows + 1], dim=1)], position, self.mean, self.std
        )
        state, next_state = states[:, :batch], states[:, batch:]
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.cuda and self.config.bf16):
            q_all = population_q(self.params, state).float()
            with torch.no_grad():
                q_next_online = population_q(self.params, next_state)
                q_next_target = population_q(self.target_params, next_state).float()
        q = q_all.gather(2, action.unsqueeze(2)).squeeze(2)
        reward = self.replay_reward.gather(1, idx)
        return q, td_target(reward, q_next_online, q_next_target, self.settings.gamma.unsqueeze(1)), q_all

    def td_loss(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The members' Huber losses summed (their gradients stay apart), and (3, P) loss, mean and max |Q|."""
        q, y, q_all = self.q_and_target(u)
        losses = huber_loss(q, y, self.settings.huber_delta.unsqueeze(1))
        q_abs = q_all.detach().abs()
        return losses.sum(), torch.stack([losses.detach(), q_abs.mean(dim=(1, 2)), q_abs.amax(dim=(1, 2))])

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def update(self, loss: torch.Tensor, stats: torch.Tensor) -> None:
        """After backward, per member: clip, L2 weight decay, Adam, Polyak step, epoch accumulators."""
        s = self.settings
        grads = [p.grad for p in self.params]
        clip_grad_norm_per_member(grads, s.grad_clip)
        with torch.no_grad():
            torch._foreach_addcmul_(grads, self.params, [per_member(s.weight_decay, p) for p in self.params])
        adam_update(self.params, grads, self.exp_avg, self.exp_avg_sq, self.adam_step, s.lr)
        with torch.no_grad():
            polyak_update(self.target_params, self.params, [per_member(s.tau, p) for p in self.params])
            self.loss_sum.add_(stats[0])
            self.q_abs_sum.add_(stats[1])
            torch.maximum(self.q_absmax, stats[2], out=self.q_absmax)

    # ---- training epochs ---------------------------------------------------------------------------------
    def train_epoch(self, epoch: int, epochs: int) -> list[dict | None]:
        """Collect, run the epoch's steps, read the accumulators once; per member its stats (None when
        it is inactive or its guard stopped it: `member.failure` says why)."""
        t0 = time.perf_counter()
        eps = [epsilon_schedule(epoch, epochs, m.config) for m in self.members]
        self.collect(eps)
        synchronize(self.device)
        t1 = time.perf_counter()
        for accumulator in (self.loss_sum, self.q_abs_sum, self.q_absmax):
            accumulator.zero_()
        replays = math.ceil(self.steps_per_epoch() / self.config.steps_per_graph)
        for _ in range(replays):
            self.step.run()
        done = replays * self.config.steps_per_graph
        loss_sums, q_sums, q_maxes = torch.stack([self.loss_sum, self.q_abs_sum, self.q_absmax]).tolist()
        t2 = time.perf_counter()
        self.steps_done += done
        epoch_stats: list[dict | None] = []
        for member, loss_sum, q_sum, q_max, eps_member in zip(
            self.members, loss_sums, q_sums, q_maxes, eps, strict=True
        ):
            epoch_stats.append(
                self._member_epoch(
                    member, epoch, eps_member, done, loss_sum / done, q_sum / done, q_max, t1 - t0, t2 - t1
                )
            )
        return epoch_stats

    def _member_epoch(self, member, epoch, eps, done, loss, q_mean, q_max, collect_s, train_s) -> dict | None:
        if not member.active or member.failure is not None:
            return None
        try:
            check_divergence(self.fold_range.fold, epoch, loss, q_max, member.config.q_limit)
        except TrainingDiverged as diverged:
            member.failure = diverged
            return None
        member.history.record_epoch(collect_s, train_s, loss, q_mean, q_max)
        stats = {
            "epoch": epoch,
            "loss": loss,
            "epsilon": eps,
            "steps": done,
            "seconds": collect_s + train_s,
            # Each member's own samples over the shared step time: the population's total is the sum.
            "samples_per_second": done * self.config.batch_size / max(train_s, 1e-9),
            "q_mean": q_mean,
            "q_max": q_max,
        }
        if self.diagnostics:
            started = time.perf_counter()
            stats.update(record_diagnostics(member.history, member.epoch_diagnostics(), started))
        return stats

    # ---- what warm_up reads: member 0 stands for all -------------------------------------------------
    def epoch_diagnostics(self) -> dict[str, torch.Tensor]:
        return self.members[0].epoch_diagnostics()

    def validate(self) -> dict:
        return self.members[0].validate()


def padded(configs: list[DQNConfig], size: int) -> list[DQNConfig]:
    """`configs` padded to `size` members with copies of the last one (a partial population's idle slots)."""
    if not configs:
        raise ValueError("no settings to train")
    return [*configs, *[replace(configs[-1]) for _ in range(size - len(configs))]]
