"""A universe's fold, the step of the one walk over folds (`walk.walk_folds`, given `universe_step`): one
trainer learns each fold from every instrument taking part, then each instrument's validation is rolled
and scored on its own.

A universe fold (`foxhunt.data.universe.UniverseFold`) becomes one `SpanPart` per instrument taking part
(`fold_parts`): its `FoldRange` moved into the concatenated rows, its learning rows ending where the tail
selection holds its tail back (`selection.head_end`, per instrument, as one instrument's fold does). The
trainer collects and draws from all parts; the tail figure that picks the epoch is pooled over the
instruments' tails, bar-weighted (member_policy). At the fold's end the chosen policy is rolled over each
instrument's validation window separately (entered from flat, with that instrument's norm stats),
scored beside the baselines on that instrument's own rows and execution costs (`InstrumentView`), and
written under ``instruments/<name>/fold_N/`` like one instrument's fold. An instrument without a part in a
fold has no record of it. The per-epoch diagnostics (validation and in-sample Sharpe, action shares) are
the first instrument's of the fold (the focused part); the tail figure that selects is every one's.

With `--seeds K` the trainer holds K members (seed + i), trained side by side as a run's seeds are;
member i > 0 writes under ``instruments/<name>/seed_<s>/``. The held-out period's fold is one more
universe fold through the same step, writing under ``holdout/instruments/<name>/``
(`universe_holdout.train_holdout_fold`). A fold an earlier attempt completed is not trained here: the
walk takes it over (`universe_resume.UniverseLedger.taken_over`), each member's `UniverseOutcome` read
back with its choice, whose out-of-sample window the later folds weigh as they did the first time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from foxhunt import out_names, storage, strict_json
from foxhunt.config import NS_PER_DAY, RunConfig
from foxhunt.data.folds import FoldRange
from foxhunt.data.pnl import ExecutionRows
from foxhunt.data.universe import UniverseFold, UniverseIndex, return_correlations
from foxhunt.evaluate.evaluation import MODEL, RunEvaluation, Scoring
from foxhunt.evaluate.records import host_array, positions_from_bytes
from foxhunt.evaluate.run_scores import evaluate_fold, run_scoring
from foxhunt.evaluate.score_memo import ScoreMemo
from foxhunt.out_names import fold_folder
from foxhunt.run.fold import (
    FoldOutcome,
    Progress,
    epoch_phases,
    fold_report,
    save_fold,
    stitch_outcomes,
    timed_choice,
)
from foxhunt.run.manifest import sha256
from foxhunt.run.walk import FoldDone, FoldStep, Walked
from foxhunt.train import DeviceData, DQNTrainer, TrainingDiverged, synchronize
from foxhunt.train.device_data import SpanPart
from foxhunt.train.diagnostics import diagnostics_due
from foxhunt.train.evidence import WindowEvidence, effective_share
from foxhunt.train.fold_selection import FoldSelection, out_of_sample_windows
from foxhunt.train.selection import head_end

INSTRUMENTS_FOLDER = "instruments"


def instrument_folder(out_uri: str, name: str) -> str:
    """Where instrument `name`'s records of a universe run live: ``instruments/<name>/``."""
    return storage.join(out_uri, INSTRUMENTS_FOLDER, name)


@dataclass(frozen=True)
class InstrumentView:
    """One instrument of the loaded universe on its own: its rows as a view of the device arrays (no copy),
    and its scoring (execution costs from its own rows, a memo of its own)."""

    name: str
    offset: int  # its first row in the concatenated arrays
    data: DeviceData
    scoring: Scoring
    memo: ScoreMemo


def instrument_views(data: DeviceData, settings: RunConfig) -> list[InstrumentView]:
    """Each instrument of `data` as an `InstrumentView` scored with `settings.eval` and the run's seed."""
    views = []
    index = data.universe
    for i, name in enumerate(index.names):
        rows = index.rows(i)
        local = DeviceData(data.features[rows], data.targets[rows], data.timestamp[rows])
        views.append(
            InstrumentView(
                name, rows.start, local, run_scoring(settings.eval, settings.seed, local), ScoreMemo()
            )
        )
    return views


