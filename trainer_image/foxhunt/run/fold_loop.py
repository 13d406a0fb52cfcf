"""One fold on the persistent trainer: reset, normalize, train, validate, checkpoint; and taking over a
fold that an earlier attempt completed.

A fold writes under `fold_N/`: `weights.pt` (the online network, for `torch.load(weights_only=True)`),
`norm_stats_foldN.json`, `positions.npy` (its greedy validation positions, which the run's stitched
record and a resume read) and `report.json` (timings, epochs, the evaluation of its window beside
the baselines, and the training diagnostics' warnings).
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from foxhunt import out_dir, storage
from foxhunt.config import PHASES
from foxhunt.data.bars import iso_utc
from foxhunt.data.features import FEATURE_NAMES
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.evaluation import ScoreMemo, Scoring
from foxhunt.evaluate.reports import EpochStats, FoldDates, FoldReport, Validation
from foxhunt.evaluate.run_scores import (
    POSITIONS_FILE,
    evaluate_fold,
    fold_warnings,
    positions_bytes,
    positions_from_bytes,
)
from foxhunt.out_dir import fold_folder
from foxhunt.run.manifest import sha256
from foxhunt.train import DQNTrainer, Member, PopulationTrainer, TrainingDiverged, synchronize

Progress = Callable[[str], None]


def _print(msg: str) -> None:
    print(msg, flush=True)


def _json_bytes(payload: dict) -> bytes:
    return (json.dumps(payload, indent=2) + "\n").encode()


def fold_dates(fold_range: FoldRange, timestamp: np.ndarray) -> FoldDates:
    """The first and last bar of the fold's training and validation ranges."""
    return FoldDates(
        iso_utc(timestamp[fold_range.train_start]),
        iso_utc(timestamp[fold_range.train_end - 1]),
        iso_utc(timestamp[fold_range.val_start]),
        iso_utc(timestamp[fold_range.val_end - 1]),
    )


def _epoch_stats(stats: dict, collect_seconds: float, train_seconds: float) -> EpochStats:
    shares = stats.get("action_shares")
    return EpochStats(
        epoch=stats["epoch"],
        loss=stats["loss"],
        epsilon=stats["epsilon"],
        steps=stats["steps"],
        collect_seconds=collect_seconds,
        train_seconds=train_seconds,
        samples_per_second=stats["samples_per_second"],
        q_mean=stats.get("q_mean"),
        q_max=stats.get("q_max"),
        action_shares=list(shares) if shares is not None else None,
        train_sharpe=stats.get("train_sharpe"),
        val_sharpe=stats.get("val_sharpe"),
        feature_agreement=stats.get("feature_agreement"),
    )


def _train_epochs(
    trainer: DQNTrainer, epochs: int, progress: Progress, check: Callable[[], None]
) -> list[EpochStats]:
    """The fold's epochs, each after a boundary check, each reported on the console."""
    fold = trainer.fold_range.fold
    epoch_stats = []
    for epoch in range(epochs):
        check()
        stats = trainer.train_epoch(epoch, epochs)
        h = trainer.history
        epoch_stats.append(_epoch_stats(stats, h.collect_seconds[-1], h.train_seconds[-1]))
        progress(
            f"fold {fold} epoch {epoch + 1}/{epochs}: loss {stats['loss']:.4f} eps {stats['epsilon']:.2f} "
            f"{stats['steps']} steps {stats['seconds']:.2f}s {stats['samples_per_second']:,.0f} samples/s"
        )
    return epoch_stats


@dataclass
class FoldOutcome:
    """A completed fold: its report, its validation positions, the baselines' positions, its files' sha256."""

    report: FoldReport
    positions: np.ndarray  # float64 −1/0/1, one per validation bar
    baselines: dict[str, object] | None  # None for a fold taken over from an earlier attempt
    outputs: dict[str, str] | None  # output file (relative to --out) → sha256; None when taken over


def trainer_scoring(trainer: DQNTrainer) -> Scoring:
    """The trainer's evaluation costs (its training cost when it has none), the bootstrap seeded with its seed."""
    cost = trainer.config.cost if trainer.eval_cost is None else trainer.eval_cost
    return Scoring(cost=cost, spread=trainer.eval_spread, seed=trainer.seed)


def train_fold(
    trainer: DQNTrainer,
    fold_range: FoldRange,
    epochs: int,
    out_uri: str,
    progress: Progress = _print,
    check: Callable[[], None] = lambda: None,
    *,
    scoring: Scoring | None = None,
    memo: ScoreMemo | None = None,
) -> FoldOutcome:
    """One fold on the persistent trainer: reset, normalize, train, validate, checkpoint.

    `check` runs at every epoch boundary (a stop signal raises there). Validation scores the greedy
    positions beside the baselines with `scoring` (default: the trainer's evaluation costs, the
    bootstrap seeded with its seed), looking up in `memo` the records it has scored before.
    """
    fold_start = time.perf_counter()
    phases = start_fold(trainer, fold_range)
    epoch_stats = _train_epochs(trainer, epochs, progress, check)
    check()
    scoring = scoring or trainer_scoring(trainer)
    return finish_fold(trainer, epoch_stats, phases, fold_start, out_uri, progress, scoring, memo)


