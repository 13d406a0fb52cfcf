"""The two steps end to end: bars → fxcache (precompute), fxcache → folds on one trainer (train)."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch

from foxhunt import __version__, storage
from foxhunt.bars import generate_sample_bars, iso_utc, read_bars
from foxhunt.config import PHASES, DQNConfig, FoldConfig
from foxhunt.features import FEATURE_NAMES, compute_features
from foxhunt.fxcache import fxcache_matches, read_fxcache, write_fxcache
from foxhunt.metrics import RunMetrics, resolve_pushgateway, resolve_run_id
from foxhunt.report import render_run_png
from foxhunt.trainer import DQNTrainer, resolve_device, synchronize, to_device
from foxhunt.walk_forward import FoldRange, generate_walk_forward_indices

Progress = Callable[[str], None]


def _print(msg: str) -> None:
    print(msg, flush=True)


class RunFailed(RuntimeError):
    """A failure during a run; the message says what failed and where the partial outputs are."""


# ---- precompute ---------------------------------------------------------------------------------
def precompute(
    bars_uris: list[str] | None,
    out_uri: str,
    *,
    tz: str | None = None,
    force: bool = False,
    sample_bars: int = 200_000,
    seed: int = 0,
    progress: Progress = _print,
) -> dict:
    """Bars → 42 features + 4 targets → fxcache at `out_uri`; a no-op when it exists for the same bars."""
    start = time.perf_counter()
    if bars_uris:
        bars = read_bars(bars_uris, tz=tz)
    else:
        bars = generate_sample_bars(sample_bars, seed=seed)
    if not force:
        existing = fxcache_matches(out_uri, bars.content_hash)
        if existing is not None:
            progress(f"fxcache hit: {out_uri} already holds {existing.get('rows')} rows built from these bars "
                     f"(sha256 {bars.content_hash[:12]}); nothing to do")
            return {"cache_hit": True, "out": out_uri, "rows_in": len(bars), "rows_out": int(existing.get("rows", 0)),
                    "seconds": time.perf_counter() - start}
    t_read = time.perf_counter() - start
    progress(f"read {len(bars):,} bars from {bars.source} in {t_read:.2f}s; computing 42 features and 4 targets")
    t0 = time.perf_counter()
    table = compute_features(bars)
    t_feat = time.perf_counter() - t0
    progress(f"features: {len(table):,} rows in {t_feat:.2f}s ({len(bars) / max(t_feat, 1e-9):,.0f} bars/s)")
    t0 = time.perf_counter()
    write_fxcache(out_uri, table, source_uri=bars.source, source_hash=bars.content_hash)
    t_write = time.perf_counter() - t0
    seconds = time.perf_counter() - start
    first, last = iso_utc(table.timestamp[0]), iso_utc(table.timestamp[-1])
    progress(f"precompute: {len(bars):,} bars in → {len(table):,} rows out, {first} → {last}, "
             f"wrote {out_uri} in {t_write:.2f}s, {seconds:.2f}s total")
    return {"cache_hit": False, "out": out_uri, "rows_in": len(bars), "rows_out": len(table),
            "first": first, "last": last, "seconds": seconds}


# ---- train --------------------------------------------------------------------------------------
@dataclass
class TrainSettings:
    """What one `foxhunt train` run needs besides its URIs."""

    epochs: int = 3
    model: str = "dqn"
    device: str = "auto"
    seed: int = 0
    trials: int = 0
    folds: FoldConfig = field(default_factory=FoldConfig)
    dqn: DQNConfig = field(default_factory=DQNConfig)
    pushgateway: str | None = None
    run_id: str | None = None
    metrics_port: int | None = None


def _write_json(uri: str, payload: dict) -> None:
    storage.write_bytes(uri, (json.dumps(payload, indent=2, sort_keys=False) + "\n").encode())


def train_fold(trainer: DQNTrainer, fold_range: FoldRange, epochs: int, out_uri: str,
               progress: Progress = _print) -> tuple[dict, object]:
    """One fold on the persistent trainer: reset, normalize, train, validate, checkpoint; returns its report."""
    device = trainer.device
    phases: dict[str, float] = {}
    fold = fold_range.fold
    fold_start = time.perf_counter()

    t0 = time.perf_counter()
    trainer.set_fold_range(fold_range)
    trainer.reset_for_fold(fold)
    synchronize(device)
    phases["reset"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    trainer.compute_norm_stats()
    synchronize(device)
    phases["normalize"] = time.perf_counter() - t0

    for epoch in range(epochs):
        stats = trainer.train_epoch(epoch, epochs)
        progress(f"fold {fold} epoch {epoch + 1}/{epochs}: loss {stats['loss']:.4f} eps {stats['epsilon']:.2f} "
                 f"{stats['steps']} steps {stats['seconds']:.2f}s {stats['samples_per_second']:,.0f} samples/s")
    history = trainer.history
    phases["collect"] = sum(history.collect_seconds)
    phases["train"] = sum(history.train_seconds)

    t0 = time.perf_counter()
    positions = trainer.greedy_positions()  # one rollout serves the metrics and the plot
    validation = trainer.evaluate(positions)
    curve = trainer.equity_curve(positions, fold_range.val_start)
    synchronize(device)
    phases["validate"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    fold_dir = storage.join(out_uri, f"fold_{fold}")
    buf = io.BytesIO()
    torch.save(trainer.state_dict_cpu(), buf)
    storage.write_bytes(storage.join(fold_dir, "weights.pt"), buf.getvalue())
    norm = {"fold": fold, "feature_names": list(FEATURE_NAMES), **trainer.norm_stats_dict()}
    _write_json(storage.join(fold_dir, f"norm_stats_fold{fold}.json"), norm)
    phases["checkpoint"] = time.perf_counter() - t0

    train_seconds = max(phases["train"], 1e-9)
    report = {
        **fold_range.to_dict(),
        "train_rows": fold_range.train_rows,
        "val_rows": fold_range.val_rows,
        "phases": {p: phases[p] for p in PHASES},
        "fold_seconds": time.perf_counter() - fold_start,
        "epoch_seconds": history.epoch_seconds,
        "samples_per_second": trainer.steps_done * trainer.config.batch_size / train_seconds,
        "final_loss": history.loss[-1] if history.loss else float("nan"),
        "loss": history.loss,
        "steps": trainer.steps_done,
        "validation": validation,
    }
    _write_json(storage.join(fold_dir, "report.json"), report)
    return report, curve


def train(fxcache_uri: str, out_uri: str, settings: TrainSettings, progress: Progress = _print,
          *, summary_extra: dict | None = None) -> dict:
    """The one-pod run: load the fxcache once, put it on the device once, train every fold on one trainer.

    `summary_extra` is merged into `summary.json` (the pipeline adds its precompute figures).
    """
    if settings.model != "dqn":
        raise ValueError(f"--model {settings.model}: only 'dqn' exists")
    if settings.trials != 0:
        raise ValueError("--trials > 0: hyperparameter search (Optuna) does not exist yet; use --trials 0")
    if settings.epochs < 1:
        raise ValueError(f"--epochs {settings.epochs}: must be at least 1")
    device = resolve_device(settings.device)
    run_id = resolve_run_id(settings.run_id)
    metrics = RunMetrics(run_id, pushgateway=resolve_pushgateway(settings.pushgateway), model=settings.model,
                         device=str(device), metrics_port=settings.metrics_port)
    metrics.run_started()
    run_start = time.perf_counter()

    t0 = time.perf_counter()
    cache = read_fxcache(fxcache_uri)
    data = to_device(cache.features, cache.targets, cache.timestamp, device)
    load_seconds = time.perf_counter() - t0
    metrics.data_loaded(load_seconds, len(cache))
    progress(f"loaded {len(cache):,} rows from {fxcache_uri} "
             f"({'cache hit' if cache.cache_hit else 'read'}) onto {device} in {load_seconds:.2f}s")

    folds = generate_walk_forward_indices(cache.timestamp, settings.folds, close_returns=cache.targets[:, 0])
    progress(f"{len(folds)} folds: " + ", ".join(f"{f.fold}: train {f.train_rows:,} val {f.val_rows:,}" for f in folds))
    trainer = DQNTrainer(data, settings.dqn, max_train_rows=max(f.train_rows for f in folds), seed=settings.seed)

    summary = {
        "run_id": run_id, "model": settings.model, "device": str(device), "version": __version__,
        "fxcache": fxcache_uri, "fxcache_checksum": cache.metadata.get("checksum"), "rows": len(cache),
        "data_load_seconds": load_seconds, "epochs": settings.epochs, "seed": settings.seed,
        "fold_config": asdict(settings.folds), "dqn_config": asdict(settings.dqn),
        "graph_captures": trainer.graph_captures, "folds": [], "status": "running", **(summary_extra or {}),
    }
    curves = {}
    try:
        for fold_range in folds:
            report, curve = train_fold(trainer, fold_range, settings.epochs, out_uri, progress)
            summary["folds"].append(report)
            curves[fold_range.fold] = curve
            metrics.fold_finished(report)
            p = report["phases"]
            progress(f"fold {fold_range.fold} done: reset {p['reset'] * 1e3:.1f}ms normalize {p['normalize'] * 1e3:.1f}ms "
                     f"train {p['train']:.2f}s validation Sharpe {report['validation']['sharpe']:.2f}")
    except (RuntimeError, OSError) as exc:  # TrainingDiverged is a RuntimeError
        summary["error"] = f"{type(exc).__name__}: {exc}"
        _finish(summary, "failed", metrics, run_start, out_uri)
        done = len(summary["folds"])
        raise RunFailed(f"fold {done} failed: {exc}; {done} completed fold(s) and summary.json are in {out_uri}") from exc
    try:
        png = render_run_png(summary["folds"], curves, f"foxhunt run {run_id} on {device}")
    except ImportError as exc:  # a slim image without matplotlib still trains and reports in JSON
        progress(f"run.png not drawn: {exc}")
    else:
        storage.write_bytes(storage.join(out_uri, "run.png"), png)
    _finish(summary, "succeeded", metrics, run_start, out_uri)
    return summary


def _finish(summary: dict, status: str, metrics: RunMetrics, run_start: float, out_uri: str) -> None:
    """Close the run: final push, then `summary.json` with the status and every push failure counted."""
    summary["status"] = status
    summary["run_seconds"] = time.perf_counter() - run_start
    metrics.run_finished(status)
    summary["push_failures"] = metrics.push_failures
    _write_json(storage.join(out_uri, "summary.json"), summary)


def fold_table(summary: dict) -> str:
    """A plain-text table of the folds: rows, phase seconds and validation Sharpe."""
    head = f"{'fold':>4} {'train':>9} {'val':>8} " + " ".join(f"{p:>10}" for p in PHASES) + f" {'sharpe':>8} {'b&h':>8}"
    lines = [head, "-" * len(head)]
    for r in summary["folds"]:
        v = r["validation"]
        lines.append(f"{r['fold']:>4} {r['train_rows']:>9,} {r['val_rows']:>8,} "
                     + " ".join(f"{r['phases'][p]:>10.4f}" for p in PHASES)
                     + f" {v['sharpe']:>8.2f} {v['buy_and_hold']['sharpe']:>8.2f}")
    return "\n".join(lines)


# The embedded default: small enough for 2 CPU cores in well under a minute.
PIPELINE_FOLDS = FoldConfig(train_days=60.0, val_days=20.0, step_days=20.0, max_folds=3)


def pipeline(bars_uris: list[str] | None, out_uri: str, settings: TrainSettings, *, sample_bars: int = 200_000,
             tz: str | None = None, progress: Progress = _print) -> dict:
    """Precompute then train, locally; with no bars, on generated sample bars."""
    fxcache_uri = storage.join(out_uri, "features.fxcache")
    pre = precompute(bars_uris, fxcache_uri, tz=tz, sample_bars=sample_bars, seed=settings.seed, progress=progress)
    return train(fxcache_uri, out_uri, settings, progress, summary_extra={"precompute": pre})
