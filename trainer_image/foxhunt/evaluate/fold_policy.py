"""Using a trained fold: its folder (weights, norm stats, the run's settings) as a policy on feature rows.

    from foxhunt.evaluate.fold_policy import load_policy

    policy = load_policy("runs/sample/fold_2")          # or s3://bucket/runs/sample/fold_2
    policy(features, position)   # (n, 42) float rows + incoming position(s) → next position per row
    policy.rollout(features)     # consecutive bars, entered flat → the position held after each bar

    # --seeds K: each seed's fold (`seed_<s>/fold_2` beside the run's own), voted bar by bar
    seeds = [load_policy(f"runs/sample/{s}fold_2") for s in ("", "seed_1/", "seed_2/")]
    majority_rollout(seeds, features)   # the side more than half of them hold after each bar, else 0

Positions are −1 (short), 0 (flat), 1 (long), held from a bar's close to the next one's, exactly as
in training and validation. The feature rows are the fxcache's (the 42 of `FEATURE_NAMES`, in that
order, not normalised): the policy normalises them with the fold's training-slice statistics.
`rollout` runs the same greedy scan as the run's validation, so over a fold's validation rows it
gives the positions in the fold's `positions.npy`; `majority_rollout` of a run's seeds gives there the
positions its `seed_spread.majority` scored.

A fold folder holds `weights.pt` (read with `torch.load(..., weights_only=True)`, so a file can carry
no code), `norm_stats_foldN.json` (mean and std per feature, with the feature names) and lives in a
run folder whose `manifest.json` (or `summary.json`) gives the network's settings.

On a GPU the policy uses TF32 matrix products as the trainer does (it sets torch's float32 matmul
precision to "high" for the process), so a fold trained on CUDA rolls out on CUDA exactly as in its
run; on another device the positions may differ where two actions' Q-values are within rounding.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from foxhunt import out_names, storage
from foxhunt.config import DQNConfig, override
from foxhunt.data.features import FEATURE_NAMES
from foxhunt.errors import BadInput
from foxhunt.evaluate.seed_spread import majority_positions
from foxhunt.train.device_data import chunk_rows
from foxhunt.train.dqn import build_qnet
from foxhunt.train.policy import FLAT, greedy_maps, policy_state, rollout_positions

FOLD_FOLDER = out_names.FOLD_FOLDER
SEED_FOLDER = out_names.SEED_FOLDER


@dataclass
class Policy:
    """A trained fold's greedy policy: the online network and its fold's normalisation, on a device."""

    fold: int
    qnet: torch.nn.Module
    mean: torch.Tensor  # (42,) float32
    std: torch.Tensor  # (42,) float32
    config: DQNConfig

    @property
    def device(self) -> torch.device:
        return self.mean.device

    def _rows(self, features) -> torch.Tensor:
        array = np.asarray(features, dtype=np.float32)
        if not array.flags.writeable:  # a read-only fxcache: torch warns of sharing it, so read a copy
            array = array.copy()
        rows = torch.as_tensor(array, device=self.device)
        if rows.ndim != 2 or rows.shape[1] != len(FEATURE_NAMES):
            raise ValueError(f"feature rows must be (n, {len(FEATURE_NAMES)}), got {tuple(rows.shape)}")
        return rows

    @torch.no_grad()
    def q_values(self, features, position) -> np.ndarray:
        """Q-values (n, 3) of going short, flat, long from `position` (a number or one per row)."""
        rows = self._rows(features)
        incoming = torch.as_tensor(position, dtype=torch.float32, device=self.device).expand(rows.shape[0])
        return self.qnet(policy_state(rows, incoming, self.mean, self.std)).cpu().numpy()

    def __call__(self, features, position) -> np.ndarray:
        """The greedy next position (−1, 0, 1) per row, coming in with `position` (a number or one per row)."""
        return self.q_values(features, position).argmax(axis=1) - 1

    def rollout(self, features, start_position: int = 0) -> np.ndarray:
        """Positions after each of these consecutive bars, the first entered from `start_position`."""
        rows = self._rows(features)
        maps = greedy_maps(self.qnet, rows, self.mean, self.std, chunk_rows(self.device))
        return (rollout_positions(maps, start_position + FLAT) - 1).cpu().numpy().astype(np.float64)


def _read(uri: str, what: str) -> bytes:
    try:
        return storage.read_bytes(uri)
    except FileNotFoundError as exc:
        raise BadInput(f"{uri}: not found; a fold folder holds {what}") from exc


def _json(uri: str, what: str) -> dict:
    try:
        data = json.loads(_read(uri, what))
    except ValueError as exc:
        raise BadInput(f"{uri}: not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise BadInput(f"{uri}: expected a JSON object")
    return data


def run_folder(fold_dir_uri: str) -> tuple[str, int]:
    """The run folder holding a fold folder, and the fold's number (from its name `fold_N`)."""
    head, _, name = str(fold_dir_uri).rstrip("/").rpartition("/")
    match = FOLD_FOLDER.fullmatch(name)
    if not match or not head:
        raise BadInput(f"{fold_dir_uri}: not a fold folder (expected a path ending in fold_N inside a run)")
    return head, int(match.group(1))


