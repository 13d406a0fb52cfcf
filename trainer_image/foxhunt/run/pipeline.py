"""The two steps end to end: bars → fxcache (precompute), fxcache → folds on one trainer (train).

`train` checks everything it can before work (settings, run id, the `--out` lock, a live run with the
same id, the fxcache, the folds, the manifest of an earlier attempt), then runs the folds inside a
`Run`, whose `finish` is the one way out. A fold completed by an earlier attempt, with its outputs
verified against the manifest, is taken over instead of trained again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any, Protocol

from foxhunt import __version__, out_dir, storage
from foxhunt.config import SAMPLE_BARS, RunConfig
from foxhunt.config.search import SearchOptions
from foxhunt.data.bars import check_reading_options, generate_sample_bars, iso_utc, read_bars
from foxhunt.data.features import compute_features
from foxhunt.data.folds import FoldRange, generate_walk_forward_indices
from foxhunt.data.fxcache import fxcache_matches, read_fxcache, write_fxcache
from foxhunt.errors import UsageError
from foxhunt.evaluate.evaluation import MODEL, ScoreMemo, Scoring
from foxhunt.evaluate.reports import RunSummary, fold_table
from foxhunt.evaluate.run_scores import (
    run_pictures,
    run_scoring,
    stitched_evaluation,
    stitched_report,
    verdict_line,
)
from foxhunt.evaluate.seed_spread import seed_spread, spread_lines
from foxhunt.evaluate.trades import run_tables
from foxhunt.run import compile_cache
from foxhunt.run.argo_outputs import write_argo_outputs
from foxhunt.run.checkpoint_check import fold_checkpoint_problem
from foxhunt.run.fold_loop import FoldOutcome, load_fold, train_fold
from foxhunt.run.holdout import planning_rows, run_holdout
from foxhunt.run.lifecycle import Progress, Run, console, now_iso
from foxhunt.run.lock import HEARTBEAT_SECONDS, STALE_SECONDS, OutLock
from foxhunt.run.manifest import Manifest, check_out_before_work, resume_point
from foxhunt.run.out_folder import (
    check_inputs_outside,
    local_folder_exists,
    remove_empty_folder,
    remove_stale_temp_files,
)
from foxhunt.run.telemetry import RunMetrics, refuse_live_run, resolve_pushgateway, resolve_run_id
from foxhunt.train import DeviceData, DQNTrainer, TrainingDiverged, resolve_device, to_device
from foxhunt.train.memory_estimate import check_device_memory


class SearchPlan(Protocol):
    """A checked search (foxhunt.search.driver.SearchPlan): what the manifest records, and its trials."""

    @property
    def identity(self) -> dict[str, Any]: ...

    def run(self, run: Run, data: DeviceData, folds: list[FoldRange]) -> None: ...


PlanSearch = Callable[[SearchOptions | None, str, RunConfig], SearchPlan]

# `TrainSettings` is the name the benchmarks and older callers use for a run's settings.
TrainSettings = RunConfig
__all__ = ["TrainSettings", "fold_table", "pipeline", "precompute", "train", "train_fold"]


def _print(msg: str) -> None:
    print(msg, flush=True)


# ---- precompute ---------------------------------------------------------------------------------
def precompute(
    bars_uris: list[str] | None,
    out_uri: str,
    *,
    tz: str | None = None,
    timestamp_unit: str | None = None,
    force: bool = False,
    sample_bars: int = SAMPLE_BARS,
    seed: int = 0,
    sample_signal: bool = True,
    progress: Progress = _print,
    keep_other: bool = False,
) -> dict:
    """Bars → 42 features + 4 targets → fxcache at `out_uri`; a no-op when it exists for the same bars.
    `keep_other`: an fxcache there built from other bars is refused (UsageError), not replaced."""
    start = time.perf_counter()
    check_bars_and_output(bars_uris, tz, timestamp_unit, out_uri, folder=False)
    bars = (
        read_bars(bars_uris, tz=tz, timestamp_unit=timestamp_unit)
        if bars_uris
        else generate_sample_bars(sample_bars, seed=seed, signal=sample_signal)
    )
    if not force:
        existing = fxcache_matches(out_uri, bars.content_hash)
        if existing is not None:
            progress(
                f"fxcache hit: {out_uri} already holds {existing.get('rows')} rows built from these bars "
                f"(sha256 {bars.content_hash[:12]}); nothing to do"
            )
            return {
                "cache_hit": True,
                "out": out_uri,
                "rows_in": len(bars),
                "rows_out": int(existing.get("rows", 0)),
                "seconds": time.perf_counter() - start,
            }
        if keep_other and storage.exists(out_uri):
            raise UsageError(
                f"{out_uri} holds the fxcache of an earlier run, built from other bars; use the same "
                "bars to resume it, another --out, or --overwrite to start over"
            )
    t_read = time.perf_counter() - start
    progress(
        f"read {len(bars):,} bars from {bars.source} in {t_read:.2f}s; computing 42 features and 4 targets"
    )
    t0 = time.perf_counter()
    table = compute_features(bars)
    t_feat = time.perf_counter() - t0
    progress(f"features: {len(table):,} rows in {t_feat:.2f}s ({len(bars) / max(t_feat, 1e-9):,.0f} bars/s)")
    t0 = time.perf_counter()
    write_fxcache(out_uri, table, source_uri=bars.source, source_hash=bars.content_hash)
    t_write = time.perf_counter() - t0
    seconds = time.perf_counter() - start
    first, last = iso_utc(table.timestamp[0]), iso_utc(table.timestamp[-1])
    progress(
        f"precompute: {len(bars):,} bars in → {len(table):,} rows out, {first} → {last}, "
        f"wrote {out_uri} in {t_write:.2f}s, {seconds:.2f}s total"
    )
    return {
        "cache_hit": False,
        "out": out_uri,
        "rows_in": len(bars),
        "rows_out": len(table),
        "first": first,
        "last": last,
        "seconds": seconds,
    }


# ---- checks before work -------------------------------------------------------------------------
def check_bars_and_output(
    bars_uris: list[str] | None, tz: str | None, timestamp_unit: str | None, out_uri: str, *, folder: bool
) -> None:
    """Before reading a bar: the reading options, every bars input, and an `out_uri` that can be written
    and overwrites no bars file (`precompute --out <the bars file>` would replace it). UsageError (exit 2)."""
    check_reading_options(tz, timestamp_unit)
    for uri in bars_uris or ():
        storage.check_input(uri)
    storage.check_output(out_uri, inputs=bars_uris or (), folder=folder)


def _check_run_paths(fxcache_uri: str | None, out_uri: str, search: SearchOptions | None) -> None:
    """The fxcache (None: the pipeline writes it) and search space exist and can be read; `--out` is a
    folder that can be written and sits inside no input. UsageError (exit 2), before the `--out` lock."""
    inputs = [uri for uri in (fxcache_uri, search.search_space if search else None) if uri]
    for uri in inputs:
        storage.check_input(uri)
    storage.check_output(out_uri, inputs=inputs, folder=True)
    check_inputs_outside(out_uri, inputs)


def _check_settings(
    settings: RunConfig, out_uri: str, search: SearchOptions | None, plan_search: PlanSearch | None
):
    """What a run can know is wrong before it touches anything: UsageError (exit 2). With `--trials N`
    the search too: its space, its storage URL and its study name (`plan`, else None)."""
    try:
        device = resolve_device(settings.device)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    compile_cache.check_setting(settings.compile_cache)
    plan = None
    if settings.trials > 0:
        if plan_search is None:
            raise UsageError("--trials: a search runs through `foxhunt train` or `foxhunt pipeline`")
        plan = plan_search(search, out_uri, settings)
    return device, resolve_run_id(settings.run_id), resolve_pushgateway(settings.pushgateway), plan


def train(
    fxcache_uri: str,
    out_uri: str,
    settings: RunConfig,
    progress: Progress | None = None,
    *,
    prepare: Callable[[], dict] | None = None,
    summary_extra: dict | None = None,
    search: SearchOptions | None = None,
    plan_search: PlanSearch | None = None,
) -> RunSummary:
    """The one-pod run: load the fxcache once, put it on the device once, train every fold on one trainer.

    `prepare` runs once the `--out` is locked, before the fxcache is read (the pipeline precomputes
    there); its result joins `summary_extra` in `summary.json`. With `settings.trials > 0` the run is a
    search (`search`: its options, default ones when None): trials of the whole walk-forward, planned
    by `plan_search` (foxhunt.search.driver.plan_search, handed down by the CLI: the run never imports
    the search).
    """
    _check_run_paths(None if prepare else fxcache_uri, out_uri, search)
    device, run_id, pushgateway, plan = _check_settings(settings, out_uri, search, plan_search)
    progress = progress or console(settings.log_format, run_id)
    lock = OutLock(out_uri, run_id)
    new_out = not local_folder_exists(out_uri)
    predecessor = lock.acquire(wait_seconds=STALE_SECONDS + HEARTBEAT_SECONDS)
    try:
        if predecessor is not None:
            progress(f"took over the stale lock of {predecessor.describe()}")
        if pushgateway and not (predecessor is not None and predecessor.run_id == run_id):
            refuse_live_run(pushgateway, run_id, stale_seconds=STALE_SECONDS)
        identity = Manifest(
            fxcache_uri,
            None,
            __version__,
            device.type,
            asdict(settings),
            search=plan.identity if plan else {},
        )
        check_out_before_work(out_uri, identity, settings.overwrite)  # before the pipeline writes its fxcache
        stale = remove_stale_temp_files(out_uri)
        if stale:
            progress(f"removed {len(stale)} temp file(s) an interrupted write left: {', '.join(stale[:3])}")
        extra = {**(summary_extra or {}), **({"precompute": prepare()} if prepare else {})}
        t0 = time.perf_counter()
        cache = read_fxcache(fxcache_uri)
        read_seconds = time.perf_counter() - t0
        planned = planning_rows(cache.timestamp, settings.folds.holdout_days)  # the held-out bars cut off
        folds = generate_walk_forward_indices(
            cache.timestamp[:planned], settings.folds, close_returns=cache.targets[:planned, 0]
        )
        check_device_memory(
            device, len(cache), cache.features.shape[1], max(f.train_rows for f in folds), settings.dqn
        )
        manifest = Manifest(
            fxcache_uri,
            cache.metadata.get("checksum"),
            __version__,
            device.type,
            asdict(settings),
            search=plan.identity if plan else {},
        )
        hidden = settings.dqn.hidden
        done = resume_point(
            out_uri,
            manifest,
            settings.overwrite,
            progress,
            lambda out, rec: fold_checkpoint_problem(out, rec, hidden),
        )
        metrics = RunMetrics(
            run_id,
            pushgateway=pushgateway,
            model=settings.model,
            device=str(device),
            metrics_port=settings.metrics_port,
        )
    except BaseException:
        lock.release()
        if new_out:
            remove_empty_folder(out_uri)  # a refused run leaves no --out behind
        raise
    summary = _new_summary(settings, run_id, str(device), fxcache_uri, cache, len(folds), extra)
    try:
        with Run(out_uri, settings, summary, manifest, lock, metrics, progress) as run:
            _run_folds(run, cache, folds, done, read_seconds, device, plan)
    finally:  # every way out of the run: Argo's step outputs hold what exists by now
        write_argo_outputs(summary, out_uri, progress)
    return summary


def _new_summary(
    settings: RunConfig, run_id: str, device: str, fxcache_uri: str, cache, planned: int, extra: dict
) -> RunSummary:
    return RunSummary(
        run_id=run_id,
        model=settings.model,
        device=device,
        version=__version__,
        fxcache=fxcache_uri,
        fxcache_checksum=cache.metadata.get("checksum"),
        rows=len(cache),
        epochs=settings.epochs,
        seed=settings.seed,
        trials=settings.trials,
        fold_config=asdict(settings.folds),
        dqn_config=asdict(settings.dqn),
        eval_config=asdict(settings.eval),
        started_at=now_iso(),
        folds_planned=planned,
        **extra,
    )


def _run_folds(
    run: Run,
    cache,
    folds: list[FoldRange],
    done: set[int],
    read_seconds: float,
    device,
    plan: SearchPlan | None = None,
) -> None:
    """Upload once, build the trainer once, then every fold: taken over when done, else trained.

    A search (`plan`) hands the uploaded data to its trials instead.
    """
    settings, summary, out_uri, progress = run.config, run.summary, run.out_uri, run.progress
    t0 = time.perf_counter()
    data = to_device(cache.features, cache.targets, cache.timestamp, device)
    summary.data_load_seconds = read_seconds + time.perf_counter() - t0
    run.metrics.data_loaded(summary.data_load_seconds, len(cache))
    progress(
        f"loaded {len(cache):,} rows from {summary.fxcache} ({'cache hit' if cache.cache_hit else 'read'}) "
        f"onto {device} in {summary.data_load_seconds:.2f}s"
    )
    progress(
        f"{len(folds)} folds: "
        + ", ".join(f"{f.fold}: train {f.train_rows:,} val {f.val_rows:,}" for f in folds)
    )
    if plan is not None:
        plan.run(run, data, folds)
        return
    max_rows = max(f.train_rows for f in folds)
    step_cache = compile_cache.for_run(
        settings.compile_cache, summary.fxcache, device, settings.dqn, data, max_rows, progress
    )
    built = time.perf_counter()
    seeds = [settings.seed + i for i in range(settings.seeds)]  # member i trains from seed + i
    trainer = DQNTrainer(
        data,
        settings.dqn if len(seeds) == 1 else [settings.dqn] * len(seeds),
        max_train_rows=max_rows,
        seed=settings.seed,
        eval_cost=settings.eval.cost,
        eval_spread=settings.eval.spread,
        member_seeds=seeds,
    )
    outs = {0: out_uri, **{i: storage.join(out_uri, seed_folder(s)) for i, s in enumerate(seeds) if i}}
    other_seeds: dict[int, dict[int, FoldOutcome]] = {i: {} for i in outs if i}
    progress(f"trainer built in {time.perf_counter() - built:.2f}s")  # on CUDA: compile, capture, warm-up
    scoring = run_scoring(settings.eval, settings.seed, data)
    memo = ScoreMemo()  # the stitched evaluation looks up the fold windows scored as they ended
    outcomes: dict[int, FoldOutcome] = {}
    for fold_range in folds:
        run.check()
        run.current_fold = fold = fold_range.fold
        if fold in done:
            outcomes[fold] = load_fold(out_uri, fold)
            run.fold_finished(outcomes[fold].report, None)
            progress(f"fold {fold} skipped: completed by an earlier attempt, outputs verified")
            continue
        members = train_fold(
            trainer,
            fold_range,
            settings.epochs,
            outs,
            progress,
            run.check,
            scoring=scoring,
            memo=memo,
        )
        outcome = members[0]
        if isinstance(outcome, TrainingDiverged):
            raise outcome
        for i, other in members.items():
            if i:
                if isinstance(other, TrainingDiverged):
                    progress(f"seed {seeds[i]}: {other}")
                    other_seeds.pop(i, None)
                elif i in other_seeds:
                    other_seeds[i][fold] = other
        outcomes[fold] = outcome
        run.fold_finished(outcome.report, outcome.outputs)
        if step_cache is not None:
            step_cache.after_fold(progress)
        p, window = outcome.report.phases, outcome.report.evaluation
        net = window.policies[MODEL].net
        progress(
            f"fold {fold} done: reset {p['reset'] * 1e3:.1f}ms normalize {p['normalize'] * 1e3:.1f}ms "
            f"train {p['train']:.2f}s validation Sharpe {net.sharpe:.2f} ± {net.sharpe_se:.2f} after costs, "
            f"best baseline {window.best_baseline} {window.policies[window.best_baseline].net.sharpe:.2f}"
        )
    summary.graph_captures = trainer.graph_captures
    run.current_fold = None
    _evaluate_run(run, data, folds, outcomes, scoring, memo)
    if len(seeds) > 1:
        _seed_spread(run, data, folds, outcomes, other_seeds, seeds, scoring)
    if settings.folds.holdout_days > 0 and summary.stitched is not None:
        in_search = {
            "what": "net Sharpe of the run's stitched folds",
            "value": summary.stitched.policies[MODEL].net.sharpe,
        }
        run_holdout(run, data, trainer, len(folds), max_rows, scoring, "the run's settings", in_search)


def seed_folder(seed: int) -> str:
    """The folder, under the run's, of an extra seed's folds (--seeds K): `seed_1`."""
    return f"seed_{seed}"


def _seed_spread(
    run: Run,
    data,
    folds: list[FoldRange],
    outcomes: dict,
    other_seeds: dict[int, dict[int, FoldOutcome]],
    seeds: list[int],
    scoring: Scoring,
) -> None:
    """--seeds K: every seed's stitched net Sharpe, their median and IQR into the summary and the console."""
    summary = run.summary
    if summary.stitched is None:
        return
    net = {seeds[0]: summary.stitched.policies[MODEL].net}
    for i, by_fold in other_seeds.items():
        if len(by_fold) != len(outcomes):  # a seed that diverged in some fold has no stitched record
            continue
        net[seeds[i]] = (
            stitched_evaluation(
                data.features,
                data.targets,
                data.timestamp,
                folds,
                {fold: o.positions for fold, o in by_fold.items()},
                scoring,
                {fold: o.baselines for fold, o in outcomes.items() if o.baselines is not None},
                ScoreMemo(),
            )
            .stitched.policies[MODEL]
            .net
        )
    summary.seed_spread = seed_spread(net)
    for line in spread_lines(summary.seed_spread):
        run.progress(line)


