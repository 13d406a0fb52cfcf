"""What a study leaves in `--out`: the study table, the best settings as a `--hyperopt-params` file,
and a summary with the Deflated Sharpe Ratio of the best trial.

Files: `trials.csv` and `trials.json` (one row per trial that ran), `best_params.json`
(`{"dqn": {...}}`: the full resolved DQN settings of the best trial, which `foxhunt train
--hyperopt-params` takes as it is), `study.json` (counts, best trial, selection check).
The SQLite study file itself is synced by `study_storage.sync_study_file`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from foxhunt import out_names, storage, strict_json
from foxhunt.config import DQNConfig, override
from foxhunt.evaluate.evaluation import Evaluation
from foxhunt.search.selection_check import SelectionCheck, selection_check
from foxhunt.search.study import ERROR_ATTR, WORKER_ATTR, best_trial, folds_run, is_finished, is_surplus

TABLE_CSV = out_names.TRIALS_CSV
TABLE_JSON = out_names.TRIALS_JSON
BEST_PARAMS = out_names.BEST_PARAMS
SUMMARY = out_names.STUDY_SUMMARY
TRIALS_DIR = out_names.TRIALS_DIR
TABLE_COLUMNS = (
    "number",
    "state",
    "objective",
    "folds_run",
    "duration_seconds",
    "worker",
    "retry_of",
    "retried_as",
    "error",
    "collapsed",
    "ignores_features",
    "warnings",
    "folder",
)


@dataclass(frozen=True)
class TrialRow:
    """One trial of the study table."""

    number: int
    state: str
    objective: float | None
    folds_run: int
    duration_seconds: float | None
    worker: int | None
    retry_of: int | None  # the trial whose settings this one runs again after an interruption
    retried_as: int | None  # the trial that ran this one's settings again
    error: str | None
    collapsed: bool | None  # the policy collapsed to one action in some fold (None: not known, e.g. pruned)
    ignores_features: bool | None  # the policy ignored the features in some fold
    warnings: str | None  # the folds' diagnostics, joined by "; "
    folder: str  # where the trial's fold reports are, relative to `--out`
    params: dict[str, Any] = field(default_factory=dict)


trial_folder = out_names.trial_folder


def _duration(trial: FrozenTrial) -> float | None:
    if trial.datetime_start is None or trial.datetime_complete is None:
        return None
    return (trial.datetime_complete - trial.datetime_start).total_seconds()


def study_table(study: optuna.Study, trials: Sequence[FrozenTrial] | None = None) -> list[TrialRow]:
    """Every trial that ran (surplus and still-waiting trials left out), by number; of `trials` where given
    (the study's trials as the caller read them), else of the study now."""
    trials = study.get_trials(deepcopy=False) if trials is None else trials
    retried_as = {}
    for t in trials:
        history = t.system_attrs.get("retry_history") or []
        if history:
            retried_as[history[-1]] = t.number
    return [
        TrialRow(
            number=t.number,
            state=t.state.name,
            objective=t.value if t.state == TrialState.COMPLETE else None,
            folds_run=folds_run(t),
            duration_seconds=_duration(t),
            worker=t.user_attrs.get(WORKER_ATTR),
            retry_of=(t.system_attrs.get("retry_history") or [None])[-1],
            retried_as=retried_as.get(t.number),
            error=t.user_attrs.get(ERROR_ATTR),
            collapsed=t.user_attrs.get("collapsed"),
            ignores_features=t.user_attrs.get("ignores_features"),
            warnings="; ".join(t.user_attrs["warnings"]) if t.user_attrs.get("warnings") else None,
            folder=trial_folder(t.number),
            params=dict(t.params),
        )
        for t in trials
        if not is_surplus(t) and t.state != TrialState.WAITING
    ]


def table_csv(rows: list[TrialRow]) -> str:
    """The study table as CSV: the fixed columns, then one column per searched setting."""
    names = sorted({name for row in rows for name in row.params})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*TABLE_COLUMNS, *names])
    for row in rows:
        fixed = [getattr(row, c) for c in TABLE_COLUMNS]
        writer.writerow(["" if v is None else v for v in fixed] + [row.params.get(n, "") for n in names])
    return out.getvalue()


