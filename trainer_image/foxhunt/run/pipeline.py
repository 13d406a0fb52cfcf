"""The two steps end to end: bars → fxcache (`precompute`), fxcache → folds on one trainer (`train`).

`train` checks everything it can before work (settings, run id, the `--out` lock, a live run with the
same id, the fxcache, the folds, the manifest of an earlier attempt), then runs the folds
(`walk_forward.run_folds`) inside a `Run`, whose `finish` is the one way out. A fold completed by an
earlier attempt, with its outputs verified against the manifest, is taken over instead of trained again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

from foxhunt import __version__, out_names, storage
from foxhunt.config import SAMPLE_BARS, RunConfig
from foxhunt.config.search import SearchOptions
from foxhunt.data.folds import FoldRange, generate_walk_forward_indices
from foxhunt.data.fxcache import FxCache, read_fxcache
from foxhunt.errors import UsageError
from foxhunt.evaluate.reports import RunSummary
from foxhunt.run import compile_cache
from foxhunt.run.argo_outputs import write_argo_outputs
from foxhunt.run.checkpoint_check import fold_checkpoint_problem
from foxhunt.run.holdout import checked_holdout_range, planning_rows
from foxhunt.run.lifecycle import Progress, Run, RunSink, console, now_iso
from foxhunt.run.lock import HEARTBEAT_SECONDS, STALE_SECONDS, LockHolder, OutLock
from foxhunt.run.manifest import Manifest, check_out_before_work, resume_point
from foxhunt.run.out_folder import (
    check_inputs_outside,
    local_folder_exists,
    remove_empty_folder,
    remove_stale_temp_files,
)
from foxhunt.run.precompute import OverlayOptions, check_bars_and_output, check_overlay, precompute
from foxhunt.run.sinks.pushgateway import refuse_live_run, resolve_pushgateway, resolve_run_id
from foxhunt.run.sinks.telemetry import RunMetrics
from foxhunt.run.sinks.telemetry_gauges import instrument_name
from foxhunt.run.walk_forward import SearchPlan, run_folds
from foxhunt.train import resolve_device
from foxhunt.train.cuda_start import start_cuda_context
from foxhunt.train.memory_estimate import check_device_memory

if TYPE_CHECKING:
    import torch

PlanSearch = Callable[[SearchOptions | None, str, RunConfig], SearchPlan]

# `TrainSettings` is the name the benchmarks and older callers use for a run's settings.
TrainSettings = RunConfig
__all__ = ["TrainSettings", "pipeline", "train"]


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


def _manifest(
    fxcache_uri: str, checksum: str | None, device: torch.device, settings: RunConfig, plan: SearchPlan | None
) -> Manifest:
    """The run's identity as its manifest holds it (the checksum is None before the fxcache is read)."""
    search = plan.identity if plan else {}
    return Manifest(fxcache_uri, checksum, __version__, device.type, asdict(settings), search=search)


def _check_out(
    out_uri: str,
    identity: Manifest,
    settings: RunConfig,
    run_id: str,
    pushgateway: str | None,
    predecessor: LockHolder | None,
    progress: Progress,
) -> None:
    """With the `--out` lock held: no live run of the same id, and an `--out` this run may write to."""
    if predecessor is not None:
        progress(f"took over the stale lock of {predecessor.describe()}")
    if pushgateway and not (predecessor is not None and predecessor.run_id == run_id):
        refuse_live_run(pushgateway, run_id, stale_seconds=STALE_SECONDS)
    check_out_before_work(out_uri, identity, settings.overwrite)  # before the pipeline writes its fxcache
    stale = remove_stale_temp_files(out_uri)
    if stale:
        progress(f"removed {len(stale)} temp file(s) an interrupted write left: {', '.join(stale[:3])}")


@dataclass(frozen=True)
class _Loaded:
    """The fxcache read once, the folds planned on it, and what `prepare` said."""

    cache: FxCache
    read_seconds: float
    folds: list[FoldRange]
    extra: dict


def _load(
    fxcache_uri: str,
    settings: RunConfig,
    device: torch.device,
    cuda_ready: Callable[[], float],
    progress: Progress,
    extra: Callable[[], dict],
) -> _Loaded:
    """Run `extra` (the pipeline's precompute), read the fxcache, plan the folds, check the device's memory."""
    told = extra()
    t0 = time.perf_counter()
    cache = read_fxcache(fxcache_uri)
    read_seconds = time.perf_counter() - t0
    # The held-out bars cut off (at least a fold's validation rows of them).
    planned = planning_rows(cache.timestamp, settings.folds.holdout_days, settings.folds.min_val_rows)
    folds = generate_walk_forward_indices(
        cache.timestamp[:planned], settings.folds, close_returns=cache.targets[:planned, 0]
    )
    if settings.folds.holdout_days > 0:  # refused now, not after every fold has trained
        max_rows = max(f.train_rows for f in folds)
        checked_holdout_range(
            cache.timestamp, settings.folds, len(folds), max_rows, settings.dqn.select_tail_share
        )
    waited = cuda_ready()  # before the first device call; raises what the context's start raised
    if device.type == "cuda":
        progress(f"CUDA context ready ({waited:.2f}s waited for it after the fxcache's read)")
    check_device_memory(
        device, len(cache), cache.features.shape[1], max(f.train_rows for f in folds), settings.dqn
    )
    return _Loaded(cache, read_seconds, folds, told)