def universe_execution(views: Sequence[InstrumentView]) -> ExecutionRows | None:
    """The instruments' execution rows concatenated like their data (the tail selection scores with them),
    each computed from its own rows only; None when the execution model adds nothing."""
    rows = [v.scoring.execution for v in views]
    if any(r is None for r in rows):
        return None

    def cat(field: str) -> np.ndarray | None:
        parts = [getattr(r, field) for r in rows]
        return None if parts[0] is None else np.concatenate([np.asarray(p) for p in parts])

    change_cost, carry = cat("change_cost"), cat("carry")
    assert change_cost is not None and carry is not None  # both always present
    return ExecutionRows(change_cost=change_cost, carry=carry, gap=cat("gap"))


def shifted(fold_range: FoldRange, offset: int) -> FoldRange:
    """`fold_range` (an instrument's own rows) moved by `offset` rows (into the concatenated arrays)."""
    return replace(
        fold_range,
        train_start=fold_range.train_start + offset,
        train_end=fold_range.train_end + offset,
        val_start=fold_range.val_start + offset,
        val_end=fold_range.val_end + offset,
    )


def fold_parts(index: UniverseIndex, fold: UniverseFold, tail_share: float) -> list[SpanPart]:
    """The fold's parts, one per instrument taking part: its range in the concatenated rows, its learning
    rows ending before its own held-back tail."""
    parts = []
    for i in fold.members:
        local = fold.ranges[i]
        assert local is not None  # a member has a range
        moved = shifted(local, int(index.offsets[i]))
        parts.append(SpanPart(i, moved, head_end(moved, tail_share)))
    return parts


def start_universe_fold(trainer: DQNTrainer, parts: list[SpanPart], fold: int) -> dict[str, float]:
    """Point the trainer at the fold's parts, forget what it learnt, compute each instrument's norm stats."""
    t0 = time.perf_counter()
    trainer.window.set_parts(parts)
    trainer.reset_for_fold(fold)
    synchronize(trainer.device)
    t1 = time.perf_counter()
    trainer.window.compute_norm_stats()
    synchronize(trainer.device)
    return {"reset": t1 - t0, "normalize": time.perf_counter() - t1}


@dataclass(frozen=True)
class UniverseOutcome:
    """A member's universe fold: its outcome on each instrument taking part (by instrument), and its policy
    choice, whose pooled out-of-sample window the member's later folds weigh."""

    instruments: dict[int, FoldOutcome]
    choice: FoldSelection | None


def universe_fold_times(outcomes: Mapping[int, UniverseOutcome]) -> list[tuple[dict[str, float], float]]:
    """Each universe fold trained in this process, as its phases' seconds and its own (`reports.phase_time_line`):
    the shared phases once, each instrument's validation and checkpoint added up, the fold lasting until its
    last instrument's report. A fold taken over from an earlier attempt is left out."""
    times = []
    for outcome in outcomes.values():
        reports = [o.report for o in outcome.instruments.values() if o.outputs is not None]
        if not reports:
            continue
        phases = dict(reports[0].phases)
        for own in ("validate", "checkpoint"):  # one after another per instrument; the rest is shared
            phases[own] = sum(r.phases[own] for r in reports)
        times.append((phases, max(r.fold_seconds for r in reports)))
    return times


def instrument_outcomes(walked: Walked, member: int, instrument: int) -> dict[int, FoldOutcome]:
    """Member `member`'s outcomes on instrument `instrument`, by fold (the folds it took part in)."""
    return {
        fold: outcome.instruments[instrument]
        for fold, outcome in walked.outcomes.get(member, {}).items()
        if instrument in outcome.instruments
    }


def member_folder(out_uri: str, name: str, settings: RunConfig, member: int) -> str:
    """Where member `member` (seed `settings.seed + member`) writes instrument `name`'s folds: the
    instrument's folder for the first seed, its ``seed_<s>/`` for the others (as a run's --seeds)."""
    folder = instrument_folder(out_uri, name)
    return folder if member == 0 else storage.join(folder, out_names.seed_folder(settings.seed + member))


