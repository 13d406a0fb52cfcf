"""The search's trainers (one per shape, P members each), and the rounds of the slot loop
(`slot_loop.run_slot_trials`): one fold for up to P trials trained as the members of one trainer side by
side (`--population P`; P = 1, the default, is trials one at a time).

A round's trials are grouped by the settings a population shares (`POPULATION_SHARED`: the step's
shapes and step count); each group trains on the population of its shape, built once and switched by
`apply_settings` after, with idle slots (a group smaller than P) padded and ignored. Each trial's fold
weighs its own earlier folds' out-of-sample evidence (the pooled decision), writes its outputs under
`trials/NNNN/` and reports its net validation Sharpe to the trial's pruner; after its last fold the trial
is scored on its stitched out-of-sample record. A member whose training diverges fails its own trial;
the others go on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from foxhunt import storage
from foxhunt.config import DQNConfig, override
from foxhunt.evaluate.run_scores import execution_rows
from foxhunt.run import compile_cache
from foxhunt.run.fold import FoldOutcome, out_of_sample_evidence
from foxhunt.run.walk import FoldDone, WalkHooks, walk_folds
from foxhunt.search.outputs import trial_folder
from foxhunt.search.slot_loop import RoundResults, SlotTrial
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


class PopulationRounds:
    """The rounds of the slot loop (`slot_loop.run_slot_trials`): one fold for up to P trials side by side on
    the population of their shape. A settings failure (an exception in `catch`) is the result of the group
    or member it stopped, no other's."""

    def __init__(self, walk, pool: TrainerPool, catch: tuple[type[Exception], ...]) -> None:
        # `walk` is the search's TrialScoring: its run, data, folds, scoring and each trial's records.
        self.walk, self.pool, self.catch = walk, pool, catch

    def __call__(self, fold_index: int, trials: list[SlotTrial]) -> RoundResults:
        dqn_of = {
            t.number: override(self.walk.run.config.dqn, t.asked.params, what=f"trial {t.number}")
            for t in trials
        }
        groups: dict[tuple, list[SlotTrial]] = {}
        for trial in trials:
            groups.setdefault(population_key(dqn_of[trial.number]), []).append(trial)
        ended: RoundResults = {}
        for group in groups.values():
            for start in range(0, len(group), self.pool.size):
                part = group[start : start + self.pool.size]
                try:
                    ended.update(self._train(fold_index, part, [dqn_of[t.number] for t in part]))
                except self.catch as exc:  # this group's verdict; the groups trained before keep theirs
                    ended.update({t.number: exc for t in part})  # a pruned member ends pruned (tell_trial)
        return ended

    def _train(self, fold_index: int, part: list[SlotTrial], dqns: list[DQNConfig]) -> RoundResults:
        """One fold for `part` on the population of their shape; the trials that ended, with their results."""
        walk, run = self.walk, self.walk.run
        trainer = self.pool.trainer_for(dqns)
        fold = walk.folds[fold_index]
        lead = self._announce(fold_index, part)
        walked = walk_folds(
            trainer,
            [fold],
            {k: storage.join(run.out_uri, trial_folder(t.number)) for k, t in enumerate(part)},
            run.config.epochs,
            walk.scoring,
            memo=walk.memo,
            diagnostics_every=run.config.diagnostics_spacing(trial=True),
            hooks=self._hooks(part, dqns, lead, last=fold_index == len(walk.folds) - 1),
            prior={k: out_of_sample_evidence(t.outcomes) for k, t in enumerate(part)},
        )
        ended: RoundResults = {part[k].number: failure for k, failure in walked.failures.items()}
        for k, outcomes in walked.outcomes.items():
            trial = part[k]
            trial.outcomes.update(outcomes)
            if trial.asked.pruned:
                ended[trial.number] = None
            elif k not in walked.failures and fold_index == len(walk.folds) - 1:
                try:
                    ended[trial.number] = walk.score(
                        trial.number, trial.asked.params, dqns[k], trial.outcomes
                    )
                except self.catch as exc:  # this member's verdict; the members scored before keep theirs
                    ended[trial.number] = exc
        return ended

    def _announce(self, fold_index: int, part: list[SlotTrial]) -> str:
        """The round's line, and the lead of its walk's lines."""
        run = self.walk.run
        if self.pool.size == 1:  # trials one at a time
            lead = f"trial {part[0].number}"
            if fold_index == 0:
                run.progress(f"{lead}: {params_text(part[0].asked.params)}")
            return lead
        lead = (
            "trials " + ", ".join(str(t.number) for t in part) if len(part) > 1 else f"trial {part[0].number}"
        )
        where = (
            f"at fold {self.walk.folds[fold_index].fold} ({len(part)} of a population of {self.pool.size})"
        )
        run.progress(f"{lead} side by side {where}" if len(part) > 1 else f"{lead} {where}")
        return lead

    def _hooks(self, part: list[SlotTrial], dqns: list[DQNConfig], lead: str, *, last: bool) -> WalkHooks:
        """The round's walk: the fold's net validation Sharpe to each trial's pruner (not asked after its
        last fold); a pruned trial stops with its report written."""
        walk, run = self.walk, self.walk.run

        def on_fold(done: FoldDone) -> set[int]:
            fold, stopped = done.fold.fold, set()
            ended = {k: o for k, o in done.results.items() if isinstance(o, FoldOutcome)}
            # Recorded (one manifest write) before any is reported: a fold the study knows is one on disk.
            sharpes = walk.folds_done(fold, {part[k].asked.number: o for k, o in ended.items()})
            for k, outcome in ended.items():
                asked = part[k].asked
                if asked.report_fold(fold, sharpes[asked.number], last=last):
                    if not asked.stale:  # a stale trial's retry, elsewhere, writes its own report
                        outcomes = {**part[k].outcomes, fold: outcome}
                        walk.write_report(asked.number, asked.params, dqns[k], outcomes, None)
                    stopped.add(k)
            return stopped

        def at_fold(fold: int | None) -> None:
            run.current_fold = fold

        return WalkHooks(lambda m: run.progress(f"{lead} {m}"), run.check, at_fold, on_fold=on_fold)


def params_text(params: dict[str, Any]) -> str:
    """A trial's settings on one line."""
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def trainer_builder(run, data, max_train_rows: int) -> Callable[[list[DQNConfig]], DQNTrainer]:
    """A builder of the search's trainers, with the run's seed and evaluation costs; on CUDA each shape's
    compiled step comes from the run's compile cache where one is kept, and goes into it where none was."""
    settings = run.config
    execution = execution_rows(settings.eval, data)  # the evaluation's: the tail selection scores with it

    def build(configs: list[DQNConfig]) -> DQNTrainer:
        shape = ", ".join(f"{n}={getattr(configs[0], n)}" for n in POPULATION_SHARED)
        size = f"a population of {len(configs)}" if len(configs) > 1 else "a trainer"
        run.progress(f"building {size} for {shape}")
        return compile_cache.build_with_cache(
            lambda: DQNTrainer(
                data,
                configs,
                max_train_rows=max_train_rows,
                seed=settings.seed,
                eval_cost=settings.eval.cost,
                eval_spread=settings.eval.spread,
                execution=execution,
            ),
            compile_cache.for_run(
                settings.compile_cache, run.summary.fxcache, configs[0], data, max_train_rows,
                len(configs), run.progress,
            ),
            run.progress,
        )  # fmt: skip

    return build
