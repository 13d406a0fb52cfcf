"""One fold, for every member of the trainer named: reset → train → validate → save → report
(`train_fold`, which `walk.walk_folds` calls for each fold); and taking over a fold an earlier attempt
completed (`load_fold`).

A fold writes under `fold_N/`: `weights.pt` (the online network, for `torch.load(weights_only=True)`),
`norm_stats_foldN.json`, `positions.npy` (its greedy validation positions, which the run's stitched
record and a resume read) and `report.json` (timings, epochs, the evaluation of its window beside
the baselines, and the training diagnostics' warnings).
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from foxhunt import out_names, storage, strict_json
from foxhunt.config import MIN_SEEDS_FOR_MAJORITY, PHASES
from foxhunt.data.bars import iso_utc
from foxhunt.data.features import FEATURE_NAMES
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.evaluation import RunEvaluation, Scoring
from foxhunt.evaluate.records import positions_bytes, positions_from_bytes
from foxhunt.evaluate.reports import FoldDates, FoldReport
from foxhunt.evaluate.run_scores import evaluate_fold, stitched_evaluation
from foxhunt.evaluate.score_memo import ScoreMemo
from foxhunt.evaluate.seed_spread import majority_positions
from foxhunt.out_names import fold_folder
from foxhunt.run.manifest import sha256
from foxhunt.run.step_progress import StepProgress
from foxhunt.train import DQNTrainer, TrainingDiverged, synchronize
from foxhunt.train.diagnostics import diagnostics_due
from foxhunt.train.epoch_figures import EpochFigures, fold_warnings
from foxhunt.train.evidence import WindowEvidence
from foxhunt.train.fold_selection import FoldSelection, out_of_sample_windows

Progress = Callable[[str], None]
# Told of each finished epoch: fold, epoch, epochs, and each member's figures (None: the member failed).
EpochHook = Callable[[int, int, int, list[EpochFigures | None]], None]


def _print(msg: str) -> None:
    print(msg, flush=True)


def fold_dates(fold_range: FoldRange, timestamp: np.ndarray) -> FoldDates:
    """The first and last bar of the fold's training and validation ranges."""
    return FoldDates(
        iso_utc(timestamp[fold_range.train_start]),
        iso_utc(timestamp[fold_range.train_end - 1]),
        iso_utc(timestamp[fold_range.val_start]),
        iso_utc(timestamp[fold_range.val_end - 1]),
    )


@dataclass
class FoldOutcome:
    """A completed fold: its report, its validation positions, the baselines' positions, its files' sha256."""

    report: FoldReport
    positions: np.ndarray  # float64 −1/0/1, one per validation bar
    baselines: dict[str, object] | None  # None for a fold taken over from an earlier attempt
    outputs: dict[str, str] | None  # output file (relative to --out) → sha256; None when taken over


