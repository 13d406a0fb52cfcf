"""The search's trainers (one per shape, P members each), and the objective of the trial loop: a batch of
trials trained as the members of one trainer, P at a time side by side (`--population P`; P = 1, the
default, is trials one at a time).

A batch of asked trials is grouped by the settings a population shares (`POPULATION_SHARED`: the
step's shapes and step count); each group trains on the population of its shape, built once and
switched by `apply_settings` after, with idle slots (a group smaller than P) padded and ignored.
Every member is a whole walk-forward trial: the folds in order, each fold's outputs
under `trials/NNNN/`, its net validation Sharpe reported to the trial's pruner after each fold (a
pruned member goes idle), and the stitched out-of-sample record as its objective. A member whose
training diverges fails its own trial; the others go on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from foxhunt import storage
from foxhunt.config import DQNConfig, override
from foxhunt.evaluate.run_scores import execution_rows
from foxhunt.run.fold import FoldOutcome
from foxhunt.run.walk import FoldDone, WalkHooks, walk_folds
from foxhunt.search.outputs import trial_folder
from foxhunt.search.trial_loop import AskedTrial, BatchResults
from foxhunt.train import POPULATION_SHARED, DQNTrainer
from foxhunt.train.settings import padded


def population_key(dqn: DQNConfig) -> tuple:
    """The settings the members of one trainer share (shapes, step code, step count), as a dict key."""
    return tuple(getattr(dqn, name) for name in POPULATION_SHARED)


class TrainerPool:
    """One trainer of `size` members per distinct shape, built on first use and refilled by `apply_settings`
    after: a search of trials one at a time has size 1, `--population P` size P."""

    def __init__(self, build: Callable[[list[DQNConfig]], DQNTrainer], size: int = 1) -> None:
        self._build, self.size = build, size
        self.trainers: dict[tuple, DQNTrainer] = {}
        self.builds = 0

    def trainer_for(self, configs: list[DQNConfig]) -> DQNTrainer:
        """The trainer of the configs' shape, members 0..len-1 set to them (the rest padded, idle)."""
        members = padded(configs, self.size)
        key = population_key(configs[0])
        trainer = self.trainers.get(key)
        if trainer is None:
            trainer = self.trainers[key] = self._build(members)
            self.builds += 1
        else:
            trainer.apply_settings(members)
        return trainer

    @property
    def graph_captures(self) -> int:
        """CUDA graphs captured by all the trainers (one per shape on CUDA, none on CPU)."""
        return sum(t.graph_captures for t in self.trainers.values())

    @property
    def compiles(self) -> int:
        """torch.compile wrappings of all the trainers' steps (one per shape on CUDA with compile)."""
        return sum(t.compiles for t in self.trainers.values())


class PopulationObjective:
    """A batch of trials on the populations of their shapes; the results by trial number. A settings
    failure (an exception in `catch`) is the result of the group or member it stopped, no other's."""

    def __init__(self, walk, pool: TrainerPool, catch: tuple[type[Exception], ...]) -> None:
        # `walk` is the search's TrialScoring: its run, data, folds, scoring and each trial's records.
        self.walk, self.pool, self.catch = walk, pool, catch

    def __call__(self, batch: list[AskedTrial]) -> BatchResults:
        dqn_of = {
            asked.number: override(self.walk.run.config.dqn, asked.params, what=f"trial {asked.number}")
            for asked in batch
        }
        groups: dict[tuple, list[AskedTrial]] = {}
        for asked in batch:
            groups.setdefault(population_key(dqn_of[asked.number]), []).append(asked)
        results: BatchResults = {}
        for group in groups.values():
            for start in range(0, len(group), self.pool.size):
                part = group[start : start + self.pool.size]
                try:
                    results.update(self._train(part, [dqn_of[a.number] for a in part]))
                except self.catch as exc:  # this group's verdict; the groups trained before keep theirs
                    results.update({a.number: exc for a in part})
        return results

    def _train(self, group: list[AskedTrial], dqns: list[DQNConfig]) -> BatchResults:
        """One population's walk-forward: the folds in lockstep for every member still training."""
        walk, run = self.walk, self.walk.run
        trainer = self.pool.trainer_for(dqns)
        if self.pool.size == 1:  # trials one at a time
            lead = f"trial {group[0].number}"
            run.progress(f"{lead}: {params_text(group[0].params)}")
        else:
            lead = "trials " + ", ".join(str(a.number) for a in group)
            run.progress(f"{lead} side by side ({len(group)} of a population of {self.pool.size})")
        folders = {k: storage.join(run.out_uri, trial_folder(a.number)) for k, a in enumerate(group)}
        pruned: set[int] = set()
        walked = walk_folds(
            trainer,
            walk.folds,
            folders,
            run.config.epochs,
            walk.scoring,
            memo=walk.memo,
            diagnostics_every=run.config.diagnostics_every,
            hooks=self._hooks(group, dqns, lead, pruned),
        )
        results: BatchResults = {group[k].number: failure for k, failure in walked.failures.items()}
        for k, outcomes in walked.outcomes.items():
            if k not in pruned and k not in walked.failures:
                asked = group[k]
                try:
                    results[asked.number] = walk.score(asked.number, asked.params, dqns[k], outcomes)
                except self.catch as exc:  # this member's verdict; the members scored before keep theirs
                    results[asked.number] = exc
        return results

    def _hooks(
        self, group: list[AskedTrial], dqns: list[DQNConfig], lead: str, pruned: set[int]
    ) -> WalkHooks:
        """A batch's walk: each fold's net validation Sharpe to its trial's pruner (not asked after the
        last fold); a pruned member stops walking (added to `pruned`) with its report written."""
        walk, run = self.walk, self.walk.run

        def on_fold(done: FoldDone) -> set[int]:
            fold = done.fold.fold
            last = fold == walk.folds[-1].fold
            for k, outcome in done.results.items():
                asked = group[k]
                if isinstance(outcome, FoldOutcome) and asked.report_fold(
                    fold, walk.fold_done(asked.number, fold, outcome), last=last
                ):
                    if not asked.stale:  # a stale trial's retry, elsewhere, writes its own report
                        walk.write_report(asked.number, asked.params, dqns[k], dict(done.outcomes[k]), None)
                    pruned.add(k)
            return pruned

        def at_fold(fold: int | None) -> None:
            run.current_fold = fold

        return WalkHooks(lambda m: run.progress(f"{lead} {m}"), run.check, at_fold, on_fold=on_fold)


def params_text(params: dict[str, Any]) -> str:
    """A trial's settings on one line."""
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def trainer_builder(run, data, max_train_rows: int) -> Callable[[list[DQNConfig]], DQNTrainer]:
    """A builder of the search's trainers, with the run's seed and evaluation costs."""
    settings = run.config
    execution = execution_rows(settings.eval, data)  # the evaluation's: the tail selection scores with it

    def build(configs: list[DQNConfig]) -> DQNTrainer:
        shape = ", ".join(f"{n}={getattr(configs[0], n)}" for n in POPULATION_SHARED)
        size = f"a population of {len(configs)}" if len(configs) > 1 else "a trainer"
        run.progress(f"building {size} for {shape}")
        return DQNTrainer(
            data,
            configs,
            max_train_rows=max_train_rows,
            seed=settings.seed,
            eval_cost=settings.eval.cost,
            eval_spread=settings.eval.spread,
            execution=execution,
        )

    return build
