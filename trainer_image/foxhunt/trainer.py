"""The persistent Double-DQN trainer: built once per run, reset in place between folds.

Readable top to bottom: device data → network → replay → collect → train step (one CUDA
graph on GPU, eager on CPU) → greedy validation by a log-depth scan → metrics.

Actions are positions: index 0, 1, 2 = short, flat, long (position = index − 1). The state
at bar t is the fold-normalized feature row t plus the position held coming into t; the
reward of choosing position p' from p is p' × (1-bar forward log return) − cost × |p' − p|.
Because a position never moves the market, every training bar yields a transition, and
collection is one batched forward pass over the fold's rows ("exploring starts": the
incoming position is drawn uniformly, so the replay covers every (bar, position) pair the
greedy policy can reach).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from foxhunt.bars import NS_PER_DAY
from foxhunt.config import DQNConfig

N_ACTIONS = 3
FLAT = 1  # action index of the flat position
# Rows per batched forward pass in collection and validation: bounds activation memory, and on a
# GPU a larger chunk means fewer launches.
_CHUNK_ROWS = {"cpu": 1 << 18, "cuda": 1 << 20}


class TrainingDiverged(RuntimeError):
    """The guard stopped a fold: non-finite loss or exploding Q-values."""


def resolve_device(name: str = "auto") -> torch.device:
    """`auto` → CUDA when present, else CPU; `cuda` without a GPU is a ValueError."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name != "cpu" and not name.startswith("cuda"):
        raise ValueError(f"--device {name}: expected auto, cpu or cuda")
    if name != "cpu" and not torch.cuda.is_available():
        raise ValueError(f"--device {name}: no CUDA device is available")
    return torch.device(name)


def synchronize(device: torch.device) -> None:
    """Wait for queued device work, so wall-clock phase timings are honest."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class DeviceData:
    """The whole fxcache on the device, uploaded once per run; folds are index ranges into it."""

    features: torch.Tensor  # (n, 42) float32
    targets: torch.Tensor  # (n, 4) float32
    timestamp: np.ndarray  # (n,) int64 ns, stays on the host (fold boundaries, annualization)
    uploaded_bytes: int = 0


def to_device(
    features: np.ndarray, targets: np.ndarray, timestamp: np.ndarray, device: torch.device
) -> DeviceData:
    """Put the arrays on the device once: zero-copy on CPU, pinned staging + async copies on CUDA."""
    if device.type == "cpu":
        import warnings

        with warnings.catch_warnings():
            # A read-only memory map is fine: nothing writes to features or targets.
            warnings.simplefilter("ignore", UserWarning)
            feats = torch.from_numpy(features)
            targs = torch.from_numpy(targets)
        uploaded = 0
    else:
        feats = _upload(features, device)
        targs = _upload(targets, device)
        uploaded = features.nbytes + targets.nbytes
    synchronize(device)
    return DeviceData(feats, targs, timestamp, uploaded)


def _upload(array: np.ndarray, device: torch.device, chunk_bytes: int = 64 << 20) -> torch.Tensor:
    """Copy a host array to the device through two pinned staging buffers (copy and DMA overlap)."""
    out = torch.empty(array.shape, dtype=torch.float32, device=device)
    flat_src = array.reshape(-1)
    flat_dst = out.view(-1)
    chunk = max(1, chunk_bytes // array.itemsize)
    staging = [torch.empty(chunk, dtype=torch.float32, pin_memory=True) for _ in range(2)]
    done = [torch.cuda.Event(), torch.cuda.Event()]
    stream = torch.cuda.current_stream(device)
    for i, lo in enumerate(range(0, flat_src.size, chunk)):
        hi = min(lo + chunk, flat_src.size)
        buf, ev = staging[i % 2], done[i % 2]
        ev.synchronize()  # the DMA that last read this buffer has finished
        buf[: hi - lo].numpy()[:] = flat_src[lo:hi]
        flat_dst[lo:hi].copy_(buf[: hi - lo], non_blocking=True)
        ev.record(stream)
    return out


def build_qnet(n_features: int, hidden: int) -> nn.Sequential:
    """features + position → Q-value per action (short, flat, long)."""
    return nn.Sequential(
        nn.Linear(n_features + 1, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, N_ACTIONS),
    )


def fold_seed(seed: int, fold: int) -> int:
    """One seed per (run seed, fold): folds are reproducible alone and independent of order."""
    return (seed * 1_000_003 + fold * 7_919) % (2**63 - 1)


@dataclass
class FoldHistory:
    """What one fold's training produced, epoch by epoch."""

    collect_seconds: list[float] = field(default_factory=list)
    train_seconds: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)

    @property
    def epoch_seconds(self) -> list[float]:
        return [c + t for c, t in zip(self.collect_seconds, self.train_seconds, strict=True)]


