"""Per-epoch training diagnostics: the divergence guard, and what the greedy policy does now, so that
collapse and under-training show.

Per epoch, beside the loss and |Q| that the step accumulates on the device: the greedy policy's
action shares and net Sharpe on the validation range, its in-sample net Sharpe, and whether its
actions depend on the features at all. All of it is computed on the device and read in one host
transfer; the trainer's `diagnostics=False` turns it off (benchmarks), and a run's `diagnostics_every`
spaces it out (`diagnostics_due`): an epoch without it records None, never a copy of an older epoch's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from foxhunt.data.pnl import ExecutionRows
from foxhunt.train.device_data import DeviceData, chunk_rows
from foxhunt.train.epoch_figures import ignores_features, policy_collapse
from foxhunt.train.policy import (
    FLAT,
    N_ACTIONS,
    annualised_sharpe,
    greedy_maps,
    held_sharpe,
    periods_per_year,
    policy_pnl,
    policy_state,
    rollout_positions,
)

# The in-sample Sharpe runs the greedy policy over at most this many training bars, in evenly spaced
# blocks each entered from flat: a full pass over a 4M-row training slice every epoch would cost more
# than the epoch's training, and a bounded sample reads the same trend.
IN_SAMPLE_ROWS = 1 << 16
IN_SAMPLE_BLOCKS = 16
AGREEMENT_ROWS = 4096  # validation rows sampled (evenly) for the feature check


class TrainingDiverged(RuntimeError):
    """The guard stopped a fold: non-finite loss or exploding Q-values."""


def check_divergence(fold: int, epoch: int, loss: float, q_max: float, q_limit: float) -> None:
    """The guard, once per epoch: TrainingDiverged on a non-finite loss or |Q| beyond `q_limit`."""
    if not math.isfinite(loss):
        raise TrainingDiverged(f"fold {fold} epoch {epoch}: loss is {loss}")
    if not math.isfinite(q_max) or q_max > q_limit:
        raise TrainingDiverged(f"fold {fold} epoch {epoch}: |Q| reached {q_max:.3g} (limit {q_limit:g})")


@dataclass
class FoldHistory:
    """What one fold's training produced, epoch by epoch (the diagnostics of the epochs that had them)."""

    collect_seconds: list[float] = field(default_factory=list)
    train_seconds: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    q_mean: list[float] = field(default_factory=list)  # mean |Q| over the epoch's batches
    q_max: list[float] = field(default_factory=list)  # max |Q| over the epoch's batches
    diagnostics_seconds: list[float] = field(default_factory=list)
    action_shares: list[list[float]] = field(
        default_factory=list
    )  # validation greedy policy: short, flat, long
    train_sharpe: list[float] = field(default_factory=list)  # in-sample net Sharpe (evenly spaced blocks)
    val_sharpe: list[float] = field(default_factory=list)  # validation net Sharpe, at the evaluation cost
    feature_agreement: list[float] = field(default_factory=list)  # see `feature_agreement`

    def record_epoch(self, collect: float, train: float, loss: float, q_mean: float, q_max: float) -> None:
        """Append one epoch's timings, loss and |Q| statistics."""
        self.collect_seconds.append(collect)
        self.train_seconds.append(train)
        self.loss.append(loss)
        self.q_mean.append(q_mean)
        self.q_max.append(q_max)

    @property
    def epoch_seconds(self) -> list[float]:
        return [c + t for c, t in zip(self.collect_seconds, self.train_seconds, strict=True)]

    @property
    def collapsed(self) -> bool:
        """The last epoch's greedy policy takes one action on at least COLLAPSE_SHARE of validation bars."""
        return bool(self.action_shares) and policy_collapse(self.action_shares[-1])

    @property
    def features_ignored(self) -> bool:
        """The last epoch's greedy actions barely change when the features are replaced by their mean."""
        return bool(self.feature_agreement) and ignores_features(self.feature_agreement[-1])


def action_shares(positions: torch.Tensor) -> torch.Tensor:
    """Share of bars spent short, flat and long: a (3,) float64 tensor summing to 1."""
    # Comparisons, not bincount: bincount on CUDA reads its input's maximum on the host.
    return torch.stack([(positions == p).double().mean() for p in (-1.0, 0.0, 1.0)])


@torch.no_grad()
def feature_agreement(
    qnet: nn.Module, features: torch.Tensor, mean: torch.Tensor, std: torch.Tensor
) -> torch.Tensor:
    """Share of (row, incoming position) pairs whose greedy action stays the same when the row's features
    are replaced by their mean: 1.0 means the policy ignores the features on these rows."""
    position = (
        torch.arange(N_ACTIONS, device=features.device, dtype=features.dtype).repeat(features.shape[0]) - 1
    )
    rows = features.repeat_interleave(N_ACTIONS, dim=0)
    acted = qnet(policy_state(rows, position, mean, std)).argmax(dim=1)
    at_mean = qnet(policy_state(mean.expand_as(rows), position, mean, std)).argmax(dim=1)
    return (acted == at_mean).double().mean()


