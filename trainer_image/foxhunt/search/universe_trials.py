"""The trials of a universe's search (`search/universe_search.py`): each trial a whole universe run with
its settings, its objective read from the book of its per-instrument stitched records.

A trial walks the universe's folds on the trainer of its shape (`population.TrainerPool` of size 1: trials
one at a time, one trainer per shape, refilled by `apply_settings`) through the one walk over folds with a
universe fold as its step (`universe_walk.universe_step`), writing under ``trials/NNNN/`` what a universe
run writes in its `--out` (`universe_run.universe_records`): ``instruments/<name>/fold_F/``, each
instrument's ``stitched.json`` and ``series.npz``, ``book.json`` and ``summary.json``; then
``trial.json`` (`outputs.TrialReport`, its record the book's stitched figures).

The objective (`universe_objective`) is the book's, never one instrument's: ``stitched_sharpe`` the book's
stitched net Sharpe (the instruments' stitched net returns combined with equal-risk weights,
`run/universe_book.py`), ``stitched_return`` its net log return, ``stitched_sharpe_no_collapse`` its
Sharpe with a trial whose policy collapsed in some fold failed. After each fold the pruner is told the
mean of the fold's instruments' net validation Sharpe (`fold_value`: the pruner compares trials at
one fold, and a fold has no book of its own); a pruned trial stops walking and has no record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from foxhunt import storage, strict_json
from foxhunt.config import DQNConfig, RunConfig, override
from foxhunt.config.search import NO_COLLAPSE_SUFFIX
from foxhunt.data.universe import UniverseFold
from foxhunt.evaluate.evaluation import MODEL
from foxhunt.evaluate.reports import window_from_dict
from foxhunt.out_names import TRIAL_REPORT
from foxhunt.run import compile_cache
from foxhunt.run.fold import Progress
from foxhunt.run.sinks.telemetry import RunMetrics
from foxhunt.run.universe_run import universe_records
from foxhunt.run.universe_walk import InstrumentView, UniverseOutcome, universe_execution, universe_step
from foxhunt.run.walk import FoldDone, WalkHooks, walk_folds
from foxhunt.search.outputs import TrialReport, trial_folder
from foxhunt.search.population import TrainerPool
from foxhunt.search.study import TrialOutcome
from foxhunt.search.trial_loop import AskedTrial, BatchResults
from foxhunt.search.universe_search_life import SearchStop
from foxhunt.train import POPULATION_SHARED, DeviceData, DQNTrainer
from foxhunt.train.epoch_figures import COLLAPSED, fold_flags

# The objectives a universe's search reads from its book (`--objective`); mean_fold_sharpe has no book.
UNIVERSE_OBJECTIVES = ("stitched_sharpe", "stitched_return", "stitched_sharpe" + NO_COLLAPSE_SUFFIX)


@dataclass(frozen=True)
class Universe:
    """The loaded universe a search's trials share: its inputs, device data, instruments and folds."""

    uris: list[str]
    data: DeviceData
    views: list[InstrumentView]
    folds: list[UniverseFold]
    max_rows: int
    history: dict[str, tuple[np.ndarray, np.ndarray]]  # name → (timestamps, 1-bar forward returns)
    run: dict  # device, data_load_seconds, started: what each trial's summary.json records of the run


def universe_objective(name: str, summary: dict) -> float:
    """The `--objective` figure of a trial's universe summary: the book's stitched net Sharpe, or its net
    log return (the book of the instruments' stitched records, equal-risk weighted)."""
    net = summary["book"]["window"]["policies"][MODEL]["net"]
    if name in ("stitched_sharpe", "stitched_sharpe" + NO_COLLAPSE_SUFFIX):
        return float(summary["book"]["stitched_net_sharpe"])
    if name == "stitched_return":
        return float(net["log_return"])
    raise ValueError(f"objective {name!r}: a universe's search reads one of {', '.join(UNIVERSE_OBJECTIVES)}")


def fold_value(outcome: UniverseOutcome) -> float:
    """What the pruner is told of a trial's universe fold: the mean of its instruments' net validation
    Sharpe."""
    return float(
        np.mean([o.report.evaluation.policies[MODEL].net.sharpe for o in outcome.instruments.values()])
    )


def universe_builder(
    universe: Universe, settings: RunConfig, progress: Progress
) -> Callable[[list[DQNConfig]], DQNTrainer]:
    """A builder of the search's trainers on the universe (the instruments' execution rows concatenated); on
    CUDA each shape's compiled step is kept beside the first fxcache, as a universe run keeps it."""
    execution = universe_execution(universe.views)

    def build(configs: list[DQNConfig]) -> DQNTrainer:
        progress(
            "building a trainer for " + ", ".join(f"{n}={getattr(configs[0], n)}" for n in POPULATION_SHARED)
        )
        return compile_cache.build_with_cache(
            lambda: DQNTrainer(
                universe.data,
                configs,
                max_train_rows=universe.max_rows,
                seed=settings.seed,
                eval_cost=settings.eval.cost,
                eval_spread=settings.eval.spread,
                execution=execution,
            ),
            compile_cache.for_run(
                settings.compile_cache, universe.uris[0], configs[0], universe.data, universe.max_rows,
                len(configs), progress,
            ),
            progress,
        )  # fmt: skip

    return build