def _evaluate_run(
    run: Run, data, folds: list[FoldRange], outcomes: dict, scoring: Scoring, memo: ScoreMemo
) -> None:
    """The stitched record into the summary, the metrics and the console; run.png and timings.png."""
    summary, progress = run.summary, run.progress
    evaluation = stitched_evaluation(
        data.features,
        data.targets,
        data.timestamp,
        folds,
        {fold: o.positions for fold, o in outcomes.items()},
        scoring,
        {fold: o.baselines for fold, o in outcomes.items() if o.baselines is not None},
        memo,
    )
    summary.stitched = evaluation.stitched
    run.metrics.run_evaluated(evaluation.stitched)
    for line in stitched_report(evaluation.stitched, len(evaluation.folds), scoring.level):
        progress(line)
    for name, table in run_tables(evaluation).items():  # trades.parquet, daily.csv, monthly.csv
        storage.write_bytes(storage.join(run.out_uri, name), table)
    title = f"foxhunt run {summary.run_id} on {summary.device}\n{verdict_line(evaluation.stitched)}"
    try:
        pictures = run_pictures(evaluation, summary.folds, title)
    except ImportError as exc:  # a slim image without matplotlib still trains and reports in JSON
        progress(f"run.png and timings.png not drawn: {exc}")
        return
    for name, png in pictures.items():
        storage.write_bytes(storage.join(run.out_uri, name), png)


