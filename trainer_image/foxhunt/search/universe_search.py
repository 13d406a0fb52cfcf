"""A search over a universe: `foxhunt train --fxcache A --fxcache B ... --trials N`, whose objective is the
book's.

The universe is read, checked and its folds planned as a universe run does (`run/universe_run.py`), and
put on the device once for the whole study. Then the batch trial loop (`trial_loop.run_trials`) asks the
trials of an embedded Optuna study (SQLite in `--out`) one at a time, each trained as a whole universe
run with its settings (`universe_trials.UniverseTrials`: its records under ``trials/NNNN/``, its objective
the book's stitched net Sharpe by default). The study's files are the single-instrument search's
(`outputs.write_study_outputs`: ``trials.csv``, ``trials.json``, ``best_params.json``, ``study.json`` with
the best trial and the selection check, ``trials.png``), and ``study.json``'s ``universe`` says what the
objective read, the instruments, and where the best trial's universe records are (its summary, book and
instruments' folders).

Refused before any work, one line each (`check_universe_search`): `--population P` > 1 (a universe's
trials train one at a time), `--study-storage` and `$FOXHUNT_TRIAL_WORKER` (one worker, the study in
`--out`), `--objective mean_fold_sharpe` (a fold has no book), `--holdout-days`.

A stop signal (SIGTERM, SIGINT) ends the search as it ends the single-instrument search: the trial under
way stops at its next boundary and is queued for a retry, the study's files and ``summary.json``
("interrupted") are written, exit 128 + the signal; the same command resumes the study, and an `--out`
lock taken over by another run fails it (`universe_search_life`). An `--out` holding a finished search, or
anything else, is refused, and `--overwrite` starts the study over.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import optuna
from optuna.trial import FrozenTrial, TrialState

from foxhunt import out_names, storage, strict_json
from foxhunt.config import RunConfig
from foxhunt.config.search import WORKER_ENV, SearchOptions
from foxhunt.data.universe_inputs import instrument_name, read_universe
from foxhunt.errors import RunFailure, UsageError
from foxhunt.run import compile_cache
from foxhunt.run.fold import Progress
from foxhunt.run.lifecycle import holding_out
from foxhunt.run.sinks.pushgateway import resolve_pushgateway, resolve_run_id
from foxhunt.run.sinks.telemetry import RunMetrics
from foxhunt.run.universe_book import BOOK_FILE
from foxhunt.run.universe_holdout import plan_universe
from foxhunt.run.universe_resume import universe_identity
from foxhunt.run.universe_run import SUMMARY
from foxhunt.run.universe_walk import INSTRUMENTS_FOLDER, instrument_views
from foxhunt.search.driver import SETTINGS_FAILURES, plan_search
from foxhunt.search.outputs import StudySummary, study_lines, trial_folder, write_study_outputs
from foxhunt.search.population import TrainerPool
from foxhunt.search.storage import STUDY_FILE, study_folder, sync_study_file
from foxhunt.search.study import open_study, record_selection, study_progress, trial_pruner
from foxhunt.search.trial_loop import run_trials
from foxhunt.search.universe_search_life import SearchLedger, SearchStop, resumable, search_ending
from foxhunt.search.universe_trials import (
    UNIVERSE_OBJECTIVES,
    Universe,
    UniverseTrials,
    instruments_of,
    universe_builder,
)
from foxhunt.train import resolve_device
from foxhunt.train.device_data import universe_to_device
from foxhunt.train.memory_estimate import check_device_memory

OBJECTIVE_READS = "the book of the trial's per-instrument stitched records, equal-risk weighted"


def check_universe_search(settings: RunConfig, options: SearchOptions) -> None:
    """What a universe's search does not do: UsageError (exit 2) naming the flag, before any work."""
    refusals = (
        (options.population > 1, "--population: a universe's trials train one at a time; leave it out"),
        (
            options.study_storage is not None,
            "--study-storage: a universe's study is the SQLite file in --out",
        ),
        (options.worker > 0, f"${WORKER_ENV}: a universe's study has one worker; unset it"),
        (
            options.objective not in UNIVERSE_OBJECTIVES,
            f"--objective {options.objective}: a universe's search reads the book's stitched record; "
            f"expected one of {', '.join(UNIVERSE_OBJECTIVES)}",
        ),
        (settings.folds.holdout_days > 0, "--holdout-days: not supported with --trials over a universe yet"),
    )
    for refused, line in refusals:
        if refused:
            raise UsageError(f"{line} (several --fxcache with --trials)")
    compile_cache.check_setting(settings.compile_cache)