def best_settings(trial: FrozenTrial, base: DQNConfig) -> dict[str, dict[str, Any]]:
    """The `--hyperopt-params` form of a trial: `base` with the trial's settings, every DQN field."""
    return {"dqn": asdict(override(base, trial.params, what=f"trial {trial.number}"))}


@dataclass
class TrialReport:
    """`trials/NNNN/trial.json`: a trial's settings, its folds' net Sharpe and, once complete, its record."""

    number: int
    params: dict[str, Any]  # the searched settings
    dqn: dict[str, Any]  # every DQN setting the trial trained with
    objective: str  # the --objective name
    value: float | None  # its value (None for a pruned trial)
    fold_net_sharpe: dict[int, float]  # by fold: the net validation Sharpe reported to the pruner
    stitched: Evaluation | None = None  # the stitched out-of-sample record (None: pruned)
    best_baseline: str | None = None

    @property
    def state(self) -> str:
        return "pruned" if self.stitched is None else "complete"

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of `trial.json`."""
        data: dict[str, Any] = {
            "number": self.number,
            "state": self.state,
            "params": self.params,
            "dqn": self.dqn,
            "objective": {"name": self.objective, "value": self.value},
            "folds_run": len(self.fold_net_sharpe),
            "fold_net_sharpe": {str(f): v for f, v in self.fold_net_sharpe.items()},
        }
        if self.stitched is not None:
            data["stitched"] = {"net": asdict(self.stitched.net), "gross": asdict(self.stitched.gross)}
            data["best_baseline"] = self.best_baseline
        return data


@dataclass(frozen=True)
class BestTrial:
    """The best finished trial: its number, objective, settings, folds run and its training warnings."""

    number: int
    objective: float | None
    params: dict[str, Any]
    folds_run: int
    collapsed: bool | None = None  # its policy collapsed to one action in some fold (None: not known)
    ignores_features: bool | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass
class StudySummary:
    """`study.json`: counts by state, the best trial, the selection check, what this process built."""

    study_name: str
    direction: str
    planned_trials: int
    finished_trials: int
    states: dict[str, int]
    best: BestTrial | None
    selection: SelectionCheck
    warned_trials: dict[str, list[int]] = field(default_factory=dict)  # trials by warning
    trainers: dict[str, int] | None = None  # builds, graph captures and compiles of this process
    holdout: dict[str, Any] | None = None  # the chosen settings on the untouched final period
    # What trades.parquet, daily.csv and monthly.csv hold: the held-out period's record, or the best trial's
    headline_tables: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of `study.json`."""
        data = asdict(self)
        data["selection"] = self.selection.to_dict()
        for optional in ("trainers", "holdout", "headline_tables"):
            if data[optional] is None:
                del data[optional]
        return data


def study_summary(
    study: optuna.Study,
    planned_trials: int,
    trainers: dict[str, int] | None = None,
    trials: Sequence[FrozenTrial] | None = None,
) -> StudySummary:
    """Counts by state, the best trial and the selection check, as written to `study.json`; of `trials`
    where given (the study's trials as the caller read them), else of the study now."""
    everyone = study.get_trials(deepcopy=False) if trials is None else trials
    trials = [t for t in everyone if not is_surplus(t)]
    best = best_trial(study, everyone)
    return StudySummary(
        study_name=study.study_name,
        direction=study.direction.name.lower(),
        planned_trials=planned_trials,
        finished_trials=sum(map(is_finished, trials)),
        states={
            s.name: sum(t.state == s for t in trials) for s in TrialState if any(t.state == s for t in trials)
        },
        best=None
        if best is None
        else BestTrial(
            best.number,
            best.value,
            dict(best.params),
            folds_run(best),
            collapsed=best.user_attrs.get("collapsed"),
            ignores_features=best.user_attrs.get("ignores_features"),
            warnings=list(best.user_attrs.get("warnings", [])),
        ),
        warned_trials={
            "collapsed": [t.number for t in trials if t.user_attrs.get("collapsed")],
            "ignores_features": [t.number for t in trials if t.user_attrs.get("ignores_features")],
        },
        selection=selection_check(study, everyone),
        trainers=trainers,
    )