def _train_epochs(
    trainer: DQNTrainer,
    fold: int,
    members: Sequence[int],
    settings: RunConfig,
    progress: Progress,
    check: Callable[[], None],
) -> dict[int, list]:
    """The fold's epochs for `members` (those still walking) until each has finished them or diverged
    (`trainer.failures`: the walk hands the divergence to its caller, whom member 0's fails). Per member its
    epochs' figures. `check` runs before each epoch and after the last, as in one instrument's fold
    (`fold.train_fold`): a stop signal raises there."""
    history: dict[int, list] = {m: [] for m in members}
    for epoch in range(settings.epochs):
        check()
        diagnose = diagnostics_due(epoch, settings.epochs, settings.diagnostics_spacing())
        live = [m for m in members if trainer.failures[m] is None]
        if not live:
            break
        figures = trainer.train_epoch(epoch, settings.epochs, live, diagnose=diagnose)
        for m, figure in enumerate(figures):
            if figure is not None and m in history:
                history[m].append(figure)
        shown = next((f for f in figures if f is not None), None)  # the first member still walking's
        loss = "every member diverged" if shown is None else f"loss {shown.loss:.4f}"
        progress(f"fold {fold} epoch {epoch + 1}/{settings.epochs}: {loss}")
    check()
    return history


def train_universe_fold(
    trainer: DQNTrainer,
    fold: UniverseFold,
    views: Sequence[InstrumentView],
    out_uri: str,
    settings: RunConfig,
    progress: Progress,
    earlier: dict[int, list[WindowEvidence]],
    check: Callable[[], None] = lambda: None,
) -> tuple[dict[int, dict[int, FoldOutcome]], dict[int, FoldSelection | None]]:
    """One universe fold on `trainer` for the members of `earlier` (those still walking, one per seed,
    each with its earlier folds' pooled out-of-sample windows): learn from every instrument taking part,
    choose the policy, then per instrument validate, save and report. Per member that did not diverge:
    its outcome per instrument, and its choice. `check`: the epochs' boundary check (`_train_epochs`)."""
    fold_start = time.perf_counter()
    parts = fold_parts(trainer.data.universe, fold, settings.dqn.select_tail_share)
    phases = start_universe_fold(trainer, parts, fold.fold)
    history = _train_epochs(trainer, fold.fold, list(earlier), settings, progress, check)
    live = [m for m in earlier if trainer.failures[m] is None]
    choices, choose_seconds = timed_choice(trainer, live, {m: earlier[m] for m in live})
    outcomes: dict[int, dict[int, FoldOutcome]] = {m: {} for m in live}
    for m in live:
        timed = {**phases, **epoch_phases(history[m], choose_seconds)}
        for part in parts:
            trainer.window.focus(part.instrument)
            view = views[part.instrument]
            folder = member_folder(out_uri, view.name, settings, m)
            outcomes[m][part.instrument] = _finish_instrument(
                trainer, m, fold, part, view, history[m], dict(timed), fold_start, folder, choices[m]
            )
    return outcomes, choices