def train_fold(
    trainer: DQNTrainer,
    fold_range: FoldRange,
    epochs: int,
    outs: Mapping[int, str],
    progress: Progress = _print,
    check: Callable[[], None] = lambda: None,
    *,
    scoring: Scoring,
    memo: ScoreMemo | None = None,
    diagnostics_every: int = 1,
    on_epoch: EpochHook | None = None,
    earlier: Mapping[int, Sequence[WindowEvidence]] | None = None,
) -> dict[int, FoldOutcome | TrainingDiverged]:
    """One fold for the members named in `outs` (member → its output folder): reset → train → validate →
    save → report. Per member its outcome, or the divergence that stopped it.

    A run trains member 0 of a population of one; a search, a trial or a batch of trials as members.
    `check` runs at every epoch boundary (a stop signal raises there); validation scores the greedy
    positions beside the baselines with `scoring`, looking up in `memo` the records scored before.
    The greedy policy's diagnostics run every `diagnostics_every` epochs and after the last one;
    `on_epoch` is told of each epoch's figures as it ends (a run's live record); `earlier` holds each
    member's earlier folds' out-of-sample windows, which a pooled decision (`select_pool`) weighs.
    """
    fold_start = time.perf_counter()
    phases = start_fold(trainer, fold_range)  # reset, normalize
    history: dict[int, list[EpochFigures]] = {i: [] for i in outs}
    for epoch in range(epochs):  # train
        check()
        steps = StepProgress(f"fold {fold_range.fold} epoch {epoch + 1}/{epochs}")
        diagnose = diagnostics_due(epoch, epochs, diagnostics_every)
        figures = trainer.train_epoch(epoch, epochs, list(outs), steps.update, diagnose=diagnose)
        steps.close()
        for i, member in enumerate(figures):
            if member is not None:
                history[i].append(member)
        progress(_epoch_line(fold_range.fold, epoch, epochs, [figures[i] for i in outs]))
        if on_epoch is not None:
            on_epoch(fold_range.fold, epoch, epochs, list(figures))
    check()
    live = [i for i in outs if trainer.failures[i] is None]
    # The best tail epoch's weights, or flat (select_tail_share).
    chosen, choose_seconds = timed_choice(trainer, live, earlier)
    for i in live:
        choice = chosen[i]
        if choice is not None:
            progress(_selection_line(fold_range.fold, i, choice))
    timed = {i: {**phases, **epoch_phases(history[i], choose_seconds)} for i in live}
    return {  # validate, save, report
        i: trainer.failures[i]
        or finish_fold(trainer, i, history[i], timed[i], fold_start, out, progress, scoring, memo, chosen[i])
        for i, out in outs.items()
    }


def _selection_line(fold: int, member: int, choice: FoldSelection) -> str:
    """The console line of a fold's tail selection."""
    if choice.epoch is None:
        return f"fold {fold} member {member}: no epoch scored on the tail; the policy is flat"
    verdict = "the policy is flat: no edge found" if choice.flat else "kept"
    if choice.pooled is not None:
        return (
            f"fold {fold} member {member}: epoch {choice.epoch + 1} scored best on the training tail "
            f"(net Sharpe {choice.tail_sharpe:.2f}); pooled decision: {choice.pooled.reason}"
        )
    return (
        f"fold {fold} member {member}: epoch {choice.epoch + 1} scored best on the training tail "
        f"(net Sharpe {choice.tail_sharpe:.2f}, gate {choice.gate:.2f}); {verdict}"
    )


def timed_choice(
    trainer: DQNTrainer, live: Sequence[int], earlier: Mapping[int, Sequence[WindowEvidence]] | None
) -> tuple[dict[int, FoldSelection | None], float]:
    """The live members' policy choice (`MemberPolicies.choose_policies`) and its device-synchronised seconds."""
    t0 = time.perf_counter()
    chosen = trainer.policies.choose_policies(live, earlier)
    synchronize(trainer.device)
    return chosen, time.perf_counter() - t0


def epoch_phases(epochs: Sequence[EpochFigures], choose_seconds: float) -> dict[str, float]:
    """A member's fold phases from its epochs: collection, steps, and selection (each epoch's tail score and
    diagnostics, then the choice of the epoch kept)."""
    return {
        "collect": sum(e.collect_seconds for e in epochs),
        "train": sum(e.train_seconds for e in epochs),
        "select": choose_seconds + sum(e.select_seconds for e in epochs),
    }