class DQNTrainer:
    """Double DQN over index ranges of device arrays; one instance serves every fold of a run."""

    def __init__(self, data: DeviceData, config: DQNConfig, *, max_train_rows: int, seed: int = 0):
        self.data = data
        self.config = config
        self.seed = seed
        self.device = data.features.device
        self.cuda = self.device.type == "cuda"
        dev = self.device
        n_features = data.features.shape[1]
        self.online = build_qnet(n_features, config.hidden).to(dev)
        self.target = build_qnet(n_features, config.hidden).to(dev)
        self.target.requires_grad_(False)
        self.optimizer = torch.optim.Adam(
            self.online.parameters(),
            lr=config.lr,
            weight_decay=config.weight_decay,
            capturable=self.cuda,
            foreach=True,
        )
        # A small network's step at batch 8192 is bound by kernel count, not FLOPs: compiling the
        # loss fuses gather, normalization and loss; compiling the update turns clip, Adam and the
        # target's Polyak step from chunked multi-tensor kernels (one block per 64k values, so a
        # 66k-weight layer got one block) into a few well-spread fused kernels.
        compiled = self.cuda and config.compile
        self._td_loss = torch.compile(self._td_loss_eager) if compiled else self._td_loss_eager
        self._update = torch.compile(self._update_eager) if compiled else self._update_eager
        self.init_generator = torch.Generator(device=self.device)
        if self.cuda:
            torch.set_float32_matmul_precision("high")  # TF32: the net is small, the batch large
        # On CPU a private generator keeps runs reproducible; on CUDA the default generator is
        # the one whose philox offsets CUDA graph replays advance.
        self.generator = None if self.cuda else torch.Generator()

        # Norm stats and fold scalars live in fixed device buffers: the captured graph reads them.
        self.mean = torch.zeros(n_features, device=dev)
        self.std = torch.ones(n_features, device=dev)
        self.train_start = torch.zeros((), dtype=torch.long, device=dev)
        self.n_valid = torch.ones((), dtype=torch.long, device=dev)

        # Replay: one transition per training bar, sized once for the largest fold.
        self.capacity = int(max_train_rows)
        self.replay_position = torch.zeros(self.capacity, device=dev)
        self.replay_action = torch.full((self.capacity,), FLAT, dtype=torch.long, device=dev)
        self.replay_reward = torch.zeros(self.capacity, device=dev)

        batch = config.batch_size
        self._u = torch.zeros(batch, device=dev)
        self.loss_sum = torch.zeros((), device=dev)
        self.q_absmax = torch.zeros((), device=dev)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.graph_captures = 0
        self.fold_range = None
        self.history = FoldHistory()
        self.steps_done = 0
        if self.cuda:
            self._capture()
        self.reset_for_fold(0)

    # ---- fold lifecycle -------------------------------------------------------------------
    def set_fold_range(self, fold_range) -> None:
        """Point the trainer at a fold: indices only, nothing is copied."""
        if fold_range.train_end + 1 > self.data.features.shape[0]:
            raise ValueError(f"fold {fold_range.fold}: train_end {fold_range.train_end} past the data")
        if fold_range.train_rows - 1 > self.capacity:
            raise ValueError(f"fold {fold_range.fold}: {fold_range.train_rows} rows exceed replay {self.capacity}")
        self.fold_range = fold_range
        n = fold_range.train_rows - 1  # the last bar has no next state inside the fold
        self.train_start.fill_(fold_range.train_start)
        self.n_valid.fill_(n)

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
        self.loss_sum.zero_()
        self.q_absmax.zero_()
        self.history = FoldHistory()
        self.steps_done = 0
        if self.cuda:
            torch.cuda.manual_seed(seed)
        else:
            self.generator.manual_seed(seed)

    @torch.no_grad()
    def compute_norm_stats(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and std per feature over the fold's training slice, on the device."""
        train = self.data.features[self.fold_range.train_slice]  # a view
        std, mean = torch.std_mean(train, dim=0, correction=0)
        # Constant features (e.g. zero volume) would divide by zero; 1 leaves them centred at 0.
        std = torch.where(std > 1e-8, std, torch.ones_like(std))
        self.mean.copy_(mean)
        self.std.copy_(std)
        return self.mean, self.std

    def norm_stats_dict(self) -> dict:
        """The fold's norm stats as plain lists, for `norm_stats_fold{N}.json`."""
        return {"mean": self.mean.tolist(), "std": self.std.tolist()}

    # ---- the learning step ------------------------------------------------------------------
    def _state(self, features: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        """Network input: feature rows normalized with the fold's stats, then the incoming position."""
        return torch.cat([(features - self.mean) / self.std, position.unsqueeze(1)], dim=1)

    def _td_loss_eager(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Double-DQN Huber loss on a batch drawn by `u` (uniforms), and the batch's largest |Q|."""
        cfg = self.config
        batch = u.shape[0]
        idx = torch.minimum((u * self.n_valid).long(), self.n_valid - 1)
        rows = idx + self.train_start
        action = self.replay_action[idx]
        # State and next state in one gather: rows t and t + 1 of the device features.
        position = torch.cat([self.replay_position[idx], (action - 1).to(self.replay_position.dtype)])
        states = self._state(self.data.features[torch.cat([rows, rows + 1])], position)
        state, next_state = states[:batch], states[batch:]
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.cuda and cfg.bf16):
            q_all = self.online(state).float()
            with torch.no_grad():
                best = self.online(next_state).argmax(dim=1, keepdim=True)
                q_next = self.target(next_state).float().gather(1, best).squeeze(1)
        q = q_all.gather(1, action.unsqueeze(1)).squeeze(1)
        y = self.replay_reward[idx] + cfg.gamma * q_next
        loss = nn.functional.smooth_l1_loss(q, y, beta=cfg.huber_delta)
        return loss, q_all.detach().abs().max()

    def _train_step(self) -> None:
        self._u.uniform_(0.0, 1.0, generator=self.generator)
        loss, q_absmax = self._td_loss(self._u)
        # None, not zeros: backward then writes each gradient instead of adding to zeros (one
        # kernel less per weight); under capture the new gradients live in the graph's own pool.
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self._update(loss.detach(), q_absmax)

    def _update_eager(self, loss: torch.Tensor, q_absmax: torch.Tensor) -> None:
        cfg = self.config
        nn.utils.clip_grad_norm_(self.online.parameters(), cfg.grad_clip, foreach=True)
        self.optimizer.step()
        with torch.no_grad():
            torch._foreach_lerp_(list(self.target.parameters()), list(self.online.parameters()), cfg.tau)
            self.loss_sum.add_(loss)
            torch.maximum(self.q_absmax, q_absmax, out=self.q_absmax)

    def _train_steps(self) -> None:
        for _ in range(self.config.steps_per_graph):
            self._train_step()

    def _capture(self) -> None:
        """Capture `steps_per_graph` training steps as one CUDA graph, once per trainer."""
        # Warm-up on a side stream creates Adam's state and the autograd buffers before capture.
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(3):
                self._train_step()
        torch.cuda.current_stream(self.device).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self._train_steps()
        self.graph_captures += 1

    def _replay_steps(self) -> None:
        if self.graph is not None:
            self.graph.replay()
        else:
            self._train_steps()

    # ---- collection ---------------------------------------------------------------------------
    @torch.no_grad()
    def collect(self, epsilon: float) -> int:
        """Fill the replay with one epsilon-greedy transition per training bar of the fold."""
        fr = self.fold_range
        n = fr.train_rows - 1
        cfg = self.config
        chunk = _CHUNK_ROWS[self.device.type]
        for lo in range(0, n, chunk):
            hi = min(lo + chunk, n)
            rows = slice(fr.train_start + lo, fr.train_start + hi)
            incoming = torch.randint(0, N_ACTIONS, (hi - lo,), device=self.device, generator=self.generator)
            position = (incoming - 1).to(torch.float32)
            greedy = self.online(self._state(self.data.features[rows], position)).argmax(dim=1)
            explore = torch.rand(hi - lo, device=self.device, generator=self.generator) < epsilon
            random_action = torch.randint(0, N_ACTIONS, (hi - lo,), device=self.device, generator=self.generator)
            action = torch.where(explore, random_action, greedy)
            new_position = (action - 1).to(torch.float32)
            reward = new_position * self.data.targets[rows, 0] - cfg.cost * (new_position - position).abs()
            self.replay_position[lo:hi] = position
            self.replay_action[lo:hi] = action
            self.replay_reward[lo:hi] = reward * cfg.reward_scale
        return n

    def epsilon(self, epoch: int, epochs: int) -> float:
        """Linear decay from eps_start to eps_end over the first eps_decay_fraction of the epochs."""
        cfg = self.config
        span = max(1.0, cfg.eps_decay_fraction * epochs)
        frac = min(1.0, epoch / span)
        return cfg.eps_start + (cfg.eps_end - cfg.eps_start) * frac

    def steps_per_epoch(self) -> int:
        """Gradient steps per epoch: the config's, or ceil(train rows / batch size)."""
        if self.config.steps_per_epoch > 0:
            return self.config.steps_per_epoch
        return max(1, math.ceil(self.fold_range.train_rows / self.config.batch_size))

    def train_epoch(self, epoch: int, epochs: int) -> dict:
        """Collect, then run the epoch's gradient steps; the loss is read once, at the end."""
        t0 = time.perf_counter()
        eps = self.epsilon(epoch, epochs)
        self.collect(eps)
        synchronize(self.device)
        t1 = time.perf_counter()
        self.loss_sum.zero_()
        steps = self.steps_per_epoch()
        replays = math.ceil(steps / self.config.steps_per_graph)
        for _ in range(replays):
            self._replay_steps()
        done = replays * self.config.steps_per_graph
        loss = self.loss_sum.item() / done  # the one host sync of the epoch
        q_absmax = self.q_absmax.item()
        t2 = time.perf_counter()
        fold = self.fold_range.fold
        if not math.isfinite(loss):
            raise TrainingDiverged(f"fold {fold} epoch {epoch}: loss is {loss}")
        if not math.isfinite(q_absmax) or q_absmax > self.config.q_limit:
            raise TrainingDiverged(f"fold {fold} epoch {epoch}: |Q| reached {q_absmax:.3g} (limit {self.config.q_limit:g})")
        self.history.collect_seconds.append(t1 - t0)
        self.history.train_seconds.append(t2 - t1)
        self.history.loss.append(loss)
        self.steps_done += done
        return {"epoch": epoch, "loss": loss, "epsilon": eps, "steps": done, "seconds": t2 - t0,
                "samples_per_second": done * self.config.batch_size / max(t2 - t1, 1e-9)}

    # ---- validation ---------------------------------------------------------------------------
    @torch.no_grad()
    def greedy_maps(self, start: int, end: int) -> torch.Tensor:
        """Per bar, the greedy next-position index for each incoming position index: (n, 3) long."""
        maps = torch.empty((end - start, N_ACTIONS), dtype=torch.long, device=self.device)
        chunk = _CHUNK_ROWS[self.device.type]
        for lo in range(start, end, chunk):
            hi = min(lo + chunk, end)
            features = self.data.features[lo:hi]
            for p in range(N_ACTIONS):
                position = torch.full((hi - lo,), float(p - 1), device=self.device)
                maps[lo - start : hi - start, p] = self.online(self._state(features, position)).argmax(dim=1)
        return maps

    @torch.no_grad()
    def greedy_positions(self, start: int | None = None, end: int | None = None) -> torch.Tensor:
        """Positions (−1, 0, 1) of the exact greedy policy over [start, end), entered from flat."""
        start = self.fold_range.val_start if start is None else start
        end = self.fold_range.val_end if end is None else end
        return (rollout_positions(self.greedy_maps(start, end), FLAT) - 1).to(torch.float32)

    @torch.no_grad()
    def evaluate(self, positions: torch.Tensor, start: int | None = None) -> dict:
        """Metrics of `positions` held from bar `start` on, beside buy-and-hold and flat, on the device."""
        start = self.fold_range.val_start if start is None else start
        end = start + positions.numel()
        returns = self.data.targets[start:end, 0]
        periods = periods_per_year(self.data.timestamp[start:end])
        return {
            **policy_metrics(positions, returns, self.config.cost, periods),
            "buy_and_hold": policy_metrics(torch.ones_like(returns), returns, self.config.cost, periods),
            "flat": policy_metrics(torch.zeros_like(returns), returns, self.config.cost, periods),
            "periods_per_year": periods,
        }

    def validate(self, start: int | None = None, end: int | None = None) -> dict:
        """The exact greedy policy with position state and costs over [start, end) (default: validation)."""
        start = self.fold_range.val_start if start is None else start
        return self.evaluate(self.greedy_positions(start, end), start)

    @torch.no_grad()
    def equity_curve(self, positions: torch.Tensor, start: int, points: int = 1000) -> np.ndarray:
        """Cumulative log return of `positions` held from bar `start`, thinned to ≤ `points` values (plots)."""
        returns = self.data.targets[start : start + positions.numel(), 0]
        curve = torch.cumsum(policy_pnl(positions, returns, self.config.cost).double(), 0)
        step = max(1, curve.numel() // points)
        return curve[::step].cpu().numpy()

    def state_dict_cpu(self) -> dict:
        """The online network's weights, on the CPU, for `torch.load(weights_only=True)`."""
        return {k: v.detach().cpu() for k, v in self.online.state_dict().items()}


def rollout_positions(maps: torch.Tensor, start_index: int) -> torch.Tensor:
    """Positions taken by the greedy policy: the prefix composition of per-bar maps by a log-depth scan.

    maps[t, p] is the position index chosen at bar t when coming in with index p. The position
    after bar t is (maps[t] ∘ … ∘ maps[0])(start_index); a Hillis–Steele scan composes all
    prefixes in ceil(log2 n) gathers instead of n sequential steps.
    """
    n = maps.shape[0]
    composed = maps
    shift = 1
    while shift < n:
        nxt = composed.clone()
        nxt[shift:] = torch.gather(composed[shift:], 1, composed[:-shift])
        composed = nxt
        shift *= 2
    return composed[:, start_index]


def rollout_positions_reference(maps: np.ndarray, start_index: int) -> np.ndarray:
    """The same rollout as a plain sequential loop: the specification the scan must equal."""
    out = np.empty(len(maps), dtype=np.int64)
    p = start_index
    for t in range(len(maps)):
        p = int(maps[t, p])
        out[t] = p
    return out


def position_changes(positions: torch.Tensor) -> torch.Tensor:
    """|position − previous position| per bar, the first entered from flat: what costs are paid on."""
    return torch.diff(positions, prepend=positions.new_zeros(1)).abs()


def policy_pnl(positions: torch.Tensor, returns: torch.Tensor, cost: float) -> torch.Tensor:
    """Per-bar log return of holding `positions` (entered from flat), after costs."""
    return positions * returns - cost * position_changes(positions)


def periods_per_year(timestamp: np.ndarray) -> float:
    """Bars per year implied by the average spacing of the timestamps (gaps included)."""
    if len(timestamp) < 2:
        return 1.0
    span_years = (int(timestamp[-1]) - int(timestamp[0])) / (365.25 * NS_PER_DAY)
    return (len(timestamp) - 1) / span_years if span_years > 0 else 1.0


def policy_metrics(positions: torch.Tensor, returns: torch.Tensor, cost: float, periods: float) -> dict:
    """Sharpe (annualized), total log return, max drawdown, turnover and hit rate, computed on the device."""
    changes = position_changes(positions)
    pnl = (positions * returns - cost * changes).double()
    n = pnl.numel()
    mean = pnl.mean()
    std = pnl.std(correction=0)
    equity = torch.cumsum(pnl, 0)
    peak = torch.cummax(torch.cat([equity.new_zeros(1), equity]), 0).values[1:]
    drawdown = 1.0 - torch.exp(-(peak - equity).max()) if n else equity.new_zeros(())
    active = positions != 0
    hits = ((pnl > 0) & active).sum()
    values = torch.stack([
        torch.where(std > 0, mean / std * math.sqrt(periods), torch.zeros_like(mean)),
        pnl.sum(),
        drawdown.double(),
        changes.sum().double(),
        torch.where(active.sum() > 0, hits / active.sum().clamp(min=1), torch.zeros_like(mean)).double(),
    ]).tolist()  # one host transfer for the five figures
    return dict(zip(("sharpe", "total_return", "max_drawdown", "turnover", "hit_rate"), values, strict=True))