def _finish_instrument(
    trainer: DQNTrainer,
    member: int,
    fold: UniverseFold,
    part: SpanPart,
    view: InstrumentView,
    history: list,
    phases: dict[str, float],
    fold_start: float,
    folder: str,
    choice: FoldSelection | None,
) -> FoldOutcome:
    """Member `member`'s policy on the focused instrument's validation: rolled, scored on its own rows
    beside the baselines, saved under `folder`."""
    local = fold.ranges[part.instrument]
    assert local is not None
    t0 = time.perf_counter()
    positions = trainer.policies.validation_positions(member=member)
    data = view.data
    window, baselines = evaluate_fold(
        data.features, data.targets, data.timestamp, local, positions, view.scoring, view.memo
    )
    synchronize(trainer.device)
    phases["validate"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    files = save_fold(
        trainer.policies.state_dict_cpu(member),
        trainer.window.norm_stats_dict(),
        fold.fold,
        positions,
        folder,
    )
    phases["checkpoint"] = time.perf_counter() - t0
    report = fold_report(trainer, local, data.timestamp, phases, fold_start, history, window, choice)
    files[out_names.FOLD_REPORT] = strict_json.json_bytes(report.to_dict())
    storage.write_bytes_soon(
        storage.join(folder, fold_folder(fold.fold), out_names.FOLD_REPORT), files[out_names.FOLD_REPORT]
    )
    outputs = {f"{fold_folder(fold.fold)}/{name}": sha256(content) for name, content in files.items()}
    return FoldOutcome(report, positions_from_bytes(files[out_names.POSITIONS]), baselines, outputs)


def universe_step(
    trainer: DQNTrainer,
    views: Sequence[InstrumentView],
    out_uri: str,
    settings: RunConfig,
    progress: Progress,
    prior: Mapping[int, Sequence[WindowEvidence]] | None = None,
    check: Callable[[], None] = lambda: None,
) -> FoldStep:
    """The walk's step for a universe (`walk.walk_folds(..., step=)`): a `UniverseFold` trained on every
    instrument taking part (`train_universe_fold`); per member its `UniverseOutcome`, or its divergence.
    Each member's pooled decision weighs its earlier folds' pooled out-of-sample windows, after `prior`'s
    (the held-out fold's: the run's folds'). `check` runs at the fold's epoch boundaries (the walk's)."""
    before = prior or {}

    correlations = first_window_correlations(views, settings)

    def step(
        fold: UniverseFold, live: Mapping[int, str], walked: Mapping[int, Mapping[int, UniverseOutcome]]
    ) -> dict[int, UniverseOutcome | TrainingDiverged]:
        names = ", ".join(views[i].name for i in fold.members)
        progress(f"fold {fold.fold}: {len(fold.members)} instruments ({names})")
        members = list(fold.members)
        trainer.policies.evidence_share = effective_share(correlations[np.ix_(members, members)].tolist())
        earlier = {m: [*before.get(m, ()), *pooled_evidence(walked[m])] for m in live}
        by_member, choices = train_universe_fold(
            trainer, fold, views, out_uri, settings, progress, earlier, check
        )
        if 0 in by_member:  # the console's lines are the run's own member's; its divergence says so instead
            _fold_lines(fold.fold, by_member[0], views, progress)
        return {m: trainer.failures[m] or UniverseOutcome(by_member[m], choices[m]) for m in live}

    return step


def first_window_correlations(views: Sequence[InstrumentView], settings: RunConfig) -> np.ndarray:
    """The instruments' 1-bar return correlations over the universe's first `train_days` (before any fold's
    validation: no bar the run scores), for `evidence.effective_share`."""
    stamps = [v.data.timestamp for v in views]
    start = min(int(t[0]) for t in stamps if len(t))
    cutoff = start + round(settings.folds.train_days * NS_PER_DAY)
    returns = [host_array(v.data.targets[:, 0]) for v in views]
    return return_correlations(stamps, returns, cutoff)


def pooled_evidence(outcomes: Mapping[int, UniverseOutcome]) -> list[WindowEvidence]:
    """The pooled out-of-sample windows of a member's earlier universe folds, in fold order."""
    return out_of_sample_windows(o.choice for o in outcomes.values())


def _fold_lines(
    fold: int, outcomes: Mapping[int, FoldOutcome], views: Sequence[InstrumentView], progress: Progress
) -> None:
    """The console lines of a finished universe fold: each instrument's validation, the fold's timings."""
    for i, outcome in outcomes.items():
        sharpe = outcome.report.evaluation.policies[MODEL].net.sharpe
        progress(f"fold {fold} {views[i].name}: validation net Sharpe {sharpe:.2f} after costs")
    phases = next(iter(outcomes.values())).report.phases
    progress(
        f"fold {fold} done: reset {phases['reset'] * 1e3:.1f}ms normalize "
        f"{phases['normalize'] * 1e3:.1f}ms collect {phases['collect']:.2f}s train {phases['train']:.2f}s "
        f"select {phases['select']:.2f}s"
    )


def local_folds(folds: Sequence[UniverseFold], instrument: int) -> list[FoldRange]:
    """Instrument `instrument`'s folds in its own rows, in walk order (the folds it takes part in)."""
    return [r for f in folds if (r := f.ranges[instrument]) is not None]


def raise_first_divergence(done: FoldDone) -> None:
    """Member 0's divergence in the fold just walked, raised within the fold (the walk's `on_fold`), so the
    failure names it: a universe run ends with its first seed, as a single run does."""
    first = done.results.get(0)
    if isinstance(first, TrainingDiverged):
        raise first


def member_evaluations(
    views: Sequence[InstrumentView], folds: Sequence[UniverseFold], walked: Walked, members: int
) -> dict[int, dict[str, RunEvaluation]]:
    """Per member, its stitched evaluation of each instrument whose folds it walked as the first member
    did (a seed that stopped early has no stitched record of it)."""
    evaluations: dict[int, dict[str, RunEvaluation]] = {m: {} for m in range(members)}
    for i, view in enumerate(views):
        outcomes = instrument_outcomes(walked, 0, i)
        for m in range(members) if outcomes else ():
            own = instrument_outcomes(walked, m, i)
            if own.keys() == outcomes.keys():
                evaluations[m][view.name] = stitch_outcomes(
                    view.data, local_folds(folds, i), own, view.scoring, view.memo
                )
    return evaluations