def start_fold(trainer: DQNTrainer | PopulationTrainer, fold_range: FoldRange) -> dict[str, float]:
    """Point the trainer at the fold, forget what it learnt, compute the norm stats; the phases' seconds."""
    phases = {}
    t0 = time.perf_counter()
    trainer.set_fold_range(fold_range)
    trainer.reset_for_fold(fold_range.fold)
    synchronize(trainer.device)
    phases["reset"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    trainer.compute_norm_stats()
    synchronize(trainer.device)
    phases["normalize"] = time.perf_counter() - t0
    return phases


def finish_fold(
    trainer: DQNTrainer | Member,
    epoch_stats: list[EpochStats],
    phases: dict[str, float],
    fold_start: float,
    out_uri: str,
    progress: Progress,
    scoring: Scoring,
    memo: ScoreMemo | None = None,
) -> FoldOutcome:
    """After a trained fold: validate beside the baselines, checkpoint, write `report.json`."""
    device, fold_range = trainer.device, trainer.fold_range
    fold, phases = fold_range.fold, dict(phases)
    phases["collect"] = sum(e.collect_seconds for e in epoch_stats)
    phases["train"] = sum(e.train_seconds for e in epoch_stats)

    t0 = time.perf_counter()
    positions = trainer.greedy_positions()  # one rollout serves the evaluation and the saved record
    data = trainer.data
    window, baselines = evaluate_fold(
        data.features, data.targets, data.timestamp, fold_range, positions, scoring, memo
    )
    synchronize(device)
    phases["validate"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    files = save_fold(trainer, fold_range, positions, out_uri)
    phases["checkpoint"] = time.perf_counter() - t0

    report = FoldReport(
        **fold_range.to_dict(),
        dates=fold_dates(fold_range, data.timestamp),
        phases={p: phases[p] for p in PHASES},
        fold_seconds=time.perf_counter() - fold_start,
        samples_per_second=trainer.steps_done * trainer.config.batch_size / max(phases["train"], 1e-9),
        steps=trainer.steps_done,
        epochs=epoch_stats,
        validation=Validation.from_window(window),
        evaluation=window,
        warnings=fold_warnings(fold, epoch_stats),
    )
    for warning in report.warnings:
        progress(f"WARNING {warning}")
    files[out_dir.FOLD_REPORT] = _json_bytes(report.to_dict())
    storage.write_bytes(
        storage.join(out_uri, fold_folder(fold), out_dir.FOLD_REPORT), files[out_dir.FOLD_REPORT]
    )
    outputs = {f"{fold_folder(fold)}/{name}": sha256(content) for name, content in files.items()}
    return FoldOutcome(report, positions_from_bytes(files[POSITIONS_FILE]), baselines, outputs)


def train_population_fold(
    population: PopulationTrainer,
    fold_range: FoldRange,
    epochs: int,
    out_uris: dict[int, str],
    progress: Progress = _print,
    check: Callable[[], None] = lambda: None,
    *,
    scoring: Scoring,
    memo: ScoreMemo | None = None,
) -> dict[int, FoldOutcome | TrainingDiverged]:
    """One fold for every active member of a population at once; per member (keyed as `out_uris`, which
    names the active members' output folders) its outcome, or the divergence that stopped it."""
    fold_start = time.perf_counter()
    phases = start_fold(population, fold_range)
    member_stats: dict[int, list[EpochStats]] = {i: [] for i in out_uris}
    for epoch in range(epochs):
        check()
        stats = population.train_epoch(epoch, epochs)
        for i, member_epoch in enumerate(stats):
            if member_epoch is not None and i in member_stats:
                h = population.members[i].history
                member_stats[i].append(_epoch_stats(member_epoch, h.collect_seconds[-1], h.train_seconds[-1]))
        progress(_population_epoch_line(fold_range.fold, epoch, epochs, stats, out_uris))
    check()
    outcomes: dict[int, FoldOutcome | TrainingDiverged] = {}
    for i, out_uri in out_uris.items():
        member = population.members[i]
        if member.failure is not None:
            outcomes[i] = member.failure
            continue
        outcomes[i] = finish_fold(
            member, member_stats[i], phases, fold_start, out_uri, progress, scoring, memo
        )
    return outcomes


def _population_epoch_line(fold: int, epoch: int, epochs: int, stats: list[dict | None], members) -> str:
    live = [s for i, s in enumerate(stats) if s is not None and i in members]
    if not live:
        return f"fold {fold} epoch {epoch + 1}/{epochs}: no member left"
    losses = " ".join(f"{s['loss']:.4f}" for s in live)
    total = sum(s["samples_per_second"] for s in live)
    return (
        f"fold {fold} epoch {epoch + 1}/{epochs}: {len(live)} members, loss {losses}; "
        f"{live[0]['steps']} steps {live[0]['seconds']:.2f}s {total:,.0f} samples/s together"
    )


def save_fold(
    trainer: DQNTrainer | Member, fold_range: FoldRange, positions, out_uri: str
) -> dict[str, bytes]:
    """Write the fold's weights, norm stats and validation positions under `fold_N/`; returns them by name."""
    fold = fold_range.fold
    buf = io.BytesIO()
    torch.save(trainer.state_dict_cpu(), buf)
    norm = {"fold": fold, "feature_names": list(FEATURE_NAMES), **trainer.norm_stats_dict()}
    files = {
        out_dir.WEIGHTS: buf.getvalue(),
        out_dir.norm_stats_file(fold): _json_bytes(norm),
        POSITIONS_FILE: positions_bytes(positions),
    }
    for name, data in files.items():
        storage.write_bytes(storage.join(out_uri, fold_folder(fold), name), data)
    return files


def load_fold(out_uri: str, fold: int) -> FoldOutcome:
    """The report and validation positions of a fold an earlier attempt completed (its outputs verified)."""
    folder = storage.join(out_uri, fold_folder(fold))
    report = FoldReport.from_dict(json.loads(storage.read_bytes(storage.join(folder, out_dir.FOLD_REPORT))))
    positions = positions_from_bytes(storage.read_bytes(storage.join(folder, POSITIONS_FILE)))
    return FoldOutcome(report, positions, None, None)