def search_universe(
    fxcache_uris: Sequence[str],
    out_uri: str,
    settings: RunConfig,
    options: SearchOptions,
    progress: Progress = print,
) -> StudySummary:
    """The study over the universe of `fxcache_uris` (module docstring); `study.json`'s content. Bad input
    and unsupported flags are refused before anything is written."""
    check_universe_search(settings, options)
    plan = plan_search(options, out_uri, settings)
    try:
        device = resolve_device(settings.device)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    ledger = SearchLedger(out_uri, plan.identity, resumable(out_uri, settings.overwrite), settings.trials)
    names = (out_names.STUDY_SUMMARY, STUDY_FILE, SUMMARY, out_names.MANIFEST)
    held = [n for n in names if storage.exists(storage.join(out_uri, n))]
    if held and ledger.recorded is None and not settings.overwrite:  # an unfinished search resumes
        raise UsageError(f"{out_uri}: holds a run already ({held[0]}); give another --out or --overwrite")
    run_id = resolve_run_id(settings.run_id)
    metrics = RunMetrics(
        run_id, pushgateway=resolve_pushgateway(settings.pushgateway),
        model=settings.model, device=str(device), metrics_port=settings.metrics_port,
    )  # fmt: skip
    try:
        # No second run or search writes into this --out meanwhile; the trials check the lock is still ours.
        with holding_out(out_uri, run_id, metrics) as heartbeat:
            universe = load_universe(fxcache_uris, settings, device, progress, ledger.admit)
            metrics.run_started()
            ledger.start()
            with search_ending(ledger, heartbeat, metrics) as stop:
                return _study(universe, settings, options, plan, progress, metrics, ledger, stop)
    finally:
        metrics.close()


def load_universe(
    fxcache_uris: Sequence[str], settings: RunConfig, device, progress: Progress,
    admit: Callable[[dict], None] = lambda identity: None,
) -> Universe:  # fmt: skip
    """Read and check the fxcaches, plan the folds, check the device memory, then load once. `admit` is
    handed the universe's identity (`universe_identity`) before the load: a resumed search refuses there."""
    t0 = time.perf_counter()
    caches = read_universe(fxcache_uris)
    names = [instrument_name(c.uri, c.metadata) for c in caches]
    admit(universe_identity(caches, names, device.type, settings))
    stamps, returns = [c.timestamp for c in caches], [c.targets[:, 0] for c in caches]
    folds, _ = plan_universe(stamps, returns, names, settings.folds, progress)  # no held-out period here
    max_rows = max(sum(r.train_rows for r in f.ranges if r is not None) for f in folds)
    total = sum(len(c) for c in caches)
    check_device_memory(device, total, caches[0].features.shape[1], max_rows, settings.dqn)
    data = universe_to_device(names, [(c.features, c.targets, c.timestamp) for c in caches], device)
    loaded = time.perf_counter() - t0
    progress(
        f"loaded {len(caches)} instruments, {total:,} rows onto {device} in {loaded:.2f}s; {len(folds)} folds"
    )
    return Universe(
        uris=list(fxcache_uris),
        data=data,
        views=instrument_views(data, settings),
        folds=list(folds),
        max_rows=max_rows,
        history={n: (c.timestamp, c.targets[:, 0]) for n, c in zip(names, caches, strict=True)},
        run={"device": str(device), "data_load_seconds": loaded, "started": t0},
    )