def write_study_outputs(
    study: optuna.Study,
    out_uri: str,
    *,
    planned_trials: int,
    base: DQNConfig | None = None,
    trainers: dict[str, int] | None = None,
    trials: Sequence[FrozenTrial] | None = None,
) -> StudySummary:
    """Write the study table, the best settings (once a trial has completed) and the summary; returns it.

    `trainers`: what this process built (trainers, captures, compiles), recorded in the summary. `trials`:
    the study's trials as the caller read them (default: read now).
    """
    # One read of the trials for every file: they describe the same moment of a study that other workers
    # may be adding to, and a search saves after each round that ends a trial (7 reads each before).
    trials = study.get_trials(deepcopy=False) if trials is None else trials
    rows = study_table(study, trials)
    storage.write_bytes(storage.join(out_uri, TABLE_CSV), table_csv(rows).encode())
    storage.write_bytes(storage.join(out_uri, TABLE_JSON), strict_json.json_bytes([asdict(r) for r in rows]))
    best = best_trial(study, trials)
    if best is not None:
        storage.write_bytes(
            storage.join(out_uri, BEST_PARAMS),
            strict_json.json_bytes(best_settings(best, base or DQNConfig())),
        )
    summary = study_summary(study, planned_trials, trainers, trials)
    storage.write_bytes(storage.join(out_uri, SUMMARY), strict_json.json_bytes(summary.to_dict()))
    return summary


def _warning(row: dict[str, Any]) -> str:
    # The one word that matters most first: a collapsed policy is stuck on one action whatever it ignores.
    return "collapsed" if row.get("collapsed") else "no-inputs" if row.get("ignores_features") else ""


def study_lines(out_uri: str, pictures: bool = True) -> list[str]:
    """The study table as text (number, state, objective, folds, seconds), then where the outputs are
    (trials.png where the search drew `pictures`)."""
    rows = json.loads(storage.read_bytes(storage.join(out_uri, TABLE_JSON)))
    head = f"{'trial':>5} {'state':<9} {'objective':>10} {'folds':>5} {'seconds':>8} {'warning':<9} settings"
    lines = [head, "-" * len(head)]
    for row in rows:
        objective = "" if row["objective"] is None else f"{row['objective']:.4g}"
        seconds = "" if row["duration_seconds"] is None else f"{row['duration_seconds']:.1f}"
        settings = ", ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row["params"].items()
        )
        lines.append(
            f"{row['number']:>5} {row['state'].lower():<9} {objective:>10} {row['folds_run']:>5} "
            f"{seconds:>8} {_warning(row):<9} {settings}"
        )
    picture = f"{out_names.TRIALS_PICTURE}, " if pictures else ""
    files = f"{TABLE_CSV}, {TABLE_JSON}, {BEST_PARAMS}, {SUMMARY}, {picture}manifest.json, summary.json"
    try:
        headline = json.loads(storage.read_bytes(storage.join(out_uri, SUMMARY))).get("headline_tables")
    except FileNotFoundError:
        headline = None
    if headline:
        files += f", {', '.join(headline['files'])} ({headline['record']})"
    lines.append(f"outputs: {out_uri} ({files}, {TRIALS_DIR}/NNNN/fold_F/, {TRIALS_DIR}/NNNN/trial.json)")
    return lines
