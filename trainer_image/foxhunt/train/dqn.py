"""Double DQN over index ranges of device arrays, readable top to bottom like CleanRL's dqn.py.

Q-network (networks.py) → epsilon schedule → reward → TD target → loss and update → the trainer: replay,
collection, training epochs, resets between folds. The trainer is built once per run and reset in
place between folds. The step machinery (compile, CUDA graph) is in step.py, the settings it reads
from the device in settings.py, evaluation in policy.py, per-epoch diagnostics in diagnostics.py.

Actions are positions: index 0, 1, 2 = short, flat, long (position = index − 1). The state at bar t
is the fold-normalized feature row t plus the position held coming into t; the reward of choosing
position p' from p is p' × (1-bar forward log return) − cost × |p' − p|. Because a position never
moves the market, every training bar yields a transition, and collection is one batched forward
pass over the fold's rows ("exploring starts": the incoming position is drawn uniformly, so the
replay covers every (bar, position) pair the greedy policy can reach).
"""

from __future__ import annotations

import math
import time

import torch
from torch import nn

from foxhunt.config import DQNConfig
from foxhunt.train.device_data import DeviceData, chunk_rows, synchronize
from foxhunt.train.diagnostics import FoldHistory, check_divergence, greedy_diagnostics, record_diagnostics
from foxhunt.train.fold_window import FoldWindow
from foxhunt.train.networks import build_qnet, inference_q, pair_networks, paired_q
from foxhunt.train.policy import FLAT, N_ACTIONS, GreedyEvaluation, policy_state
from foxhunt.train.settings import StepSettings, check_shape_free
from foxhunt.train.step import StepParts, TrainStep
from foxhunt.train.warmup import warm_up


# ---- the Q-network (networks.py) and the fold's seed -----------------------------------------------
def fold_seed(seed: int, fold: int) -> int:
    """One seed per (run seed, fold): folds are reproducible alone and independent of order."""
    return (seed * 1_000_003 + fold * 7_919) % (2**63 - 1)


# ---- the algorithm's formulas ----------------------------------------------------------------------
def epsilon_schedule(epoch: int, epochs: int, config: DQNConfig) -> float:
    """Linear decay from eps_start to eps_end over the first eps_decay_fraction of the epochs."""
    span = max(1.0, config.eps_decay_fraction * epochs)
    frac = min(1.0, epoch / span)
    return config.eps_start + (config.eps_end - config.eps_start) * frac


def transition_reward(
    position: torch.Tensor,
    new_position: torch.Tensor,
    next_return: torch.Tensor,
    cost: float | torch.Tensor,
    scale: float | torch.Tensor,
) -> torch.Tensor:
    """(new position × the bar's forward return − cost × |position change|) × reward scale."""
    return (new_position * next_return - cost * (new_position - position).abs()) * scale


def td_target(
    reward: torch.Tensor,
    q_next_online: torch.Tensor,
    q_next_target: torch.Tensor,
    gamma: float | torch.Tensor,
) -> torch.Tensor:
    """Double DQN: the online network picks the next action, the target network values it.

    Actions are the last dimension, so a population's (members, batch, actions) values work as a lone
    trainer's (batch, actions), with `gamma` of shape (members, 1).
    """
    best = q_next_online.argmax(dim=-1, keepdim=True)
    return reward + gamma * q_next_target.gather(-1, best).squeeze(-1)


def huber_loss(q: torch.Tensor, y: torch.Tensor, delta: torch.Tensor) -> torch.Tensor:
    """Mean Huber (smooth L1) loss over the batch (the last dimension) with a knee at `delta`.

    `delta` may be a device value; for a population's (members, batch) it is (members, 1) and the
    result is one loss per member.
    """
    diff = q - y
    size = diff.abs()
    return torch.where(size < delta, 0.5 * diff * diff / delta, size - 0.5 * delta).mean(dim=-1)


@torch.no_grad()
def clip_grad_norm(grads: list[torch.Tensor], max_norm: torch.Tensor) -> None:
    """Scale the gradients down so their global L2 norm is at most `max_norm` (a device value)."""
    total = torch.nn.utils.get_total_norm(grads, foreach=True)
    # reciprocal × max_norm, as torch's own clip computes `float / tensor`: same values bit for bit.
    torch._foreach_mul_(grads, torch.clamp(torch.reciprocal(total + 1e-6) * max_norm, max=1.0))