def _study(
    universe: Universe, settings: RunConfig, options: SearchOptions, plan, progress: Progress,
    metrics: RunMetrics, ledger: SearchLedger, stop: SearchStop,
) -> StudySummary:  # fmt: skip
    """The study's trials (`stop` checked at their boundaries), its files after each (the finished trials
    told to `ledger`), the closing line."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # the run's own lines say how each trial ended
    pool = TrainerPool(universe_builder(universe, settings, progress), 1)
    out_uri = ledger.out_uri
    # --overwrite: a universe's search starts over (its old study removed); else a resumed search continues it
    with study_folder(out_uri, start_over=settings.overwrite) as workspace:
        study = open_study(
            None, workspace.path, plan.study_name, settings.seed, pruner=trial_pruner(options.pruner),
            private=workspace.private,
        )  # fmt: skip
        synced = workspace.synced
        ledger.finished = study_progress(study).finished
        progress(
            f"study {plan.study_name} over {', '.join(instruments_of(universe))}: {settings.trials} trials, "
            f"objective the book's {options.objective}, searching {', '.join(plan.space)}"
            + (f"; resumed with {ledger.finished} finished" if ledger.recorded is not None else "")
        )

        def save() -> StudySummary:
            summary = save_universe_study(study, out_uri, settings, options, universe, pool, synced)
            ledger.finished = summary.finished_trials
            return summary

        def after_trial(study: optuna.Study, trial: FrozenTrial) -> None:
            save()
            value = f" objective {trial.value:.4g}" if trial.state == TrialState.COMPLETE else ""
            progress(f"trial {trial.number} {trial.state.name.lower()}{value}")

        objective = UniverseTrials(
            universe, settings, options.objective, pool, out_uri, progress, metrics, stop
        )
        try:
            run_trials(study, settings.trials, objective, size=1, space=plan.space, seed=settings.seed,
                       catch=SETTINGS_FAILURES, callbacks=[after_trial], exclusive=True)  # fmt: skip
        except BaseException:
            _save_on_the_way_out(save, progress)
            raise
        summary = save()
    if settings.draws_pictures:
        _draw_trials(out_uri, progress)
    if summary.best is None:
        raise RunFailure(f"study {plan.study_name}: no trial completed, so there are no best settings")
    folder = storage.join(out_uri, trial_folder(summary.best.number))
    progress(f"best trial {summary.best.number}: the book's {options.objective} {summary.best.objective:.4g}; "
             f"its universe records in {folder}")  # fmt: skip
    return summary


def universe_entry(summary: StudySummary, options: SearchOptions, universe: Universe) -> dict:
    """`study.json`'s ``universe``: what the objective reads, the instruments, and where the best trial's
    universe records are (relative to `--out`; None before a trial completes)."""
    entry: dict = {
        "objective": options.objective,
        "objective_reads": OBJECTIVE_READS,
        "instruments": list(instruments_of(universe)),
        "best_trial": None,
    }
    if summary.best is not None:
        folder = trial_folder(summary.best.number)
        entry["best_trial"] = {
            "number": summary.best.number,
            "objective": summary.best.objective,
            "folder": folder,
            "summary": f"{folder}/{SUMMARY}",
            "book": f"{folder}/{BOOK_FILE}",
            "instruments": f"{folder}/{INSTRUMENTS_FOLDER}/",
        }
    return entry


def save_universe_study(
    study: optuna.Study, out_uri: str, settings: RunConfig, options: SearchOptions, universe: Universe,
    pool: TrainerPool, synced: Path | None,
) -> StudySummary:  # fmt: skip
    """The study's files in `--out` (`write_study_outputs`), `study.json` with its ``universe``, and the
    SQLite study uploaded when `--out` is s3://."""
    built = {"builds": pool.builds, "graph_captures": pool.graph_captures, "compiles": pool.compiles}
    summary = write_study_outputs(
        study, out_uri, planned_trials=settings.trials, base=settings.dqn, trainers=built
    )
    selection = summary.selection
    record_selection(study, selection.dsr, selection.overfitting.get("pbo"), selection.trial)
    data = {**summary.to_dict(), "universe": universe_entry(summary, options, universe)}
    storage.write_bytes(storage.join(out_uri, out_names.STUDY_SUMMARY), strict_json.json_bytes(data))
    if synced is not None:
        sync_study_file(synced, out_uri)
    return summary


def _save_on_the_way_out(save: Callable[[], object], progress: Progress) -> None:
    # The search is ending on an error or a signal: keep what the study has, never hiding the cause.
    try:
        save()
    except Exception as exc:  # noqa: BLE001 (reported, then the original exception goes on)
        progress(f"study outputs not written on the way out: {type(exc).__name__}: {exc}")


def _draw_trials(out_uri: str, progress: Callable[[str], None]) -> None:
    """`trials.png` from the study's files (as the single search draws it)."""
    try:
        from foxhunt.evaluate.plot_search import render_trials_png

        png = render_trials_png(out_uri)
    except ImportError as exc:  # a slim image without matplotlib still reports in JSON
        progress(f"{out_names.TRIALS_PICTURE} not drawn: {exc}")
        return
    storage.write_bytes(storage.join(out_uri, out_names.TRIALS_PICTURE), png)


def universe_study_lines(out_uri: str, pictures: bool = True) -> list[str]:
    """The study table as text (`outputs.study_lines`), then where a universe's search put its files
    (trials.png where it drew `pictures`)."""
    lines = study_lines(out_uri)[:-1]  # the single search's outputs line names files a universe has not
    names = [out_names.TRIALS_CSV, out_names.TRIALS_JSON, out_names.BEST_PARAMS, out_names.STUDY_SUMMARY]
    if pictures:
        names.append(out_names.TRIALS_PICTURE)
    lines.append(
        f"outputs: {out_uri} ({', '.join(names)}, {out_names.TRIALS_DIR}/NNNN/: each trial's universe records)"
    )
    return lines