def run_dqn_config(run_uri: str) -> DQNConfig:
    """The DQN settings a run trained with: its manifest's, else its summary's; for an instrument's folder
    of a run over several (``…/instruments/<name>[/seed_S]``), the universe run's manifest or summary."""
    found = [(run_uri, out_names.MANIFEST, ("config", "dqn")), (run_uri, out_names.SUMMARY, ("dqn_config",))]
    parent, _, last = run_uri.rstrip("/").rpartition("/")
    if parent and SEED_FOLDER.fullmatch(last):  # an extra seed's folds (--seeds K) under the run's folder
        found += [
            (parent, out_names.MANIFEST, ("config", "dqn")),
            (parent, out_names.SUMMARY, ("dqn_config",)),
        ]
    universe, marker, _ = run_uri.rpartition("/instruments/")
    if marker:
        found += [
            (universe, out_names.MANIFEST, ("settings", "dqn")),
            (universe, out_names.SUMMARY, ("run_config", "dqn")),
        ]
    for folder, name, path in found:
        try:
            data = json.loads(storage.read_bytes(storage.join(folder, name)))
        except (FileNotFoundError, ValueError):
            continue
        for key in path:
            data = data.get(key) if isinstance(data, dict) else None
        if isinstance(data, dict):
            return override(DQNConfig(), data, what=storage.join(folder, name))
    raise BadInput(f"{run_uri}: not a foxhunt run (no readable manifest.json or summary.json)")


def load_policy(fold_dir_uri: str, device: str | torch.device = "cpu") -> Policy:
    """The greedy policy of a trained fold folder (local or s3://); BadInput naming the file at fault."""
    run_uri, fold = run_folder(fold_dir_uri)
    folder = str(fold_dir_uri).rstrip("/")
    config = run_dqn_config(run_uri)
    norm_uri = storage.join(folder, out_names.norm_stats_file(fold))
    norm = _json(norm_uri, "norm_stats_foldN.json")
    if norm.get("feature_names") != list(FEATURE_NAMES):
        raise BadInput(
            f"{norm_uri}: its feature names differ from this version's {len(FEATURE_NAMES)} features"
        )
    weights_uri = storage.join(folder, out_names.WEIGHTS)
    try:
        state = torch.load(
            io.BytesIO(_read(weights_uri, out_names.WEIGHTS)), map_location="cpu", weights_only=True
        )
        qnet = build_qnet(len(FEATURE_NAMES), config.hidden)
        qnet.load_state_dict(state)
    except (RuntimeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BadInput(
            f"{weights_uri}: not the weights of a {config.hidden}-unit foxhunt Q-network ({exc})"
        ) from exc
    if torch.device(device).type == "cuda":
        # The trainer's setting, so that the rollout on a GPU is the run's own (TF32 matmuls).
        torch.set_float32_matmul_precision("high")
    qnet.to(device).eval()
    as_tensor = lambda values: torch.tensor(values, dtype=torch.float32, device=device)  # noqa: E731
    return Policy(fold, qnet, as_tensor(norm["mean"]), as_tensor(norm["std"]), config)


def majority_rollout(policies: Sequence[Policy], features, start_position: int = 0) -> np.ndarray:
    """The seeds' majority over these consecutive bars: each policy rolls out on its own (as each seed
    traded), then on each bar the side more than half of them hold, else flat."""
    return majority_positions([policy.rollout(features, start_position) for policy in policies])
