"""The two steps end to end: bars → fxcache (precompute), fxcache → folds on one trainer (train).

`train` checks everything it can before work (settings, run id, the `--out` lock, a live run with the
same id, the fxcache, the folds, the manifest of an earlier attempt), then runs the folds inside a
`Run`, whose `finish` is the one way out. A fold completed by an earlier attempt, with its outputs
verified against the manifest, is taken over instead of trained again.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from dataclasses import asdict, replace

import numpy as np
import torch

from foxhunt import __version__, storage
from foxhunt.bars import generate_sample_bars, iso_utc, read_bars
from foxhunt.config import PHASES, SAMPLE_BARS, RunConfig
from foxhunt.errors import UsageError
from foxhunt.features import FEATURE_NAMES, compute_features
from foxhunt.fxcache import fxcache_matches, read_fxcache, write_fxcache
from foxhunt.lock import HEARTBEAT_SECONDS, STALE_SECONDS, OutLock
from foxhunt.manifest import Manifest, resume_point, sha256
from foxhunt.metrics import RunMetrics, refuse_live_run, resolve_pushgateway, resolve_run_id
from foxhunt.report import render_run_png
from foxhunt.reports import EpochStats, FoldDates, FoldReport, RunSummary, Validation, fold_table
from foxhunt.run import Progress, Run, console, now_iso
from foxhunt.trainer import DQNTrainer, resolve_device, synchronize, to_device
from foxhunt.walk_forward import FoldRange, generate_walk_forward_indices

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
    force: bool = False,
    sample_bars: int = SAMPLE_BARS,
    seed: int = 0,
    progress: Progress = _print,
) -> dict:
    """Bars → 42 features + 4 targets → fxcache at `out_uri`; a no-op when it exists for the same bars."""
    start = time.perf_counter()
    bars = read_bars(bars_uris, tz=tz) if bars_uris else generate_sample_bars(sample_bars, seed=seed)
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


# ---- one fold -----------------------------------------------------------------------------------
def _json_bytes(payload: dict) -> bytes:
    return (json.dumps(payload, indent=2) + "\n").encode()


def fold_dates(fold_range: FoldRange, timestamp: np.ndarray) -> FoldDates:
    """The first and last bar of the fold's training and validation ranges."""
    return FoldDates(
        iso_utc(timestamp[fold_range.train_start]),
        iso_utc(timestamp[fold_range.train_end - 1]),
        iso_utc(timestamp[fold_range.val_start]),
        iso_utc(timestamp[fold_range.val_end - 1]),
    )


def _epoch_stats(stats: dict, collect_seconds: float, train_seconds: float) -> EpochStats:
    shares = stats.get("action_shares")
    return EpochStats(
        epoch=stats["epoch"],
        loss=stats["loss"],
        epsilon=stats["epsilon"],
        steps=stats["steps"],
        collect_seconds=collect_seconds,
        train_seconds=train_seconds,
        samples_per_second=stats["samples_per_second"],
        q_mean=stats.get("q_mean"),
        q_max=stats.get("q_max"),
        action_shares=list(shares) if shares is not None else None,
        train_sharpe=stats.get("train_sharpe"),
        val_sharpe=stats.get("val_sharpe"),
        feature_agreement=stats.get("feature_agreement"),
    )


def _train_epochs(
    trainer: DQNTrainer, epochs: int, progress: Progress, check: Callable[[], None]
) -> list[EpochStats]:
    """The fold's epochs, each after a boundary check, each reported on the console."""
    fold = trainer.fold_range.fold
    epoch_stats = []
    for epoch in range(epochs):
        check()
        stats = trainer.train_epoch(epoch, epochs)
        h = trainer.history
        epoch_stats.append(_epoch_stats(stats, h.collect_seconds[-1], h.train_seconds[-1]))
        progress(
            f"fold {fold} epoch {epoch + 1}/{epochs}: loss {stats['loss']:.4f} eps {stats['epsilon']:.2f} "
            f"{stats['steps']} steps {stats['seconds']:.2f}s {stats['samples_per_second']:,.0f} samples/s"
        )
    return epoch_stats


@dataclass
class FoldOutcome:
    """A completed fold: its report, its validation positions, the baselines' positions, its files' sha256."""

    report: FoldReport
    positions: np.ndarray  # float64 −1/0/1, one per validation bar
    baselines: dict[str, object] | None  # None for a fold taken over from an earlier attempt
    outputs: dict[str, str] | None  # output file (relative to --out) → sha256; None when taken over