@torch.no_grad()
def polyak_update(
    target: list[torch.Tensor], online: list[torch.Tensor], tau: torch.Tensor | list[torch.Tensor]
) -> None:
    """target ← (1 − τ) · target + τ · online, in place, with τ a device value (or one per tensor)."""
    # target + τ·(online − target) as one fused multiply-add, which rounds as torch's lerp does for
    # τ < 0.5; foreach lerp takes τ only as a host number, and inductor does not fuse its tensor form.
    taus = tau if isinstance(tau, list) else [tau] * len(target)
    torch._foreach_addcmul_(target, torch._foreach_sub(online, target), taus)


class DQNTrainer(FoldWindow, GreedyEvaluation):
    """Double DQN over index ranges of device arrays; one instance serves every fold and trial of a run.

    State that persists: the device data, the modules, the optimizer, the replay, the step (compiled
    and captured once), the settings buffers. `set_fold_range`, `reset_for_fold` and `apply_settings`
    refill them in place. Evaluation settings (`eval_cost`, `eval_spread`) are fixed for the trainer's
    life and score validation and diagnostics; `eval_cost=None` scores at the training cost.
    """

    def __init__(
        self,
        data: DeviceData,
        config: DQNConfig,
        *,
        max_train_rows: int,
        seed: int = 0,
        eval_cost: float | None = None,
        eval_spread: float = 0.0,
        diagnostics: bool = True,
    ):
        self.data, self.config, self.seed = data, config, seed
        self.eval_cost, self.eval_spread, self.diagnostics = eval_cost, eval_spread, diagnostics
        self.device = data.features.device
        self.cuda = self.device.type == "cuda"
        if self.cuda:
            torch.set_float32_matmul_precision("high")  # TF32: the net is small, the batch large
        self._build_networks(data.features.shape[1])
        self._build_buffers(data.features.shape[1], int(max_train_rows))
        self.fold_range = None
        self.history = FoldHistory()
        self.steps_done = 0
        parts = StepParts(
            draw=self.draw_batch, loss=self.td_loss, update=self.update, zero_grad=self.zero_grad
        )
        self.step = TrainStep(
            parts, device=self.device, steps_per_graph=config.steps_per_graph, compile=config.compile
        )
        if self.cuda:  # load every kernel a fold launches now, not in the first fold's transition
            warm_up(self, int(max_train_rows))
        self.reset_for_fold(0)

    def _build_networks(self, n_features: int) -> None:
        """Online and target networks, the optimizer, the settings buffers and the generators."""
        dev, config = self.device, self.config
        self.online = build_qnet(n_features, config.hidden).to(dev)
        self.target = build_qnet(n_features, config.hidden).to(dev)
        self.target.requires_grad_(False)
        # On CUDA the two networks can share stacked weight buffers, evaluated on the next state as
        # one batched product per layer; before the optimizer exists, which then holds the views.
        self.pairs = (
            pair_networks(self.online, self.target) if self.cuda and config.paired_next_state else None
        )
        self.fused_activation = self.cuda and config.fused_activation
        self.settings = StepSettings.on(dev, config)
        # On CUDA Adam reads the learning rate from the settings buffer (a tensor lr needs
        # capturable=True); on CPU, where nothing is captured, the param group's float is updated.
        lr = self.settings.lr if self.cuda else config.lr
        self.optimizer = torch.optim.Adam(self.online.parameters(), lr=lr, capturable=self.cuda, foreach=True)
        self.init_generator = torch.Generator(device=dev)
        # On CPU a private generator keeps runs reproducible; on CUDA the default generator is
        # the one whose philox offsets CUDA graph replays advance.
        self.generator = None if self.cuda else torch.Generator()

    def _build_buffers(self, n_features: int, capacity: int) -> None:
        """Fixed device buffers the captured step reads: norm stats, fold scalars, replay, accumulators."""
        dev = self.device
        self.mean = torch.zeros(n_features, device=dev)
        self.std = torch.ones(n_features, device=dev)
        self.train_start = torch.zeros((), dtype=torch.long, device=dev)
        self.n_valid = torch.ones((), dtype=torch.long, device=dev)
        # Replay: one transition per training bar, sized once for the largest fold.
        self.capacity = capacity
        self.replay_position = torch.zeros(capacity, device=dev)
        self.replay_action = torch.full((capacity,), FLAT, dtype=torch.long, device=dev)
        self.replay_reward = torch.zeros(capacity, device=dev)
        # The batch's uniforms and the epoch's accumulators (read once per epoch, one host sync).
        self._u = torch.zeros(self.config.batch_size, device=dev)
        self.loss_sum = torch.zeros((), device=dev)
        self.q_abs_sum = torch.zeros((), device=dev)
        self.q_absmax = torch.zeros((), device=dev)

    @property
    def graph_captures(self) -> int:
        """CUDA graphs captured by this trainer (1 on CUDA for its whole life, 0 on CPU)."""
        return self.step.graph_captures

    @property
    def compiles(self) -> int:
        """Times the step was wrapped by torch.compile (1 on CUDA with `compile`, else 0)."""
        return self.step.compiles

    def apply_settings(self, config: DQNConfig) -> None:
        """Switch to `config`'s shape-free settings in place: no new module, capture or compile.

        A setting that changes shapes or the step's code (see SHAPE_FIELDS) is a ValueError naming
        it: that needs a new trainer. Takes effect from the next collection or step.
        """
        check_shape_free(self.config, config)
        self.config = config
        self.settings.fill_(config)
        if not self.cuda:
            for group in self.optimizer.param_groups:
                group["lr"] = config.lr

    # ---- fold lifecycle -------------------------------------------------------------------
    @torch.no_grad()
    def reset_for_fold(self, fold: int) -> None:
        """Forget everything learnt, in place: weights, target, Adam moments and step, replay, counters."""
        seed = fold_seed(self.seed, fold)
        # Drawn on the device, in place: no host-to-device copy, and the graph's pointers stay valid.
        init = self.init_generator.manual_seed(seed)
        for layer in self.online:
            if isinstance(layer, nn.Linear):
                bound = 1.0 / math.sqrt(layer.in_features)
                layer.weight.uniform_(-bound, bound, generator=init)
                layer.bias.uniform_(-bound, bound, generator=init)
        for t, o in zip(self.target.parameters(), self.online.parameters(), strict=True):
            t.copy_(o)
        for p in self.online.parameters():
            if p.grad is not None:
                p.grad.zero_()
            for value in self.optimizer.state.get(p, {}).values():
                if torch.is_tensor(value):
                    value.zero_()
        self.replay_position.zero_()
        self.replay_action.fill_(FLAT)
        self.replay_reward.zero_()
        for accumulator in (self.loss_sum, self.q_abs_sum, self.q_absmax):
            accumulator.zero_()
        self.history = FoldHistory()
        self.steps_done = 0
        if self.cuda:
            torch.cuda.manual_seed(seed)
        else:
            self.generator.manual_seed(seed)

    # ---- collection: one epsilon-greedy transition per training bar ---------------------------------
    @torch.no_grad()
    def collect(self, epsilon: float) -> int:
        """Fill the replay with one epsilon-greedy transition per training bar of the fold."""
        fr = self.fold_range
        n = fr.train_rows - 1
        chunk = chunk_rows(self.device)
        for lo in range(0, n, chunk):
            hi = min(lo + chunk, n)
            rows = slice(fr.train_start + lo, fr.train_start + hi)
            incoming = torch.randint(0, N_ACTIONS, (hi - lo,), device=self.device, generator=self.generator)
            position = (incoming - 1).to(torch.float32)
            state = policy_state(self.data.features[rows], position, self.mean, self.std)
            greedy = inference_q(self.online, state, self.fused_activation).argmax(dim=1)
            explore = torch.rand(hi - lo, device=self.device, generator=self.generator) < epsilon
            random_action = torch.randint(
                0, N_ACTIONS, (hi - lo,), device=self.device, generator=self.generator
            )
            action = torch.where(explore, random_action, greedy)
            self.replay_position[lo:hi] = position
            self.replay_action[lo:hi] = action
            self.replay_reward[lo:hi] = transition_reward(
                position,
                (action - 1).to(torch.float32),
                self.data.targets[rows, 0],
                self.settings.cost,
                self.settings.reward_scale,
            )
        return n

    # ---- the learning step (plain: step.py compiles and captures it) -------------------------------------
    def draw_batch(self) -> torch.Tensor:
        """The batch's random draw: one uniform per sample, picking its replay index."""
        return self._u.uniform_(0.0, 1.0, generator=self.generator)

    def q_and_target(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """For the transitions drawn by `u`: Q of the action taken, its TD target, and all Q of the states."""
        batch = u.shape[0]
        idx = torch.minimum((u * self.n_valid).long(), self.n_valid - 1)
        rows = idx + self.train_start
        action = self.replay_action[idx]
        # State and next state in one gather: rows t and t + 1; the next position is the action taken.
        position = torch.cat([self.replay_position[idx], (action - 1).to(self.replay_position.dtype)])
        states = policy_state(self.data.features[torch.cat([rows, rows + 1])], position, self.mean, self.std)
        state, next_state = states[:batch], states[batch:]
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.cuda and self.config.bf16):
            q_all = self.online(state).float()
            with torch.no_grad():
                if self.pairs is None:
                    q_next_online, q_next_target = self.online(next_state), self.target(next_state)
                else:
                    q_next_online, q_next_target = paired_q(self.pairs, next_state)
                q_next_target = q_next_target.float()
        q = q_all.gather(1, action.unsqueeze(1)).squeeze(1)
        return q, td_target(self.replay_reward[idx], q_next_online, q_next_target, self.settings.gamma), q_all

    def td_loss(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Double-DQN Huber loss on the batch drawn by `u`, and the batch's mean and max |Q|."""
        q, y, q_all = self.q_and_target(u)
        q_abs = q_all.detach().abs()
        return huber_loss(q, y, self.settings.huber_delta), torch.stack([q_abs.mean(), q_abs.max()])

    def zero_grad(self) -> None:
        # None, not zeros: backward then writes each gradient instead of adding to zeros (one
        # kernel less per weight); under capture the new gradients live in the graph's own pool.
        self.optimizer.zero_grad(set_to_none=True)

    def update(self, loss: torch.Tensor, q_stats: torch.Tensor) -> None:
        """After backward: clip, L2 weight decay, Adam, Polyak step of the target, epoch accumulators."""
        s = self.settings
        params = list(self.online.parameters())
        grads = [p.grad for p in params]
        clip_grad_norm(grads, s.grad_clip)
        with torch.no_grad():
            # Adam's own L2 term (grad + decay × weight, rounded as Adam rounds it), decay from the device.
            torch._foreach_addcmul_(grads, params, [s.weight_decay] * len(params))
        self.optimizer.step()
        with torch.no_grad():
            polyak_update(list(self.target.parameters()), params, s.tau)
            self.loss_sum.add_(loss)
            self.q_abs_sum.add_(q_stats[0])
            torch.maximum(self.q_absmax, q_stats[1], out=self.q_absmax)

    # ---- training epochs -----------------------------------------------------------------------------
    def epsilon(self, epoch: int, epochs: int) -> float:
        """Exploration rate of the epoch's collection (see `epsilon_schedule`)."""
        return epsilon_schedule(epoch, epochs, self.config)

    def train_epoch(self, epoch: int, epochs: int) -> dict:
        """Collect, run the epoch's gradient steps, read loss and |Q| once; then the policy diagnostics."""
        t0 = time.perf_counter()
        eps = self.epsilon(epoch, epochs)
        self.collect(eps)
        synchronize(self.device)
        t1 = time.perf_counter()
        for accumulator in (self.loss_sum, self.q_abs_sum, self.q_absmax):
            accumulator.zero_()
        replays = math.ceil(self.steps_per_epoch() / self.config.steps_per_graph)
        for _ in range(replays):
            self.step.run()
        done = replays * self.config.steps_per_graph
        loss_sum, q_sum, q_max = torch.stack(
            [self.loss_sum, self.q_abs_sum, self.q_absmax]
        ).tolist()  # one sync
        loss, q_mean = loss_sum / done, q_sum / done
        t2 = time.perf_counter()
        check_divergence(self.fold_range.fold, epoch, loss, q_max, self.config.q_limit)
        self.history.record_epoch(t1 - t0, t2 - t1, loss, q_mean, q_max)
        self.steps_done += done
        stats = {
            "epoch": epoch,
            "loss": loss,
            "epsilon": eps,
            "steps": done,
            "seconds": t2 - t0,
            "samples_per_second": done * self.config.batch_size / max(t2 - t1, 1e-9),
            "q_mean": q_mean,
            "q_max": q_max,
        }
        if self.diagnostics:
            started = time.perf_counter()
            stats.update(record_diagnostics(self.history, self.epoch_diagnostics(), started))
        return stats

    def epoch_diagnostics(self) -> dict[str, torch.Tensor]:
        """The greedy policy now: validation action shares and Sharpe, in-sample Sharpe, feature agreement."""
        return greedy_diagnostics(
            self.online, self.data, self.mean, self.std, self.fold_range, self.evaluation_cost()
        )

    def state_dict_cpu(self) -> dict:
        """The online network's weights, on the CPU, for `torch.load(weights_only=True)`."""
        return {k: v.detach().cpu() for k, v in self.online.state_dict().items()}