def start_fold(trainer: DQNTrainer, fold_range: FoldRange) -> dict[str, float]:
    """Point the trainer at the fold, forget what it learnt, compute the norm stats; the phases' seconds."""
    phases = {}
    t0 = time.perf_counter()
    trainer.set_fold_range(fold_range)
    trainer.reset_for_fold(fold_range.fold)
    synchronize(trainer.device)
    phases["reset"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    trainer.window.compute_norm_stats()
    synchronize(trainer.device)
    phases["normalize"] = time.perf_counter() - t0
    return phases


def finish_fold(
    trainer: DQNTrainer,
    member: int,
    epochs: list[EpochFigures],
    phases: dict[str, float],
    fold_start: float,
    out_uri: str,
    progress: Progress,
    scoring: Scoring,
    memo: ScoreMemo | None = None,
    selection: FoldSelection | None = None,
) -> FoldOutcome:
    """After a trained fold, for one member: validate beside the baselines, checkpoint, write `report.json`.
    `phases`: the seconds of the fold's phases up to its selection (`start_fold`, `epoch_phases`)."""
    device, fold_range = trainer.device, trainer.window.fold
    fold, phases = fold_range.fold, dict(phases)

    t0 = time.perf_counter()
    # One rollout a fold: the evaluation and the saved record (a pooled choice's, when it rolled them out).
    positions = trainer.policies.validation_positions(member=member)
    data = trainer.data
    window, baselines = evaluate_fold(
        data.features, data.targets, data.timestamp, fold_range, positions, scoring, memo
    )
    synchronize(device)
    phases["validate"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    files = save_fold(
        trainer.policies.state_dict_cpu(member), trainer.window.norm_stats_dict(), fold, positions, out_uri
    )
    phases["checkpoint"] = time.perf_counter() - t0

    report = fold_report(trainer, fold_range, data.timestamp, phases, fold_start, epochs, window, selection)
    for warning in report.warnings:
        progress(f"WARNING {warning}")
    # Strict JSON: an undefined figure (no bootstrap, no tail scored) is null.
    files[out_names.FOLD_REPORT] = strict_json.json_bytes(report.to_dict())
    storage.write_bytes_soon(
        storage.join(out_uri, fold_folder(fold), out_names.FOLD_REPORT), files[out_names.FOLD_REPORT]
    )
    outputs = {f"{fold_folder(fold)}/{name}": sha256(content) for name, content in files.items()}
    return FoldOutcome(report, positions_from_bytes(files[out_names.POSITIONS]), baselines, outputs)


def fold_report(
    trainer: DQNTrainer,
    fold_range: FoldRange,
    timestamp: np.ndarray,
    phases: Mapping[str, float],
    fold_start: float,
    epochs: list,
    window,
    selection: FoldSelection | None,
) -> FoldReport:
    """The fold's report: its range and dates, phases, speed, epochs, validation and selection."""
    return FoldReport(
        **fold_range.to_dict(),
        dates=fold_dates(fold_range, timestamp),
        phases={p: phases[p] for p in PHASES},
        fold_seconds=time.perf_counter() - fold_start,
        samples_per_second=trainer.steps_done * trainer.config.batch_size / max(phases["train"], 1e-9),
        steps=trainer.steps_done,
        epochs=epochs,
        evaluation=window,
        # A fold the tail gate made flat trades nothing: the last epoch's policy warnings do not apply.
        warnings=[] if selection is not None and selection.flat else fold_warnings(fold_range.fold, epochs),
        selection=selection,
    )


def _epoch_line(fold: int, epoch: int, epochs: int, figures: list[EpochFigures | None]) -> str:
    """The console line of an epoch: one member's figures, or the population's together."""
    live = [f for f in figures if f is not None]
    if not live:
        return f"fold {fold} epoch {epoch + 1}/{epochs}: no member left"
    total = sum(f.samples_per_second for f in live)
    if len(figures) == 1:
        f = live[0]
        return (
            f"fold {fold} epoch {epoch + 1}/{epochs}: loss {f.loss:.4f} eps {f.epsilon:.2f} "
            f"{f.steps} steps {f.seconds:.2f}s {total:,.0f} samples/s"
        )
    losses = " ".join(f"{f.loss:.4f}" for f in live)
    return (
        f"fold {fold} epoch {epoch + 1}/{epochs}: {len(live)} members, loss {losses}; "
        f"{live[0].steps} steps {live[0].seconds:.2f}s {total:,.0f} samples/s together"
    )


def save_fold(weights: dict, norm_stats: dict, fold: int, positions, out_uri: str) -> dict[str, bytes]:
    """Write the fold's weights, norm stats and validation positions under `fold_N/`; returns them by name."""
    buf = io.BytesIO()
    torch.save(weights, buf)
    norm = {"fold": fold, "feature_names": list(FEATURE_NAMES), **norm_stats}
    files = {
        out_names.WEIGHTS: buf.getvalue(),
        out_names.norm_stats_file(fold): strict_json.json_bytes(norm),
        out_names.POSITIONS: positions_bytes(positions),
    }
    # On the walk's writer threads (storage.background), all on disk by the fold's end.
    for name, data in files.items():
        storage.write_bytes_soon(storage.join(out_uri, fold_folder(fold), name), data)
    return files


def load_fold(out_uri: str, fold: int) -> FoldOutcome:
    """The report and validation positions of a fold an earlier attempt completed (its outputs verified)."""
    folder = storage.join(out_uri, fold_folder(fold))
    report = FoldReport.from_dict(json.loads(storage.read_bytes(storage.join(folder, out_names.FOLD_REPORT))))
    positions = positions_from_bytes(storage.read_bytes(storage.join(folder, out_names.POSITIONS)))
    return FoldOutcome(report, positions, None, None)


def stitch_outcomes(
    data,
    folds: list[FoldRange],
    outcomes: Mapping[int, FoldOutcome],
    scoring: Scoring,
    memo: ScoreMemo,
    baselines_from: Mapping[int, FoldOutcome] | None = None,
) -> RunEvaluation:
    """The stitched out-of-sample record of the folds' outcomes (their validation positions) on the device
    data, beside the baselines the folds scored (those of `baselines_from`, by default the same folds').

    A fold trained in this process, stitched beside its own baselines, keeps the evaluation it was given as
    it ended (`finish_fold`: those positions, those baselines, this scoring): it is not scored again."""
    scored = outcomes if baselines_from is None else baselines_from
    own = {} if baselines_from is not None else {
        fold: o.report.evaluation for fold, o in outcomes.items() if o.baselines is not None
    }  # fmt: skip
    return stitched_evaluation(
        data.features,
        data.targets,
        data.timestamp,
        folds,
        {fold: o.positions for fold, o in outcomes.items()},
        scoring,
        {fold: o.baselines for fold, o in scored.items() if o.baselines is not None},
        memo,
        own,
    )


def stitch_majority(
    data,
    folds: list[FoldRange],
    members: Sequence[Mapping[int, FoldOutcome]],
    scoring: Scoring,
    memo: ScoreMemo,
) -> RunEvaluation:
    """The stitched record of the members' vote (`seed_spread.majority_positions`), fold by fold, beside
    the baselines the first member's folds scored."""
    first = members[0]
    voted = {fold: majority_positions([m[fold].positions for m in members]) for fold in first}
    baselines = {fold: o.baselines for fold, o in first.items() if o.baselines is not None}
    return stitched_evaluation(
        data.features, data.targets, data.timestamp, folds, voted, scoring, baselines, memo
    )


def voted_outcome(
    data, fold_range: FoldRange, members: Sequence[FoldOutcome], scoring: Scoring, memo: ScoreMemo | None
) -> FoldOutcome:
    """One fold's outcome of the members' vote (`seed_spread.majority_positions`): the first member's, with
    the voted positions and their window scored beside the baselines (fitted once where `memo` holds them);
    the first member's own where fewer than MIN_SEEDS_FOR_MAJORITY walked the fold (no vote to take)."""
    if len(members) < MIN_SEEDS_FOR_MAJORITY:
        return members[0]
    positions = majority_positions([m.positions for m in members])
    window, _ = evaluate_fold(
        data.features, data.targets, data.timestamp, fold_range, positions, scoring, memo
    )
    first = members[0]
    return replace(first, positions=positions, report=replace(first.report, evaluation=window))


def out_of_sample_evidence(outcomes: Mapping[int, FoldOutcome]) -> list[WindowEvidence]:
    """The out-of-sample windows a member's completed folds recorded (report.json `selection`), in fold order."""
    return out_of_sample_windows(o.report.selection for o in outcomes.values())