def evenly_spaced_blocks(
    start: int, end: int, max_rows: int, blocks: int, device: torch.device | None = None
) -> torch.Tensor:
    """Row indices (blocks, length) of equal contiguous blocks spread evenly over [start, end), at most
    `max_rows` rows in all; the whole range as one block when it is short enough. Made on `device`
    (no host-to-device copy)."""
    if end - start <= max_rows:
        return torch.arange(start, end, device=device).unsqueeze(0)
    length = max_rows // blocks
    starts = torch.linspace(start, end - length, blocks, dtype=torch.float64, device=device).round().long()
    return starts.unsqueeze(1) + torch.arange(length, device=device).unsqueeze(0)


@torch.no_grad()
def blocks_sharpe(
    qnet: nn.Module,
    features: torch.Tensor,
    returns: torch.Tensor,
    mean: torch.Tensor,
    std: torch.Tensor,
    cost: float,
    periods: float,
) -> torch.Tensor:
    """Net Sharpe of the greedy policy over blocks of bars (blocks, length[, features]), each entered from flat."""
    blocks, length = returns.shape
    maps = greedy_maps(qnet, features.reshape(blocks * length, -1), mean, std, chunk=blocks * length)
    positions = (rollout_positions(maps.reshape(blocks, length, N_ACTIONS), FLAT) - 1).to(returns.dtype)
    return annualised_sharpe(policy_pnl(positions, returns, cost), periods)


def agreement_sample(val: slice, device: torch.device) -> torch.Tensor:
    """The validation rows the feature check reads: at most AGREEMENT_ROWS, evenly spaced."""
    rows = min(AGREEMENT_ROWS, val.stop - val.start)
    return torch.linspace(val.start, val.stop - 1, rows, dtype=torch.float64, device=device).round().long()


@torch.no_grad()
def greedy_diagnostics(
    qnet: nn.Module, data: DeviceData, mean: torch.Tensor, std: torch.Tensor, fold_range, cost: float
) -> dict[str, torch.Tensor]:
    """Validation action shares and net Sharpe, in-sample net Sharpe and feature agreement, as device tensors.

    One rollout per range; the trainer's epochs read the same figures from `epoch_policy_reads`, which
    shares one rollout and one host transfer with the tail score (this stays as its specification)."""
    device = data.features.device
    val = slice(fold_range.val_start, fold_range.val_end)
    train = slice(fold_range.train_start, fold_range.train_end)
    maps = greedy_maps(qnet, data.features[val], mean, std, chunk_rows(device))
    positions = (rollout_positions(maps, FLAT) - 1).to(torch.float32)
    val_pnl = policy_pnl(positions, data.targets[val, 0], cost)
    rows = evenly_spaced_blocks(train.start, train.stop, IN_SAMPLE_ROWS, IN_SAMPLE_BLOCKS, device)
    return {
        "action_shares": action_shares(positions),
        "val_sharpe": annualised_sharpe(val_pnl, periods_per_year(data.timestamp[val])),
        "train_sharpe": blocks_sharpe(
            qnet,
            data.features[rows],
            data.targets[rows, 0],
            mean,
            std,
            cost,
            periods_per_year(data.timestamp[train]),
        ),
        "feature_agreement": feature_agreement(qnet, data.features[agreement_sample(val, device)], mean, std),
    }


def rollouts_from_flat(pieces: list[torch.Tensor]) -> list[torch.Tensor]:
    """Positions (−1, 0, 1) of several greedy rollouts, each entered from flat, by ONE scan.

    `pieces[k]` is (..., n, 3) greedy maps (each leading index its own rollout; changed in place). Each
    rollout's first map is made constant at its from-flat value, so the rollouts can be laid end to end:
    the scan's position then restarts from flat at every rollout's first bar, exactly as a scan of each."""
    for piece in pieces:
        if piece.shape[-2]:
            piece[..., 0, :] = piece[..., 0, FLAT : FLAT + 1].clone()
    laid = torch.cat([piece.reshape(-1, N_ACTIONS) for piece in pieces])
    positions = (rollout_positions(laid, FLAT) - 1).to(torch.float32)
    sizes = [piece.shape[:-1].numel() for piece in pieces]
    return [p.reshape(piece.shape[:-1]) for p, piece in zip(positions.split(sizes), pieces, strict=True)]


