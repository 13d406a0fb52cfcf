"""`--population P`: a search's trials trained P at a time, side by side, as one batched model.

A batch of asked trials is grouped by the settings a population shares (`POPULATION_SHARED`: the
step's shapes and step count); each group trains on the population of its shape, built once and
switched by `apply_settings` after, with idle slots (a group smaller than P) padded and ignored.
Every member is a trial as `WalkForwardObjective` runs one: the folds in order, each fold's outputs
under `trials/NNNN/`, its net validation Sharpe reported to the trial's pruner after each fold (a
pruned member goes idle), and the stitched out-of-sample record as its objective. A member whose
training diverges fails its own trial; the others go on.
"""

from __future__ import annotations

from collections.abc import Callable

from foxhunt import storage
from foxhunt.config import DQNConfig, override
from foxhunt.run.fold_loop import FoldOutcome, train_population_fold
from foxhunt.search.batches import AskedTrial, BatchResults
from foxhunt.search.outputs import trial_folder
from foxhunt.train import POPULATION_SHARED, PopulationTrainer
from foxhunt.train.population import padded


def population_key(dqn: DQNConfig) -> tuple:
    """The settings the members of one population share, as a dict key."""
    return tuple(getattr(dqn, name) for name in POPULATION_SHARED)


class PopulationPool:
    """One population of `size` members per distinct shape, built on first use and refilled after."""

    def __init__(self, build: Callable[[list[DQNConfig]], PopulationTrainer], size: int) -> None:
        self._build, self.size = build, size
        self.populations: dict[tuple, PopulationTrainer] = {}
        self.builds = 0

    def population_for(self, configs: list[DQNConfig]) -> PopulationTrainer:
        """The population of the configs' shape, members 0..len-1 set to them and active, the rest idle."""
        members = padded(configs, self.size)
        key = population_key(configs[0])
        population = self.populations.get(key)
        if population is None:
            population = self.populations[key] = self._build(members)
            self.builds += 1
        else:
            population.apply_settings(members)
        for i, member in enumerate(population.members):
            member.active = i < len(configs)
        return population

    @property
    def graph_captures(self) -> int:
        """CUDA graphs captured by all the populations (one per shape on CUDA, none on CPU)."""
        return sum(p.graph_captures for p in self.populations.values())

    @property
    def compiles(self) -> int:
        """torch.compile wrappings of all the populations' steps (one per shape on CUDA with compile)."""
        return sum(p.compiles for p in self.populations.values())


class PopulationObjective:
    """A batch of trials on the populations of their shapes; the results by trial number."""

    def __init__(self, walk, pool: PopulationPool) -> None:
        # `walk` is the search's WalkForwardObjective: its run, data, folds, scoring and reports.
        self.walk, self.pool = walk, pool

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
                results.update(self._train(part, [dqn_of[a.number] for a in part]))
        return results

    def _train(self, group: list[AskedTrial], dqns: list[DQNConfig]) -> BatchResults:
        """One population's walk-forward: the folds in lockstep for every member still training."""
        walk, run = self.walk, self.walk.run
        population = self.pool.population_for(dqns)
        numbers = ", ".join(str(a.number) for a in group)
        run.progress(f"trials {numbers} side by side ({len(group)} of a population of {self.pool.size})")
        outs = {k: storage.join(run.out_uri, trial_folder(a.number)) for k, a in enumerate(group)}
        outcomes: dict[int, dict[int, FoldOutcome]] = {k: {} for k in outs}
        results: BatchResults = {}
        for fold_range in walk.folds:
            live = {k: out for k, out in outs.items() if population.members[k].active}
            if not live:
                break
            run.check()
            run.current_fold = fold = fold_range.fold
            fold_outcomes = train_population_fold(
                population,
                fold_range,
                run.config.epochs,
                live,
                lambda message: run.progress(f"trials {numbers} {message}"),
                run.check,
                scoring=walk.scoring,
                memo=walk.memo,
            )
            run.current_fold = None
            for k, outcome in fold_outcomes.items():
                asked = group[k]
                if not isinstance(outcome, FoldOutcome):  # its guard stopped it: the settings failed
                    results[asked.number] = outcome
                    population.members[k].active = False
                    continue
                outcomes[k][fold] = outcome
                if asked.report_fold(fold, walk.fold_done(asked.number, fold, outcome)):
                    walk.write_report(asked.number, asked.params, dqns[k], outcomes[k], None)
                    population.members[k].active = False
        for k, asked in enumerate(group):
            if population.members[k].active:
                results[asked.number] = walk.score(asked.number, asked.params, dqns[k], outcomes[k])
        return results


def population_builder(run, data, max_train_rows: int) -> Callable[[list[DQNConfig]], PopulationTrainer]:
    """A builder of the search's populations, with the run's seed and evaluation costs (as its trainers)."""
    settings = run.config

    def build(configs: list[DQNConfig]) -> PopulationTrainer:
        shape = ", ".join(f"{n}={getattr(configs[0], n)}" for n in POPULATION_SHARED)
        run.progress(f"building a population of {len(configs)} for {shape}")
        return PopulationTrainer(
            data,
            configs,
            max_train_rows=max_train_rows,
            seed=settings.seed,
            eval_cost=settings.eval.cost,
            eval_spread=settings.eval.spread,
        )

    return build