class UniverseTrials:
    """The batch objective of `trial_loop.run_trials` for a universe: each trial a universe run under
    ``trials/NNNN/`` (module docstring); its `TrialOutcome`, by trial number. `stop`: the search's boundary
    check, at each fold's start and each epoch's end (None: none)."""

    def __init__(
        self, universe: Universe, settings: RunConfig, objective: str, pool: TrainerPool,
        out_uri: str, progress: Progress, metrics: RunMetrics, stop: SearchStop | None = None,
    ) -> None:  # fmt: skip
        self.universe, self.settings, self.objective, self.pool = universe, settings, objective, pool
        self.out_uri, self.progress, self.metrics, self.stop = out_uri, progress, metrics, stop

    def __call__(self, batch: list[AskedTrial]) -> BatchResults:
        results: BatchResults = {}
        for asked in batch:
            outcome = self.trial(asked)
            if outcome is not None:
                results[asked.number] = outcome
        return results

    def trial(self, asked: AskedTrial) -> TrialOutcome | None:
        """One trial walked over the universe's folds and its records written; None when pruned."""
        dqn = override(self.settings.dqn, asked.params, what=f"trial {asked.number}")
        settings = replace(
            self.settings, dqn=dqn, diagnostics_every=self.settings.diagnostics_spacing(trial=True)
        )
        folder = storage.join(self.out_uri, trial_folder(asked.number))
        lead = f"trial {asked.number}"
        self.progress(f"{lead}: " + ", ".join(f"{k}={v}" for k, v in asked.params.items()))
        trainer = self.pool.trainer_for([dqn])
        say = lambda m: self.progress(f"{lead} {m}")  # noqa: E731 (one line's prefix)
        fold_values: dict[int, float] = {}

        def on_fold(done: FoldDone) -> tuple[int, ...]:
            outcome = done.results.get(0)
            if not isinstance(outcome, UniverseOutcome):
                return ()
            fold, last = done.fold.fold, done.fold.fold == self.universe.folds[-1].fold
            fold_values[fold] = fold_value(outcome)
            at_fold(None)  # the fold is complete: a stop from here is between the trial's folds
            return (0,) if asked.report_fold(fold, fold_values[fold], last=last) else ()

        def at_fold(fold: int | None) -> None:
            if self.stop is not None:
                self.stop.at(asked.number, fold)

        u, check = self.universe, (lambda: None) if self.stop is None else self.stop.check
        at_fold(None)
        step = universe_step(trainer, u.views, folder, settings, say, check=check)
        walked = walk_folds(trainer, u.folds, {0: folder}, settings.epochs, None, step=step,
                            hooks=WalkHooks(progress=say, check=check, at_fold=at_fold, on_fold=on_fold))  # fmt: skip
        if 0 in walked.failures:  # the trial diverged: failed on its settings (the study's `catch`)
            raise walked.failures[0]
        if asked.pruned or asked.stale:
            self._report(asked, dqn, fold_values, None, None, folder)
            return None
        result = universe_records(u.views, u.uris, u.folds, walked, [settings.seed], u.history, folder,
                                  settings, dict(u.run), say, self.metrics)  # fmt: skip
        value = universe_objective(self.objective, result.summary)
        self._report(asked, dqn, fold_values, result.summary, value, folder)
        return self._outcome(value, result.summary, walked.outcomes[0].values())

    def _outcome(self, value: float, summary: dict, outcomes) -> TrialOutcome:
        """The trial's outcome for the study: the objective, the book's per-period net Sharpe and its
        moments (for the Deflated Sharpe Ratio), the folds' training warnings."""
        net = summary["book"]["window"]["policies"][MODEL]["net"]
        reports = [o.report for u in outcomes for o in u.instruments.values()]
        flags = [fold_flags(r.epochs) for r in reports]
        collapsed = any(c for c, _ in flags)
        return TrialOutcome(
            objective=value,
            sharpe=net["sharpe_per_period"],
            n_obs=net["n_bars"],
            skew=net["skewness"],
            kurtosis=net["kurtosis"],
            warnings=tuple(dict.fromkeys(w for r in reports for w in r.warnings)),
            collapsed=collapsed,
            ignores_features=any(i for _, i in flags),
            rejected=COLLAPSED if collapsed and self.objective.endswith(NO_COLLAPSE_SUFFIX) else None,
        )

    def _report(
        self, asked: AskedTrial, dqn: DQNConfig, fold_values: dict[int, float],
        summary: dict | None, value: float | None, folder: str,
    ) -> None:  # fmt: skip
        """``trials/NNNN/trial.json``: its settings, each fold's value told the pruner and, complete, the
        book's stitched record (its gross and net figures) and best baseline."""
        window = None if summary is None else window_from_dict(summary["book"]["window"])
        report = TrialReport(
            number=asked.number,
            params=asked.params,
            dqn=asdict(dqn),
            objective=self.objective,
            value=value,
            fold_net_sharpe=fold_values,
            stitched=None if window is None else window.policies[MODEL],
            best_baseline=None if window is None else window.best_baseline,
        )
        storage.write_bytes(storage.join(folder, TRIAL_REPORT), strict_json.json_bytes(report.to_dict()))


def instruments_of(universe: Universe) -> Sequence[str]:
    """The universe's instrument names, in the order given."""
    return [v.name for v in universe.views]
