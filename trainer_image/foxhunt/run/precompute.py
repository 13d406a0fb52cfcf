"""The precompute step: bars → 42 features + 4 targets → fxcache, a no-op when the fxcache exists for the
same bars; and the checks of the bars and the output made before a bar is read."""

from __future__ import annotations

import time
from dataclasses import dataclass

from foxhunt import storage
from foxhunt.config import SAMPLE_BARS
from foxhunt.data.bars import Bars, check_reading_options, generate_sample_bars, iso_utc, read_bars
from foxhunt.data.features import compute_features
from foxhunt.data.fxcache import fxcache_matches, write_fxcache
from foxhunt.data.overlay import plant_overlay
from foxhunt.data.sample import NEWS_JUMP_SIGMAS
from foxhunt.errors import UsageError
from foxhunt.run.lifecycle import Progress


@dataclass(frozen=True)
class OverlayOptions:
    """`--overlay-drift` and `--overlay-seed`: the sample's news process over real bars, and its size."""

    drift_multiple: float  # the planted drift relative to the bars' noise, in units of the sample's
    seed: int = 0  # which news bars and directions


def _print(msg: str) -> None:
    print(msg, flush=True)


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
    overlay: OverlayOptions | None = None,
) -> dict:
    """Bars → 42 features + 4 targets → fxcache at `out_uri`; a no-op when it exists for the same bars.
    `keep_other`: an fxcache there built from other bars is refused (UsageError), not replaced.
    `overlay`: the sample's news process laid over the bars first (`foxhunt.data.overlay`)."""
    start = time.perf_counter()
    check_bars_and_output(bars_uris, tz, timestamp_unit, out_uri, folder=False)
    check_overlay(overlay, bars_uris)
    bars = (
        read_bars(bars_uris, tz=tz, timestamp_unit=timestamp_unit)
        if bars_uris
        else generate_sample_bars(sample_bars, seed=seed, signal=sample_signal)
    )
    planted: dict = {}
    if overlay is not None:
        bars, planted = overlaid(bars, overlay, progress)
    built = precompute_bars(bars, out_uri, start=start, force=force, progress=progress, keep_other=keep_other)
    return {**built, **planted}


def precompute_bars(
    bars: Bars,
    out_uri: str,
    *,
    start: float | None = None,
    force: bool = False,
    progress: Progress = _print,
    keep_other: bool = False,
) -> dict:
    """Bars already read → their fxcache at `out_uri` (`precompute` without the reading); a no-op when it
    exists for the same bars. `start`: when the step began (default: now)."""
    start = time.perf_counter() if start is None else start
    if not force:
        hit = _cache_hit(bars, out_uri, start, progress, keep_other)
        if hit is not None:
            return hit
    t_read = time.perf_counter() - start
    progress(
        f"read {len(bars):,} bars from {bars.source} in {t_read:.2f}s; computing 42 features and 4 targets"
    )
    return _build(bars, out_uri, start, progress)


def _cache_hit(bars: Bars, out_uri: str, start: float, progress: Progress, keep_other: bool) -> dict | None:
    """The step's record when `out_uri` already holds the fxcache of these bars, else None.
    `keep_other`: an fxcache there built from other bars is refused (UsageError)."""
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
        raise _other_fxcache(out_uri)
    return None


def refuse_other_fxcache(bars: Bars, out_uri: str) -> None:
    """Before work: refuse (UsageError) an fxcache at `out_uri` built from other bars than `bars`, as
    `precompute_bars(..., keep_other=True)` would once it came to them."""
    if fxcache_matches(out_uri, bars.content_hash) is None and storage.exists(out_uri):
        raise _other_fxcache(out_uri)


def _other_fxcache(out_uri: str) -> UsageError:
    return UsageError(
        f"{out_uri} holds the fxcache of an earlier run, built from other bars; use the same "
        "bars to resume it, another --out, or --overwrite to start over"
    )


def _build(bars: Bars, out_uri: str, start: float, progress: Progress) -> dict:
    """Compute the features of `bars` and write their fxcache; the step's record (`start`: the step's)."""
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


def check_bars_and_output(
    bars_uris: list[str] | None, tz: str | None, timestamp_unit: str | None, out_uri: str, *, folder: bool
) -> None:
    """Before reading a bar: the reading options, every bars input, and an `out_uri` that can be written
    and overwrites no bars file (`precompute --out <the bars file>` would replace it). UsageError (exit 2)."""
    check_reading_options(tz, timestamp_unit)
    for uri in bars_uris or ():
        storage.check_input(uri)
    storage.check_output(out_uri, inputs=bars_uris or (), folder=folder)


def check_overlay(overlay: OverlayOptions | None, bars_uris: list[str] | None) -> None:
    """An overlay needs real bars and a drift multiple ≥ 0 (UsageError, exit 2, before a bar is read)."""
    if overlay is None:
        return
    if not bars_uris:
        raise UsageError(
            "--overlay-drift lays the sample's news over real bars: give --bars (the generated sample "
            "carries its own news; --sample-signal off is its driftless twin)"
        )
    if not overlay.drift_multiple >= 0 or overlay.drift_multiple == float("inf"):
        raise UsageError(f"--overlay-drift {overlay.drift_multiple}: expected a finite number ≥ 0")


def overlaid(bars: Bars, overlay: OverlayOptions, progress: Progress) -> tuple[Bars, dict]:
    """The bars with the news process laid over them, and the record of it for the run's summary."""
    planted = plant_overlay(bars, drift_multiple=overlay.drift_multiple, seed=overlay.seed)
    record = {
        "drift_multiple": overlay.drift_multiple,
        "seed": overlay.seed,
        "sigma": planted.sigma,
        "drift_per_bar": planted.drift,
        "jump_sigmas": NEWS_JUMP_SIGMAS,
        "news_bars": int(planted.news.sum()),
        "source": planted.bars.source,
    }
    progress(
        f"overlay: {record['news_bars']:,} news bars (seed {overlay.seed}) over {len(bars):,} bars, "
        f"jump {planted.sigma * 1e4 * NEWS_JUMP_SIGMAS:.2f} bp, drift {overlay.drift_multiple:g}x = "
        f"{planted.drift * 1e4:.4f} bp a bar (the bars' sigma {planted.sigma * 1e4:.3f} bp)"
    )
    return planted.bars, {"overlay": record}
