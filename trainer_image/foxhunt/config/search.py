"""What a search is besides its trials: the space file, the study's storage and name, the objective, the
worker; the default space and the population's limit.

Light on purpose (standard library only): the CLI parser reads `OBJECTIVES` for its choices, a run
checks these options before any work, and the Argo client (foxhunt_workflows) reads `MAX_POPULATION`
and `DEFAULT_SEARCH_SPACE` without the training packages.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from foxhunt.errors import UsageError

# What a trial maximises, by `--objective` name; every one is read from the trial's evaluation at the
# run's evaluation costs (net of costs, out of sample).
OBJECTIVES: dict[str, str] = {
    "stitched_sharpe": "annualised net Sharpe of the stitched out-of-sample record",
    "mean_fold_sharpe": "mean of the folds' annualised net validation Sharpe",
    "stitched_return": "net log return of the stitched out-of-sample record",
    "stitched_sharpe_no_collapse": "the stitched net Sharpe; a trial whose policy collapsed to one action in "
    "any fold fails",
}
NO_COLLAPSE_SUFFIX = "_no_collapse"  # an objective so named fails the trials whose policy collapsed
DEFAULT_OBJECTIVE = "stitched_sharpe"
# How a trial is stopped early, by `--pruner` name (the study's pruner; `trials.study.trial_pruner`).
MEDIAN_STARTUP_TRIALS = 5  # the median rule prunes nothing before this many trials have completed
PRUNERS: dict[str, str] = {
    "median": "stop a trial after a fold whose net Sharpe is below the median of earlier trials at that "
    f"fold, once {MEDIAN_STARTUP_TRIALS} trials have completed",
    "none": "every trial runs every fold",
}
DEFAULT_PRUNER = "median"
WORKER_ENV = "FOXHUNT_TRIAL_WORKER"
# Trials side by side: past 16 the members' collection activations (16 × 1M rows × hidden) crowd a GPU.
MAX_POPULATION = 16
# Optuna study names are free text; keep derived ones to what a label or a file name can hold.
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")


@dataclass(frozen=True)
class SearchOptions:
    """How `--trials N` searches: where the space comes from, where the study lives, what it maximises."""

    search_space: str | None = None  # URI of a YAML or JSON space; None: the default space
    study_storage: str | None = None  # SQLAlchemy URL (PostgreSQL); None: SQLite in --out
    study_name: str | None = None  # None: derived from the run (see `study_name`)
    objective: str = DEFAULT_OBJECTIVE
    worker: int = 0  # this process's index among the workers of one study ($FOXHUNT_TRIAL_WORKER)
    population: int = 1  # trials trained side by side as one batched model; 1: one at a time
    pruner: str = DEFAULT_PRUNER  # how trials are stopped early (a name of PRUNERS)

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise UsageError(f"--objective {self.objective!r}: expected one of {', '.join(OBJECTIVES)}")
        if self.pruner not in PRUNERS:
            raise UsageError(f"--pruner {self.pruner!r}: expected one of {', '.join(PRUNERS)}")
        if isinstance(self.population, bool) or not isinstance(self.population, int):
            raise UsageError(f"--population {self.population!r}: expected a whole number of trials")
        if not 1 <= self.population <= MAX_POPULATION:
            raise UsageError(
                f"--population {self.population}: expected 1 to {MAX_POPULATION} trials side by side"
            )

    @property
    def embedded(self) -> bool:
        """True when the study is the SQLite file in `--out`, which only this run uses."""
        return not self.study_storage


def trial_worker(environ: Mapping[str, str] = os.environ) -> int:
    """This worker's index from $FOXHUNT_TRIAL_WORKER (0 when unset); UsageError when it is not one."""
    raw = environ.get(WORKER_ENV, "").strip()
    if not raw:
        return 0
    if not raw.isdigit():
        raise UsageError(f"${WORKER_ENV}: expected a worker index 0, 1, 2, ..., got {raw!r}")
    return int(raw)


def search_options(
    trials: int,
    *,
    search_space: str | None,
    study_storage: str | None,
    study_name: str | None,
    objective: str,
    population: int = 1,
    pruner: str = DEFAULT_PRUNER,
    environ: Mapping[str, str] = os.environ,
) -> SearchOptions | None:
    """The search of a run from its flags: None with `--trials 0`, where the search flags are refused."""
    if trials == 0:
        given = [
            flag
            for flag, value in (
                ("--search-space", search_space),
                ("--study-storage", study_storage),
                ("--study-name", study_name),
                ("--population", population != 1),
                ("--pruner", pruner != DEFAULT_PRUNER),
            )
            if value
        ]
        if given:
            raise UsageError(f"{', '.join(given)}: only for a search; add --trials N (N > 0)")
        return None
    return SearchOptions(
        search_space=search_space or None,
        study_storage=study_storage or None,
        study_name=study_name or None,
        objective=objective,
        worker=trial_worker(environ),
        population=population,
        pruner=pruner,
    )


def study_name(options: SearchOptions, out_uri: str, explicit_run_id: str | None) -> str:
    """The study's name: `--study-name`; else for the embedded study the `--out` folder's name; else the
    run id when one was given. A shared storage with neither is refused: a generated name would start
    a new study on every restart."""
    if options.study_name:
        return options.study_name
    if options.embedded:
        tail = _UNSAFE.sub("-", out_uri.rstrip("/").rpartition("/")[2]).strip("-.")
        return tail or "foxhunt"
    if explicit_run_id:
        return explicit_run_id
    raise UsageError(
        "--study-storage: name the shared study with --study-name (or give the run an id with --run-id); "
        "a generated name would start a new study on every restart"
    )


@dataclass(frozen=True)
class Distribution:
    """One setting's distribution: float or int over [low, high] (log-uniform or stepped), or choices."""

    kind: str
    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    step: float | int | None = None
    choices: tuple = ()

    def to_dict(self) -> dict[str, Any]:
        """The file form of this distribution (what `parse_search_space` reads back)."""
        if self.kind == "categorical":
            return {"type": "categorical", "choices": list(self.choices)}
        out: dict[str, Any] = {"type": self.kind, "low": self.low, "high": self.high, "log": self.log}
        if self.step is not None:
            out["step"] = self.step
        return out


# Shape-free settings only, so that one captured and compiled step serves every trial.
# Add `batch_size` or `hidden` in a file to search shapes (one build and capture per shape).
DEFAULT_SEARCH_SPACE: dict[str, Distribution] = {
    "lr": Distribution("float", 1e-5, 1e-3, log=True),
    "gamma": Distribution("float", 0.8, 0.995),
    "tau": Distribution("float", 1e-3, 0.1, log=True),
    "eps_decay_fraction": Distribution("float", 0.2, 0.9),
    "huber_delta": Distribution("float", 0.1, 10.0, log=True),
    "weight_decay": Distribution("float", 1e-7, 1e-3, log=True),
}