def _resumed_folds(out_uri: str, manifest: Manifest, settings: RunConfig, progress: Progress) -> set[int]:
    """The folds an earlier attempt completed whose outputs, checkpoints included, are intact."""
    hidden = settings.dqn.hidden
    return resume_point(
        out_uri,
        manifest,
        settings.overwrite,
        progress,
        lambda out, rec: fold_checkpoint_problem(out, rec, hidden),
    )


def _refused(out_uri: str, lock: OutLock, cuda_ready: Callable[[], float] | None, new_out: bool) -> None:
    """Undo what a run refused before its work did: the CUDA start joined, the lock released, a new
    `--out` removed (a refused run leaves none behind)."""
    if cuda_ready is not None:
        with suppress(Exception):  # the error on its way out is the one to report
            cuda_ready()
    lock.release()
    if new_out:
        remove_empty_folder(out_uri)


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
    sink: RunSink | None = None,
) -> RunSummary:
    """The one-pod run: load the fxcache once, put it on the device once, train every fold on one trainer.

    `prepare` runs once the `--out` is locked, before the fxcache is read (the pipeline precomputes
    there); its result joins `summary_extra` in `summary.json`. With `settings.trials > 0` the run is a
    search (`search`: its options, default ones when None): trials of the whole walk-forward, planned
    by `plan_search` (foxhunt.search.driver.plan_search, handed down by the CLI: the run never imports
    the search). `sink` (the MLflow live record) is told of the run's start, epochs, folds and end.
    """
    _check_run_paths(None if prepare else fxcache_uri, out_uri, search)
    device, run_id, pushgateway, plan = _check_settings(settings, out_uri, search, plan_search)
    progress = progress or console(settings.log_format, run_id)
    lock = OutLock(out_uri, run_id)
    new_out = not local_folder_exists(out_uri)
    predecessor = lock.acquire(wait_seconds=STALE_SECONDS + HEARTBEAT_SECONDS)
    cuda_ready = None
    try:
        identity = _manifest(fxcache_uri, None, device, settings, plan)
        _check_out(out_uri, identity, settings, run_id, pushgateway, predecessor, progress)
        cuda_ready = start_cuda_context(device)  # on CUDA the context starts while the fxcache is read
        loaded = _load(
            fxcache_uri,
            settings,
            device,
            cuda_ready,
            progress,
            lambda: {**(summary_extra or {}), **({"precompute": prepare()} if prepare else {})},
        )
        manifest = _manifest(fxcache_uri, loaded.cache.metadata.get("checksum"), device, settings, plan)
        done = _resumed_folds(out_uri, manifest, settings, progress)
        metrics = RunMetrics(
            run_id, pushgateway=pushgateway, model=settings.model, device=str(device),
            metrics_port=settings.metrics_port, instrument=instrument_name(fxcache_uri),
        )  # fmt: skip
    except BaseException:
        _refused(out_uri, lock, cuda_ready, new_out)
        raise
    cache, folds = loaded.cache, loaded.folds
    summary = _new_summary(settings, run_id, str(device), fxcache_uri, cache, len(folds), loaded.extra)
    try:
        with Run(out_uri, settings, summary, manifest, lock, metrics, progress, sink) as run:
            run_folds(run, cache, folds, done, loaded.read_seconds, device, plan)
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
    sink: RunSink | None = None,
    overlay: OverlayOptions | None = None,
) -> RunSummary:
    """Precompute then train (or search, with `settings.trials > 0`), locally; with no bars, on sample bars
    (`sample_signal=False`: with nothing predictable planted); `overlay`: the sample's news process laid
    over the bars first (summary.json's `precompute.overlay` records it)."""
    check_bars_and_output(bars_uris, tz, timestamp_unit, out_uri, folder=True)
    check_overlay(overlay, bars_uris)
    check_inputs_outside(out_uri, bars_uris or ())
    fxcache_uri = storage.join(out_uri, out_names.PIPELINE_FXCACHE)
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
            overlay=overlay,
        )

    return train(
        fxcache_uri,
        out_uri,
        settings,
        emit,
        prepare=prepare,
        search=search,
        plan_search=plan_search,
        sink=sink,
    )