@torch.no_grad()
def epoch_policy_tensor(
    qnet: nn.Module,
    data: DeviceData,
    mean: torch.Tensor,
    std: torch.Tensor,
    fold_range,
    cost: float,
    *,
    diagnose: bool,
    tails: Sequence[tuple[int, torch.Tensor]] = (),
    execution: ExecutionRows | None = None,
) -> torch.Tensor:
    """An epoch's figures of the greedy policy as one float64 device vector (`epoch_reads` names them):
    with `diagnose`, `greedy_diagnostics`' (action shares, validation and in-sample Sharpe, feature
    agreement); then per (start, maps) of `tails`, the net Sharpe of the greedy maps of rows start,
    start + 1, ... (a tail as the fold would keep it: one per instrument of a universe fold), entered from
    flat, under the evaluation's execution model (`execution`: its rows over the whole data on the device;
    None: `cost` alone). The same figures as the per-call functions, from ONE rollout scan for every range
    and tail; the caller reads it (with other members')."""
    device = data.features.device
    val = slice(fold_range.val_start, fold_range.val_end)
    train = slice(fold_range.train_start, fold_range.train_end)
    pieces: list[torch.Tensor] = []
    if diagnose:
        rows = evenly_spaced_blocks(train.start, train.stop, IN_SAMPLE_ROWS, IN_SAMPLE_BLOCKS, device)
        blocks, length = rows.shape
        block_features = data.features[rows].reshape(blocks * length, -1)
        pieces.append(greedy_maps(qnet, data.features[val], mean, std, chunk_rows(device)))
        pieces.append(
            greedy_maps(qnet, block_features, mean, std, blocks * length).reshape(blocks, length, -1)
        )
    pieces += [maps for _, maps in tails]
    positions = rollouts_from_flat(pieces) if pieces else []
    reads: list[torch.Tensor] = []
    if diagnose:
        val_positions, block_positions = positions[0], positions[1].to(data.targets.dtype)
        val_pnl = policy_pnl(val_positions, data.targets[val, 0], cost)
        block_pnl = policy_pnl(block_positions, data.targets[rows, 0], cost)
        reads += [
            action_shares(val_positions),
            annualised_sharpe(val_pnl, periods_per_year(data.timestamp[val])).reshape(1),
            annualised_sharpe(block_pnl, periods_per_year(data.timestamp[train])).reshape(1),
            feature_agreement(qnet, data.features[agreement_sample(val, device)], mean, std).reshape(1),
        ]
    tail_positions = positions[len(positions) - len(tails) :]
    for (start, _), held in zip(tails, tail_positions, strict=True):
        reads.append(held_sharpe(data, held, start, cost, execution).reshape(1))
    return torch.cat(reads) if reads else torch.zeros(0, dtype=torch.float64, device=device)


def epoch_vector_size(*, diagnose: bool, tails: int) -> int:
    """How many values `epoch_policy_tensor` gives: the action shares and three figures, then one per tail."""
    return (N_ACTIONS + 3 if diagnose else 0) + tails


def epoch_reads(values: list[float], *, diagnose: bool, tails: int) -> dict:
    """`epoch_policy_tensor`'s values, read on the host, keyed as EpochFigures' fields; the `tails` tail
    Sharpes as `tail_sharpes` (the caller pools them into `tail_sharpe`)."""
    plain: dict = {}
    if diagnose:
        plain["action_shares"] = values[:N_ACTIONS]
        keys = ("val_sharpe", "train_sharpe", "feature_agreement")
        plain.update(zip(keys, values[N_ACTIONS : N_ACTIONS + 3], strict=True))
    if tails:
        plain["tail_sharpes"] = values[len(values) - tails :]
    return plain


def diagnostics_due(epoch: int, epochs: int, every: int) -> bool:
    """Whether epoch `epoch` (from 0) of `epochs` gets the diagnostics when they run every `every` epochs:
    the k-th, 2k-th, ... epoch counted from 1 (`epoch` k − 1, 2k − 1, ...) and always the fold's last,
    whose figures the fold's warnings and the search's collapse flags read."""
    return (epoch + 1) % every == 0 or epoch == epochs - 1


def record_diagnostics(history: FoldHistory, diagnostics: dict[str, torch.Tensor], started: float) -> dict:
    """Read the diagnostics in one host transfer, append them to `history`, return them as plain values
    (keyed as EpochFigures' fields)."""
    shares = diagnostics["action_shares"]
    values = torch.cat(
        [shares, torch.stack([diagnostics[k] for k in ("val_sharpe", "train_sharpe", "feature_agreement")])]
    ).tolist()
    plain = {
        "action_shares": values[:N_ACTIONS],
        "val_sharpe": values[3],
        "train_sharpe": values[4],
        "feature_agreement": values[5],
    }
    keep_diagnostics(history, plain, time.perf_counter() - started)
    return plain


def keep_diagnostics(history: FoldHistory, plain: dict, seconds: float) -> None:
    """Append one epoch's diagnostics (plain values, keyed as EpochFigures' fields) to `history`."""
    history.diagnostics_seconds.append(seconds)
    history.action_shares.append(plain["action_shares"])
    history.val_sharpe.append(plain["val_sharpe"])
    history.train_sharpe.append(plain["train_sharpe"])
    history.feature_agreement.append(plain["feature_agreement"])
