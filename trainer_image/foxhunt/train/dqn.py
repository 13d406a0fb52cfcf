"""Double DQN for a population of P ≥ 1 members, readable top to bottom like CleanRL's dqn.py.

The formulas (epsilon schedule → reward → TD target → loss) → the trainer: weights, replay, collection,
learning step, epochs, resets between folds, warm-up. P = 1 is an ordinary run; P > 1 trains P trials
of one shape side by side, each member with its own settings (a (P,) device vector each), replay, Adam
moments, gradient clip and divergence guard. Built once per run (or per shape of a search), reset in
place between folds; the step machinery (compile, CUDA graph) wraps it (step.py), the stacked
arithmetic is stacked.py's, the held-action targets held_returns.py's, and what the trainer does with a
member's greedy policy (score it, choose the fold's, save it) member_policy.py's: `trainer.policies`.

Actions are positions: index 0, 1, 2 = short, flat, long (position = index − 1). The state at bar t
is the fold-normalized feature row t plus the position held coming into t; the reward of choosing
position p' from p is p' × (1-bar forward log return) − cost × |p' − p| (with `n_step` n > 1, the
discounted returns of holding p' for n bars, the cost once). A position never moves the
market, so every training bar yields a transition and collection is one batched forward pass over the
fold's rows, the incoming position drawn uniformly ("exploring starts").

On the CPU each member draws from its own generator and updates with torch.optim.Adam's arithmetic,
so a member learns bit for bit what the same trial alone learns; on CUDA all members draw from the
default generator inside the captured graph (reproducible for the same population, different with P).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import cast

import torch

from foxhunt.config import DQNConfig
from foxhunt.config.dqn import trainer_configs
from foxhunt.data.pnl import ExecutionRows
from foxhunt.train.device_data import DeviceData, FoldWindow, execution_on_device, synchronize
from foxhunt.train.diagnostics import FoldHistory, TrainingDiverged, check_divergence
from foxhunt.train.epoch_figures import EpochFigures
from foxhunt.train.held_returns import bootstrap_bars, discount_table_, new_discount_table
from foxhunt.train.member_policy import MemberPolicies
from foxhunt.train.networks import build_qnet, member_network
from foxhunt.train.policy import linears, policy_state
from foxhunt.train.reductions import fixed_mean
from foxhunt.train.replay import Replay
from foxhunt.train.selection import TailSelection, head_end
from foxhunt.train.settings import StepSettings, check_population, check_shape_free
from foxhunt.train.stacked import (
    BF16_ALIGN,
    adam_update,
    clip_grad_norm_per_member,
    exact_member_update,
    init_members,
    paired_q,
    per_member,
    polyak_update,
    stacked_q,
    stacked_weights,
)
from foxhunt.train.step import StepParts, TrainStep, warm_up_parts


# ---- the algorithm's formulas ----------------------------------------------------------------------
def fold_seed(seed: int, fold: int) -> int:
    """One seed per (run seed, fold): folds are reproducible alone and independent of order."""
    return (seed * 1_000_003 + fold * 7_919) % (2**63 - 1)


def epsilon_schedule(epoch: int, epochs: int, config: DQNConfig) -> float:
    """Linear decay from eps_start to eps_end over the first eps_decay_fraction of the epochs."""
    span = max(1.0, config.eps_decay_fraction * epochs)
    frac = min(1.0, epoch / span)
    return config.eps_start + (config.eps_end - config.eps_start) * frac


def td_target(reward, q_next_online, q_next_target, discount) -> torch.Tensor:
    """Double DQN: the online network picks the next action, the target network values it (actions last);
    `discount` is γ, or γ^m per transition for a target that held its action m bars (held_returns.py)."""
    best = q_next_online.argmax(dim=-1, keepdim=True)
    return reward + discount * q_next_target.gather(-1, best).squeeze(-1)


def huber_loss(q: torch.Tensor, y: torch.Tensor, delta: torch.Tensor) -> torch.Tensor:
    """Mean Huber (smooth L1) loss over the batch (the last dimension) with a knee at `delta`."""
    diff = q - y
    size = diff.abs()
    # fixed_mean: a batch past ATen's grain would otherwise round by the CPU's thread count (reductions.py)
    return fixed_mean(torch.where(size < delta, 0.5 * diff * diff / delta, size - 0.5 * delta))


class DQNTrainer:
    """Double DQN for P members over index ranges of device arrays; one instance serves every fold (and
    every trial of its shape in a search).

    State that persists: the device data, the stacked weights, Adam's moments, the replay, the step
    (compiled and captured once), the settings buffers; `set_fold_range`, `reset_for_fold` and
    `apply_settings` refill them in place. `networks[i]` is member i's network (views of its slot).
    `policies` scores, chooses and saves the members' greedy policies (member_policy.py) at the
    evaluation settings (`eval_cost`, `eval_spread`, and the evaluation's execution rows `execution`, host
    arrays over the whole data that the tail selection scores with), fixed for the trainer's life;
    `eval_cost=None` scores at the member's training cost.
    """

    def __init__(
        self,
        data: DeviceData,
        config: DQNConfig | Sequence[DQNConfig],
        *,
        max_train_rows: int,
        seed: int = 0,
        eval_cost: float | None = None,
        eval_spread: float = 0.0,
        execution: ExecutionRows | None = None,
        diagnostics: bool = True,
        member_seeds: Sequence[int] | None = None,
    ):
        self.configs = trainer_configs(config)
        check_population(self.configs)
        self.size = len(self.configs)
        self.data, self.seed, self.diagnostics = data, seed, diagnostics
        # Each member's run seed (initialisation and, on the CPU, its draws): all `seed` unless given
        # (--seeds K: member i trains from seed + i, member 0 exactly as a run of one).
        self.member_seeds = [seed] * self.size if member_seeds is None else [int(s) for s in member_seeds]
        if len(self.member_seeds) != self.size:
            raise ValueError(f"{len(self.member_seeds)} member seeds for a population of {self.size}")
        self.device = data.features.device
        self.cuda = self.device.type == "cuda"
        if self.cuda:
            torch.set_float32_matmul_precision("high")  # TF32: the net is small, the batch large
        self.fused_activation = self.cuda and self.config.fused_activation
        self._build_weights(data.features.shape[1])
        self._build_buffers(data.features.shape[1], int(max_train_rows))
        self.networks = [member_network(self.params, i, self.config.hidden) for i in range(self.size)]
        self.histories = [FoldHistory() for _ in range(self.size)]
        self.failures: list[TrainingDiverged | None] = [None] * self.size  # the guard stopped member i
        self.selection = TailSelection(self.size)  # select_tail_share > 0: the best epoch on the tail
        self.policies = MemberPolicies(
            networks=self.networks, configs=self.configs, window=self.window, data=data,
            selection=self.selection, eval_cost=eval_cost, eval_spread=eval_spread,
            execution=execution_on_device(execution, self.device),
        )  # fmt: skip
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
        if self.cuda:  # load every kernel a fold launches now, not in the first fold's transition
            self.warm_up(int(max_train_rows))
        self.reset_for_fold(0)

    def _build_weights(self, n_features: int) -> None:
        """Stacked online and target weights (paired on CUDA), Adam's moments, settings, generators."""
        dev, size = self.device, self.size
        shapes = [
            s for lin in linears(build_qnet(n_features, self.config.hidden)) for s in (lin.weight, lin.bias)
        ]
        # Paired next-state products for a lone member; a population's stacked ones are faster (H200, P=8).
        paired = self.cuda and self.config.paired_next_state and size == 1
        self.params, self.target_params, self.pairs = stacked_weights(
            [s.shape for s in shapes], size, dev, paired
        )
        self.exp_avg = [torch.zeros_like(p, requires_grad=False) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p, requires_grad=False) for p in self.params]
        self.adam_step = torch.zeros((), device=dev)
        self.settings = StepSettings.stacked(dev, self.configs)
        self.discounts = new_discount_table(self.configs, dev)  # γ^k, read by the step
        self.init_generator = torch.Generator(device=dev)
        # On the CPU one private generator per member; on CUDA the default generator, whose philox
        # offsets CUDA graph replays advance.
        self.generators = None if self.cuda else [torch.Generator() for _ in range(size)]

    def _build_buffers(self, n_features: int, capacity: int) -> None:
        """Fixed device buffers the captured step reads: norm stats, fold scalars, replay, accumulators."""
        dev, size = self.device, self.size
        self.window = FoldWindow(self.data, capacity)  # the fold's range and norm stats, in fixed buffers
        self.replay = Replay(size, capacity, dev)  # one transition per training bar, per member
        self._u = torch.zeros(size, self.config.batch_size, device=dev)  # the batch's uniforms
        self.loss_sum = torch.zeros(size, device=dev)  # the epoch's accumulators, read once per epoch
        self.q_abs_sum = torch.zeros(size, device=dev)
        self.q_absmax = torch.zeros(size, device=dev)

    @property
    def config(self) -> DQNConfig:
        """Member 0's settings (the shape every member shares)."""
        return self.configs[0]

    @property
    def graph_captures(self) -> int:
        """CUDA graphs captured by this trainer (1 on CUDA for its whole life, 0 on CPU)."""
        return self.step.graph_captures

    @property
    def compiles(self) -> int:
        """Times the step was wrapped by torch.compile (1 on CUDA with `compile`, else 0)."""
        return self.step.compiles

    def apply_settings(self, config: DQNConfig | Sequence[DQNConfig]) -> None:
        """Switch the members to new shape-free settings in place (from the next collection or step): no
        new module, capture or compile. A setting of SHAPE_FIELDS that changes, or members that differ in
        one of POPULATION_SHARED, is a ValueError naming it: that needs a new trainer."""
        configs = trainer_configs(config)
        if len(configs) != self.size:
            raise ValueError(f"{len(configs)} settings for a population of {self.size}")
        for new in configs:
            check_shape_free(self.config, new)
        check_population(configs)
        self.configs[:] = configs  # in place: `policies` reads the same list
        self.settings.fill_(configs)
        discount_table_(self.discounts, configs)

    # ---- the fold (its range and norm stats: device_data.FoldWindow) --------------------------------
    def set_fold_range(self, fold_range) -> None:
        """Point the window at the fold; with `select_tail_share` the learner reads only the slice's head."""
        self.window.set_fold_range(fold_range, head_end(fold_range, self.config.select_tail_share))

    @torch.no_grad()
    def reset_for_fold(self, fold: int) -> None:
        """Every member forgets, in place: weights, target, Adam, replay, counters, generators."""
        seeds = [fold_seed(s, fold) for s in self.member_seeds]
        seed = seeds[0]
        init_members(self.params, self.init_generator, seeds)
        for t, o in zip(self.target_params, self.params, strict=True):
            t.copy_(o)
        for p in self.params:
            p.grad = None
        for moment in (*self.exp_avg, *self.exp_avg_sq, self.adam_step):
            moment.zero_()
        self.replay.clear()
        for accumulator in (self.loss_sum, self.q_abs_sum, self.q_absmax):
            accumulator.zero_()
        self.histories = [FoldHistory() for _ in range(self.size)]
        self.failures = [None] * self.size
        self.selection.reset()
        self.steps_done = 0
        if self.generators is None:
            torch.cuda.manual_seed(seed)
        else:
            for generator, member_seed in zip(self.generators, seeds, strict=True):
                generator.manual_seed(member_seed)

    # ---- collection: one epsilon-greedy transition per training bar, per member (replay.py) ----------
    def collect(self, epsilon: float | Sequence[float]) -> int:
        """Fill every member's replay with one epsilon-greedy transition per training bar of the fold."""
        eps = [float(epsilon)] * self.size if isinstance(epsilon, (int, float)) else list(epsilon)
        held = self.replay.held_returns(
            self.window, [c.gamma for c in self.configs], [c.n_step for c in self.configs]
        )
        return self.replay.collect(
            self.networks, self.window, self.settings, self.generators, eps, self.fused_activation, held
        )

    # ---- the learning step (plain: step.py compiles and captures it) ---------------------------------
    def draw_batch(self) -> torch.Tensor:
        """The batch's random draw: one uniform per sample and member, picking its replay index."""
        if self.generators is None:
            return self._u.uniform_(0.0, 1.0)
        for row, generator in zip(self._u, self.generators, strict=True):
            row.uniform_(0.0, 1.0, generator=generator)
        return self._u

    def q_and_target(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per member, for the transitions drawn by `u` (P, batch): Q taken, TD target, all Q of the states."""
        batch, window = u.shape[1], self.window
        idx = torch.minimum((u * window.n_valid).long(), window.n_valid - 1)
        rows = window.rows[idx]  # the fold's transition rows: t + 1 lies in t's span by construction
        action = self.replay.action.gather(1, idx)
        # 1 unless n_step > 1; never past the span's end (window.left), so never into another instrument
        hold = bootstrap_bars(idx, window.left[idx], self.settings.n_step)
        # State and next state in one gather: rows t and t + m; the next position is the action taken.
        position = torch.cat(
            [self.replay.position.gather(1, idx), (action - 1).to(self.replay.position.dtype)], dim=1
        )
        both = torch.cat([rows, rows + hold], dim=1)
        states = policy_state(self.data.features[both], position, *window.row_stats(both))
        state, next_state = states[:, :batch], states[:, batch:]
        bf16 = self.cuda and self.config.bf16
        align = BF16_ALIGN if bf16 else 1  # bf16's products padded to the tensor cores' sizes
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=bf16):
            q_all = stacked_q(self.params, state, align).float()
            with torch.no_grad():
                if self.pairs is None:
                    q_next_online = stacked_q(self.params, next_state, align)
                    q_next_target = stacked_q(self.target_params, next_state, align)
                else:
                    q_next_online, q_next_target = paired_q(self.pairs, next_state, align)
                q_next_target = q_next_target.float()
        q, reward = q_all.gather(2, action.unsqueeze(2)).squeeze(2), self.replay.reward.gather(1, idx)
        return q, td_target(reward, q_next_online, q_next_target, self.discounts.gather(1, hold)), q_all

    def td_loss(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The members' Huber losses summed (their gradients stay apart), and (3, P) loss, mean and max |Q|."""
        q, y, q_all = self.q_and_target(u)
        losses = huber_loss(q, y, self.settings.huber_delta.unsqueeze(1))
        q_abs = q_all.detach().abs()
        return losses.sum(), torch.stack(
            [losses.detach(), fixed_mean(q_abs.flatten(1)), q_abs.amax(dim=(1, 2))]
        )

    def zero_grad(self) -> None:
        # None, not zeros: backward writes each gradient (no add to zeros); captured, in the graph's pool.
        for p in self.params:
            p.grad = None

    def update(self, loss: torch.Tensor, stats: torch.Tensor) -> None:
        """After backward, per member: clip, L2 weight decay, Adam, Polyak step of the target, accumulators."""
        s = self.settings
        grads = cast(list[torch.Tensor], [p.grad for p in self.params])  # set by the backward before
        if self.cuda:  # stacked, with the settings on the device: compiled and captured once
            clip_grad_norm_per_member(grads, s.grad_clip)
            with torch.no_grad():
                torch._foreach_addcmul_(
                    grads, self.params, [per_member(s.weight_decay, p) for p in self.params]
                )
            adam_update(self.params, grads, self.exp_avg, self.exp_avg_sq, self.adam_step, s.lr)
        else:  # member by member, torch.optim.Adam's own arithmetic (stacked.py says why)
            self.adam_step.add_(1)
            step = int(self.adam_step.item())
            for i, config in enumerate(self.configs):
                exact_member_update(
                    self.params, grads, self.exp_avg, self.exp_avg_sq, step, i, config.lr,
                    s.grad_clip[i], s.weight_decay[i],
                )  # fmt: skip
        with torch.no_grad():
            polyak_update(self.target_params, self.params, [per_member(s.tau, p) for p in self.params])
            self.loss_sum.add_(stats[0])
            self.q_abs_sum.add_(stats[1])
            torch.maximum(self.q_absmax, stats[2], out=self.q_absmax)

    # ---- training epochs --------------------------------------------------------------------------------
    def train_epoch(
        self,
        epoch: int,
        epochs: int,
        active: Sequence[int] | None = None,
        on_replay: Callable[[int, int], None] | None = None,
        diagnose: bool = True,
    ) -> list[EpochFigures | None]:
        """Collect, run the epoch's steps, read the accumulators once; per member its figures, or None for a
        member outside `active` (default: all) or one whose guard stopped it (`failures[i]` says why).
        `on_replay(done, total)` follows the step's replays; `diagnose=False` leaves the diagnostics None."""
        t0 = time.perf_counter()
        eps = [epsilon_schedule(epoch, epochs, c) for c in self.configs]
        self.collect(eps)
        synchronize(self.device)
        t1 = time.perf_counter()
        for accumulator in (self.loss_sum, self.q_abs_sum, self.q_absmax):
            accumulator.zero_()
        replays = math.ceil(self.window.steps_per_epoch(self.config) / self.config.steps_per_graph)
        for replay in range(replays):
            self.step.run()
            if on_replay is not None:
                on_replay(replay + 1, replays)
        done = replays * self.config.steps_per_graph
        loss_sums, q_sums, q_maxes = torch.stack(
            [self.loss_sum, self.q_abs_sum, self.q_absmax]
        ).tolist()  # one sync
        t2 = time.perf_counter()
        self.steps_done += done
        figures: list[EpochFigures | None] = [None] * self.size
        histories: dict[int, FoldHistory | None] = {}
        for i in range(self.size) if active is None else active:
            if self.failures[i] is not None:
                continue
            loss, q_mean, q_max = loss_sums[i] / done, q_sums[i] / done, q_maxes[i]
            try:
                check_divergence(self.window.fold.fold, epoch, loss, q_max, self.configs[i].q_limit)
            except TrainingDiverged as diverged:
                self.failures[i] = diverged
                continue
            self.histories[i].record_epoch(t1 - t0, t2 - t1, loss, q_mean, q_max)
            # Each member's own samples over the shared step time: a population's total is the sum.
            speed = done * self.config.batch_size / max(t2 - t1, 1e-9)
            figures[i] = EpochFigures(epoch, loss, eps[i], done, t1 - t0, t2 - t1, speed, q_mean, q_max)
            histories[i] = self.histories[i] if self.diagnostics and diagnose else None
        # The diagnostics (when due) and the tail score (when selecting): one host read for all members.
        reads = self.policies.epoch_figures(epoch, histories)
        t3 = time.perf_counter()
        for i in histories:
            figures[i] = replace(cast(EpochFigures, figures[i]), **reads.get(i, {}), select_seconds=t3 - t2)
        return figures

    @torch.no_grad()
    def warm_up(self, max_train_rows: int) -> None:
        """A fold's transition, collection and evaluation once at build, on a range shaped like the largest
        fold, then undone: CUDA loads each kernel and cuBLAS picks each shape's kernels on first use, which
        the first fold paid before (≈35 ms against ≈1 ms). `reset_for_fold` then resets the rest."""
        parts = warm_up_parts(self.data.universe, max_train_rows)
        if not parts:
            return
        self.window.set_parts(parts)
        self.window.compute_norm_stats()
        self.collect(0.5)
        self.policies.epoch_diagnostics()
        self.policies.validate()
        synchronize(self.device)
        self.window.clear()
