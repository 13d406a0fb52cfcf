"""Peer benchmark: Stable-Baselines3 DQN against foxhunt's DQNTrainer, same data, same machine.

Both learn the same problem: state = fold-normalized features + current position (43 inputs),
actions short / flat / long, reward = position × 1-bar forward log return − cost × |position
change|, network 43 → 256 → 256 → 3. They differ in how they get experience: SB3 steps a
gymnasium env one bar at a time and trains from a host replay buffer; foxhunt collects one
transition per training bar in a batched forward pass and trains from index ranges into
arrays already on the device. The figures are throughput only, never learning quality.

Figures (each learner on `--device`):

* env steps/s — SB3: total timesteps / learn() wall (rollout and training together), and
  timesteps / (wall − time inside SB3's train()) as the rollout-only rate; foxhunt: rows
  collected / collect-phase seconds (one transition per training bar).
* gradient samples/s — gradient steps × batch size / seconds: SB3 over the learn() wall and
  over the time inside train(); foxhunt over its train-phase seconds.

SB3 runs at its own defaults (batch 32, train_freq 4, learning_starts 100, ...) and at batch
8192 with one gradient step per env step (train_freq 1, gradient_steps 1, learning_starts =
batch); foxhunt at batch 32 and 8192 with DQNConfig's other defaults. Each SB3 run is a fixed
number of timesteps (printed and saved); foxhunt runs whole epochs, the first
`--warmup-epochs` untimed. foxhunt runs first, so CUDA's one-time start-up is not charged to
SB3. CPU timings are noisy when other work shares the machine: the JSON keeps the load average.

    python bench/peer_sb3.py [--bars 200000 | --fxcache PATH] [--device auto|cpu|cuda] [--out FILE.json]

Needs `stable-baselines3` and `gymnasium`; the foxhunt package itself never imports them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import socket
import sys
import time
from pathlib import Path

import numpy as np
import torch
from provenance import device_name, git_commit

from foxhunt.config import TARGET_HORIZONS, DQNConfig
from foxhunt.data.folds import FoldRange
from foxhunt.train import DQNTrainer, resolve_device, synchronize, to_device

try:
    import gymnasium as gym
    import stable_baselines3
    from gymnasium import spaces
    from stable_baselines3 import DQN
except ImportError as exc:  # a bench-only dependency: say how to get it rather than a bare traceback
    raise SystemExit(f"peer_sb3: {exc}; install it with `pip install stable-baselines3 gymnasium`") from exc

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = [256, 256]  # foxhunt's DQNConfig.hidden, two layers (build_qnet)
BIG_BATCH = 8192  # foxhunt's default batch size


class BarsEnv(gym.Env):
    """One episode = one pass over the training slice; observation = normalized features + position.

    The transition at bar t mirrors foxhunt's replay: from position p choose p' (action − 1),
    reward (p' × returns[t] − cost × |p' − p|) × reward_scale, next observation is bar t + 1
    with p'. The last bar has no next state, so an episode holds len(features) − 1 steps.
    """

    metadata = {"render_modes": []}

    def __init__(self, features: np.ndarray, returns: np.ndarray, cost: float, reward_scale: float):
        super().__init__()
        self.features = features  # (m, 42) float32, already normalized
        self.returns = returns  # (m,) float64 1-bar forward log returns
        self.cost = cost
        self.reward_scale = reward_scale
        self.observation_space = spaces.Box(-np.inf, np.inf, (features.shape[1] + 1,), np.float32)
        self.action_space = spaces.Discrete(3)
        self.t = 0
        self.position = 0.0

    def _obs(self) -> np.ndarray:
        # A fresh array each step: SB3 keeps references between steps, so a reused buffer would alias.
        obs = np.empty(self.features.shape[1] + 1, dtype=np.float32)
        obs[:-1] = self.features[self.t]
        obs[-1] = self.position
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        self.position = 0.0  # every episode starts flat, like foxhunt's validation rollout
        return self._obs(), {}

    def step(self, action) -> tuple[np.ndarray, float, bool, bool, dict]:
        new = float(action) - 1.0
        reward = (new * self.returns[self.t] - self.cost * abs(new - self.position)) * self.reward_scale
        self.position = new
        self.t += 1
        terminated = self.t >= len(self.features) - 1
        return self._obs(), float(reward), terminated, False, {}


# ---- data --------------------------------------------------------------------------------------
def load_data(bars: int, fxcache: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """Features, targets, timestamps and a description: from an fxcache or from generated bars."""
    if fxcache:
        from foxhunt.data.fxcache import read_fxcache

        cache = read_fxcache(fxcache)
        return cache.features, cache.targets, cache.timestamp, f"fxcache {fxcache}"
    from foxhunt.data.bars import generate_sample_bars
    from foxhunt.data.features import compute_features

    table = compute_features(generate_sample_bars(bars))
    return table.features, table.targets, table.timestamp, f"generate_sample_bars({bars})"


def make_fold(n_rows: int, train_fraction: float) -> FoldRange:
    """One fold: the first `train_fraction` of the rows train, a purge gap, the rest validates."""
    purge = max(TARGET_HORIZONS)
    train_end = int(n_rows * train_fraction)
    if train_end < 1000 or train_end + purge >= n_rows:
        raise SystemExit(f"peer_sb3: {n_rows} rows are too few for a {train_fraction:.0%} training slice")
    return FoldRange(0, 0, train_end, train_end + purge, n_rows, 0.0)


def normalized_train_slice(features: np.ndarray, fold: FoldRange) -> np.ndarray:
    """The training slice normalized with its own mean and std, the rule of compute_norm_stats."""
    train = np.asarray(features[fold.train_slice], dtype=np.float64)
    mean = train.mean(axis=0)
    std = train.std(axis=0)
    std = np.where(std > 1e-8, std, 1.0)  # constant features stay centred at 0, not divided by 0
    return ((train - mean) / std).astype(np.float32)


# ---- Stable-Baselines3 -------------------------------------------------------------------------
def measure_sb3(env: BarsEnv, device: torch.device, *, timesteps: int, seed: int, **dqn_kwargs) -> dict:
    """learn() for `timesteps` env steps; wall, time inside train(), and the rates derived from them."""
    model = DQN(
        "MlpPolicy",
        env,
        policy_kwargs=dict(net_arch=list(HIDDEN)),
        device=device,
        seed=seed,
        verbose=0,
        **dqn_kwargs,
    )
    inner_train = model.train
    train_seconds = [0.0]

    def timed_train(*args, **kwargs):
        # Wrapping the bound method splits learn()'s wall into rollout and gradient phases.
        start = time.perf_counter()
        inner_train(*args, **kwargs)
        synchronize(device)
        train_seconds[0] += time.perf_counter() - start

    model.train = timed_train
    synchronize(device)
    start = time.perf_counter()
    model.learn(total_timesteps=timesteps, progress_bar=False)
    synchronize(device)
    wall = time.perf_counter() - start
    batch = model.batch_size
    updates = int(model._n_updates)
    rollout_seconds = max(wall - train_seconds[0], 1e-9)
    return {
        "timesteps": int(model.num_timesteps),
        "batch_size": batch,
        "train_freq": model.train_freq.frequency,
        "gradient_steps_per_rollout": model.gradient_steps,
        "learning_starts": model.learning_starts,
        "buffer_size": model.buffer_size,
        "target_update_interval": model.target_update_interval,
        "gradient_steps": updates,
        "learn_seconds": wall,
        "train_seconds": train_seconds[0],
        "rollout_seconds": rollout_seconds,
        "env_steps_per_s": model.num_timesteps / wall,
        "env_steps_per_s_rollout_only": model.num_timesteps / rollout_seconds,
        "grad_samples_per_s": updates * batch / wall,
        "grad_samples_per_s_train_only": updates * batch / max(train_seconds[0], 1e-9),
        "policy_device": str(model.device),
    }


# ---- foxhunt -----------------------------------------------------------------------------------
def measure_foxhunt(
    features: np.ndarray,
    targets: np.ndarray,
    timestamp: np.ndarray,
    device: torch.device,
    fold: FoldRange,
    *,
    batch: int,
    epochs: int,
    warmup_epochs: int,
    steps_per_epoch: int,
    seed: int,
) -> dict:
    """A fold's epochs on a fresh DQNTrainer; rates over the epochs after the warm-up ones."""
    data = to_device(features, targets, timestamp, device)
    config = DQNConfig(batch_size=batch, steps_per_epoch=steps_per_epoch)
    start = time.perf_counter()
    trainer = DQNTrainer(data, config, max_train_rows=fold.train_rows, seed=seed)
    build_seconds = time.perf_counter() - start  # includes CUDA graph capture on a GPU
    trainer.window.set_fold_range(fold)
    trainer.reset_for_fold(fold.fold)
    trainer.window.compute_norm_stats()
    total = warmup_epochs + epochs
    epoch_stats = [trainer.train_epoch(e, total) for e in range(total)]
    h = trainer.histories[0]
    timed = slice(warmup_epochs, total)
    rows = (fold.train_rows - 1) * epochs  # collect() fills one transition per training bar
    collect_seconds = sum(h.collect_seconds[timed])
    train_seconds = sum(h.train_seconds[timed])
    steps = sum(s[0].steps for s in epoch_stats[timed])  # member 0 of each epoch
    return {
        "batch_size": batch,
        "epochs_timed": epochs,
        "warmup_epochs": warmup_epochs,
        "steps_per_epoch": trainer.window.steps_per_epoch(trainer.config),
        "steps_per_graph": config.steps_per_graph,
        "build_seconds": build_seconds,
        "rows_collected": rows,
        "gradient_steps": steps,
        "collect_seconds": collect_seconds,
        "train_seconds": train_seconds,
        "epoch_seconds": h.epoch_seconds,
        "env_steps_per_s": rows / max(collect_seconds, 1e-9),
        "grad_samples_per_s": steps * batch / max(train_seconds, 1e-9),
        "final_loss": h.loss[-1],
    }


def ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def table(results: dict) -> str:
    """The figures as a short fixed-width table."""
    lines = [f"{'learner':<22}{'batch':>6}{'env steps/s':>14}{'grad samples/s':>16}{'seconds':>9}"]
    for key, label in (
        ("sb3_default", "SB3 DQN default"),
        ("sb3_big", f"SB3 DQN batch {BIG_BATCH}"),
        ("foxhunt_32", "foxhunt batch 32"),
        ("foxhunt_big", f"foxhunt batch {BIG_BATCH}"),
    ):
        r = results[key]
        seconds = r.get("learn_seconds", r.get("collect_seconds", 0.0) + r.get("train_seconds", 0.0))
        lines.append(
            f"{label:<22}{r['batch_size']:>6}{r['env_steps_per_s']:>14,.0f}"
            f"{r['grad_samples_per_s']:>16,.0f}{seconds:>9.1f}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--bars", type=int, default=200_000, help="generated bars (default 200,000)")
    source.add_argument("--fxcache", default=None, help="read this fxcache instead of generating bars")
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda (both learners)")
    parser.add_argument("--out", type=Path, default=None, help="JSON path (default bench/results/...)")
    parser.add_argument("--train-fraction", type=float, default=0.8)
    parser.add_argument("--sb3-timesteps", type=int, default=20_000, help="SB3 at its defaults")
    parser.add_argument(
        "--sb3-big-timesteps",
        type=int,
        default=BIG_BATCH + 256,
        help=f"SB3 at batch {BIG_BATCH}; the first {BIG_BATCH} only fill the buffer",
    )
    parser.add_argument("--fox-epochs", type=int, default=2, help="timed foxhunt epochs per batch size")
    parser.add_argument("--warmup-epochs", type=int, default=1)
    parser.add_argument("--fox-steps", type=int, default=0, help="steps per foxhunt epoch (0: rows / batch)")
    parser.add_argument(
        "--threads", type=int, default=0, help="torch CPU threads for both learners (0: torch's default)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.sb3_big_timesteps <= BIG_BATCH:
        parser.error(f"--sb3-big-timesteps must exceed {BIG_BATCH}, or SB3 never trains")

    if args.threads > 0:
        # On a shared CPU, OpenMP threads that wait on a busy core make small batches many times
        # slower; one thread per learner keeps the comparison about the learners, not the scheduler.
        torch.set_num_threads(args.threads)
    try:
        device = resolve_device(args.device)
    except ValueError as exc:
        parser.error(str(exc))
    load_start = time.perf_counter()
    features, targets, timestamp, described = load_data(args.bars, args.fxcache)
    load_seconds = time.perf_counter() - load_start
    fold = make_fold(len(features), args.train_fraction)
    cost, reward_scale = DQNConfig.cost, DQNConfig.reward_scale
    print(
        f"data: {described}, {len(features):,} rows ({load_seconds:.1f} s), training slice "
        f"{fold.train_rows:,} rows; device {device} ({device_name(device)}), torch threads "
        f"{torch.get_num_threads()}",
        flush=True,
    )

    results: dict = {}
    # foxhunt first: on a GPU it pays CUDA's start-up (context, cuBLAS), which SB3 then finds warm.
    for key, batch in (("foxhunt_32", 32), ("foxhunt_big", BIG_BATCH)):
        results[key] = r = measure_foxhunt(
            features,
            targets,
            timestamp,
            device,
            fold,
            batch=batch,
            epochs=args.fox_epochs,
            warmup_epochs=args.warmup_epochs,
            steps_per_epoch=args.fox_steps,
            seed=args.seed,
        )
        print(
            f"foxhunt batch {batch}: {r['epochs_timed']} epochs × {r['steps_per_epoch']} steps, "
            f"collect {r['collect_seconds']:.2f} s, train {r['train_seconds']:.2f} s",
            flush=True,
        )

    env_features = normalized_train_slice(features, fold)
    returns = np.asarray(targets[fold.train_slice, 0], dtype=np.float64)
    sb3_runs = (
        ("sb3_default", args.sb3_timesteps, {}),
        (
            "sb3_big",
            args.sb3_big_timesteps,
            dict(batch_size=BIG_BATCH, train_freq=1, gradient_steps=1, learning_starts=BIG_BATCH),
        ),
    )
    for key, timesteps, kwargs in sb3_runs:
        env = BarsEnv(env_features, returns, cost, reward_scale)
        results[key] = r = measure_sb3(env, device, timesteps=timesteps, seed=args.seed, **kwargs)
        print(
            f"SB3 {key}: {r['timesteps']:,} timesteps, {r['gradient_steps']:,} gradient steps at batch "
            f"{r['batch_size']}, learn {r['learn_seconds']:.1f} s (train() {r['train_seconds']:.1f} s)",
            flush=True,
        )

    fox32, foxbig, sb3d, sb3b = (results[k] for k in ("foxhunt_32", "foxhunt_big", "sb3_default", "sb3_big"))
    ratios = {
        "env_steps_foxhunt32_over_sb3_default": ratio(fox32["env_steps_per_s"], sb3d["env_steps_per_s"]),
        "env_steps_foxhunt8192_over_sb3_8192": ratio(foxbig["env_steps_per_s"], sb3b["env_steps_per_s"]),
        "grad_samples_foxhunt32_over_sb3_default": ratio(
            fox32["grad_samples_per_s"], sb3d["grad_samples_per_s"]
        ),
        "grad_samples_foxhunt8192_over_sb3_8192": ratio(
            foxbig["grad_samples_per_s"], sb3b["grad_samples_per_s"]
        ),
        # Against SB3's time inside train() only: the fairest like-for-like of the gradient step itself.
        "grad_samples_foxhunt32_over_sb3_default_train_only": ratio(
            fox32["grad_samples_per_s"], sb3d["grad_samples_per_s_train_only"]
        ),
        "grad_samples_foxhunt8192_over_sb3_8192_train_only": ratio(
            foxbig["grad_samples_per_s"], sb3b["grad_samples_per_s_train_only"]
        ),
        # Each at its own default batch (foxhunt 8192, SB3 32).
        "grad_samples_foxhunt_default_over_sb3_default": ratio(
            foxbig["grad_samples_per_s"], sb3d["grad_samples_per_s"]
        ),
        "env_steps_foxhunt_default_over_sb3_default": ratio(
            foxbig["env_steps_per_s"], sb3d["env_steps_per_s"]
        ),
    }
    now = dt.datetime.now(dt.timezone.utc)
    payload = {
        "benchmark": "peer_sb3",
        "date": now.isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "device": str(device),
        "device_name": device_name(device),
        "cpus_available": len(os.sched_getaffinity(0)),
        "torch_threads": torch.get_num_threads(),
        "load_average_1m": os.getloadavg()[0],
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "gymnasium": gym.__version__,
        "commit": git_commit(),
        "data": {
            "source": described,
            "rows": len(features),
            "train_rows": fold.train_rows,
            "fold": fold.to_dict(),
            "load_seconds": load_seconds,
        },
        "problem": {
            "obs_dim": env_features.shape[1] + 1,
            "actions": 3,
            "net_arch": HIDDEN,
            "cost": cost,
            "reward_scale": reward_scale,
        },
        "results": results,
        "ratios_foxhunt_over_sb3": ratios,
        "notes": "SB3: one env (DummyVecEnv), replay on the host; env steps/s = timesteps / learn() wall. "
        "foxhunt: env steps/s = rows collected / collect seconds; grad samples/s = steps × batch / "
        "train seconds. Throughput only; the two learners do not see the same transitions.",
    }
    out = args.out or ROOT / "bench" / "results" / f"peer_sb3-{device.type}-{now:%Y-%m-%d}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {out}")
    print(table(results))
    print(
        "foxhunt / SB3: "
        + ", ".join(f"{k} {v:.1f}×" for k, v in ratios.items() if v is not None and math.isfinite(v))
    )


if __name__ == "__main__":
    main()