def train_fold(
    trainer: DQNTrainer,
    fold_range: FoldRange,
    epochs: int,
    out_uri: str,
    progress: Progress = _print,
    check: Callable[[], None] = lambda: None,
    *,
    scoring: Scoring | None = None,
) -> FoldOutcome:
    """One fold on the persistent trainer: reset, normalize, train, validate, checkpoint.

    `check` runs at every epoch boundary (a stop signal raises there). Validation scores the greedy
    positions beside the baselines with `scoring` (default: the trainer's evaluation costs, the
    bootstrap seeded with its seed).
    """
    device, fold, phases = trainer.device, fold_range.fold, {}
    scoring = scoring or Scoring(
        cost=trainer.config.cost if trainer.eval_cost is None else trainer.eval_cost,
        spread=trainer.eval_spread,
        seed=trainer.seed,
    )
    fold_start = t0 = time.perf_counter()
    trainer.set_fold_range(fold_range)
    trainer.reset_for_fold(fold)
    synchronize(device)
    phases["reset"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    trainer.compute_norm_stats()
    synchronize(device)
    phases["normalize"] = time.perf_counter() - t0

    epoch_stats = _train_epochs(trainer, epochs, progress, check)
    check()
    phases["collect"] = sum(e.collect_seconds for e in epoch_stats)
    phases["train"] = sum(e.train_seconds for e in epoch_stats)

    t0 = time.perf_counter()
    data = trainer.data
    positions = trainer.greedy_positions()  # one rollout serves the evaluation and the saved record
    window, baselines = evaluate_fold(
        data.features, data.targets, data.timestamp, fold_range, positions, scoring
    )
    synchronize(device)
    phases["validate"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    files = save_fold(trainer, fold_range, positions, out_uri)
    phases["checkpoint"] = time.perf_counter() - t0

    report = FoldReport(
        **fold_range.to_dict(),
        dates=fold_dates(fold_range, data.timestamp),
        phases={p: phases[p] for p in PHASES},
        fold_seconds=time.perf_counter() - fold_start,
        samples_per_second=trainer.steps_done * trainer.config.batch_size / max(phases["train"], 1e-9),
        steps=trainer.steps_done,
        epochs=epoch_stats,
        validation=Validation.from_window(window),
        evaluation=window,
        warnings=fold_warnings(fold, epoch_stats),
    )
    for warning in report.warnings:
        progress(f"WARNING {warning}")
    files["report.json"] = _json_bytes(report.to_dict())
    storage.write_bytes(storage.join(out_uri, f"fold_{fold}", "report.json"), files["report.json"])
    outputs = {f"fold_{fold}/{name}": sha256(data) for name, data in files.items()}
    return FoldOutcome(report, positions_from_bytes(files[POSITIONS_FILE]), baselines, outputs)


def save_fold(trainer: DQNTrainer, fold_range: FoldRange, positions, out_uri: str) -> dict[str, bytes]:
    """Write the fold's weights, norm stats and validation positions under `fold_N/`; returns them by name."""
    fold = fold_range.fold
    buf = io.BytesIO()
    torch.save(trainer.state_dict_cpu(), buf)
    norm = {"fold": fold, "feature_names": list(FEATURE_NAMES), **trainer.norm_stats_dict()}
    files = {
        "weights.pt": buf.getvalue(),
        f"norm_stats_fold{fold}.json": _json_bytes(norm),
        POSITIONS_FILE: positions_bytes(positions),
    }
    for name, data in files.items():
        storage.write_bytes(storage.join(out_uri, f"fold_{fold}", name), data)
    return files


def load_fold(out_uri: str, fold: int) -> FoldOutcome:
    """The report and validation positions of a fold an earlier attempt completed (its outputs verified)."""
    folder = storage.join(out_uri, f"fold_{fold}")
    report = FoldReport.from_dict(json.loads(storage.read_bytes(storage.join(folder, "report.json"))))
    positions = positions_from_bytes(storage.read_bytes(storage.join(folder, POSITIONS_FILE)))
    return FoldOutcome(report, positions, None, None)


# ---- checks before work -------------------------------------------------------------------------
def _check_settings(settings: RunConfig):
    """What a run can know is wrong before it touches anything: UsageError (exit 2)."""
    if settings.trials != 0:
        raise UsageError("--trials > 0: hyperparameter search (Optuna) does not exist yet; use --trials 0")
    try:
        device = resolve_device(settings.device)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    return device, resolve_run_id(settings.run_id), resolve_pushgateway(settings.pushgateway)


def train(
    fxcache_uri: str,
    out_uri: str,
    settings: RunConfig,
    progress: Progress | None = None,
    *,
    prepare: Callable[[], dict] | None = None,
    summary_extra: dict | None = None,
) -> RunSummary:
    """The one-pod run: load the fxcache once, put it on the device once, train every fold on one trainer.

    `prepare` runs once the `--out` is locked, before the fxcache is read (the pipeline precomputes
    there); its result joins `summary_extra` in `summary.json`.
    """
    device, run_id, pushgateway = _check_settings(settings)
    progress = progress or console(settings.log_format, run_id)
    lock = OutLock(out_uri, run_id)
    predecessor = lock.acquire(wait_seconds=STALE_SECONDS + HEARTBEAT_SECONDS)
    try:
        if predecessor is not None:
            progress(f"took over the stale lock of {predecessor.describe()}")
        if pushgateway and not (predecessor is not None and predecessor.run_id == run_id):
            refuse_live_run(pushgateway, run_id, stale_seconds=STALE_SECONDS)
        extra = {**(summary_extra or {}), **({"precompute": prepare()} if prepare else {})}
        t0 = time.perf_counter()
        cache = read_fxcache(fxcache_uri)
        read_seconds = time.perf_counter() - t0
        folds = generate_walk_forward_indices(
            cache.timestamp, settings.folds, close_returns=cache.targets[:, 0]
        )
        manifest = Manifest(
            fxcache_uri, cache.metadata.get("checksum"), __version__, device.type, asdict(settings)
        )
        done = resume_point(out_uri, manifest, settings.overwrite, progress)
        metrics = RunMetrics(
            run_id,
            pushgateway=pushgateway,
            model=settings.model,
            device=str(device),
            metrics_port=settings.metrics_port,
        )
    except BaseException:
        lock.release()
        raise
    summary = _new_summary(settings, run_id, str(device), fxcache_uri, cache, len(folds), extra)
    with Run(out_uri, settings, summary, manifest, lock, metrics, progress) as run:
        _run_folds(run, cache, folds, done, read_seconds, device)
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


def _run_folds(run: Run, cache, folds: list[FoldRange], done: set[int], read_seconds: float, device) -> None:
    """Upload once, build the trainer once, then every fold: taken over when done, else trained."""
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
    trainer = DQNTrainer(
        data,
        settings.dqn,
        max_train_rows=max(f.train_rows for f in folds),
        seed=settings.seed,
        eval_cost=settings.eval.cost,
        eval_spread=settings.eval.spread,
    )
    curves = {}
    for fold_range in folds:
        run.check()
        run.current_fold = fold = fold_range.fold
        if fold in done:
            report, curves[fold] = load_fold(out_uri, fold)
            run.fold_finished(report, None)
            progress(f"fold {fold} skipped: completed by an earlier attempt, outputs verified")
            continue
        report, curves[fold], outputs = train_fold(
            trainer, fold_range, settings.epochs, out_uri, progress, run.check
        )
        run.fold_finished(report, outputs)
        p = report.phases
        progress(
            f"fold {fold} done: reset {p['reset'] * 1e3:.1f}ms normalize {p['normalize'] * 1e3:.1f}ms "
            f"train {p['train']:.2f}s validation Sharpe {report.validation.model.sharpe:.2f}"
        )
    summary.graph_captures = trainer.graph_captures
    try:
        png = render_run_png(summary, curves, f"foxhunt run {summary.run_id} on {device}")
    except ImportError as exc:  # a slim image without matplotlib still trains and reports in JSON
        progress(f"run.png not drawn: {exc}")
    else:
        storage.write_bytes(storage.join(out_uri, "run.png"), png)


def pipeline(
    bars_uris: list[str] | None,
    out_uri: str,
    settings: RunConfig,
    *,
    sample_bars: int = SAMPLE_BARS,
    tz: str | None = None,
    progress: Progress | None = None,
) -> RunSummary:
    """Precompute then train, locally; with no bars, on generated sample bars."""
    fxcache_uri = storage.join(out_uri, "features.fxcache")
    settings = replace(settings, run_id=resolve_run_id(settings.run_id))  # one id for both steps' lines
    emit = progress or console(settings.log_format, settings.run_id)

    def prepare() -> dict:
        return precompute(
            bars_uris, fxcache_uri, tz=tz, sample_bars=sample_bars, seed=settings.seed, progress=emit
        )

    return train(fxcache_uri, out_uri, settings, emit, prepare=prepare)