def pipeline(
    bars_uris: list[str] | None,
    out_uri: str,
    settings: RunConfig,
    *,
    sample_bars: int = SAMPLE_BARS,
    sample_signal: bool = True,
    tz: str | None = None,
    timestamp_unit: str | None = None,
    progress: Progress | None = None,
    search: SearchOptions | None = None,
    plan_search: PlanSearch | None = None,
) -> RunSummary:
    """Precompute then train (or search, with `settings.trials > 0`), locally; with no bars, on sample bars
    (`sample_signal=False`: with nothing predictable planted)."""
    check_bars_and_output(bars_uris, tz, timestamp_unit, out_uri, folder=True)
    check_inputs_outside(out_uri, bars_uris or ())
    fxcache_uri = storage.join(out_uri, out_dir.PIPELINE_FXCACHE)
    settings = replace(settings, run_id=resolve_run_id(settings.run_id))  # one id for both steps' lines
    emit = progress or console(settings.log_format, settings.run_id or "")

    def prepare() -> dict:
        return precompute(
            bars_uris,
            fxcache_uri,
            tz=tz,
            timestamp_unit=timestamp_unit,
            sample_bars=sample_bars,
            seed=settings.seed,
            sample_signal=sample_signal,
            progress=emit,
            keep_other=not settings.overwrite,
        )

    return train(
        fxcache_uri, out_uri, settings, emit, prepare=prepare, search=search, plan_search=plan_search
    )
