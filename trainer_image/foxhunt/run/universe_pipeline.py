"""`foxhunt pipeline --bars A --bars B ...`: each instrument's bars (one `--bars` group each, named by its
first file) read and checked, all of them before anything is written (an instrument too short for a
feature row, instruments whose feature rows share no time, or an fxcache in `--out` built from other bars
are refused with nothing new in `--out`), then precomputed to ``instruments/<name>.fxcache`` under
`--out`, then `universe_run.train_universe` on all of them."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import PurePosixPath

from foxhunt import storage
from foxhunt.config import RunConfig
from foxhunt.data.bars import Bars, read_bars
from foxhunt.data.features import feature_bars
from foxhunt.data.universe_inputs import check_overlap
from foxhunt.errors import UsageError
from foxhunt.run.fold import Progress
from foxhunt.run.out_folder import check_inputs_outside
from foxhunt.run.precompute import check_bars_and_output, precompute_bars, refuse_other_fxcache
from foxhunt.run.universe_run import SUMMARY, UniverseResult, check_universe_settings, train_universe
from foxhunt.run.universe_walk import INSTRUMENTS_FOLDER


def bars_instrument_name(group: Sequence[str]) -> str:
    """An instrument's name in a pipeline universe: the stem of its first bars file."""
    return PurePosixPath(group[0].rstrip("/")).name.split(".")[0]


def pipeline_universe(
    bars_groups: Sequence[Sequence[str]],
    out_uri: str,
    settings: RunConfig,
    *,
    tz: str | None = None,
    timestamp_unit: str | None = None,
    progress: Progress = print,
) -> UniverseResult:
    """Read every group of bars files (one instrument each), refuse instruments that share no time, then
    precompute each under `out_uri` and train one trainer on all of them (`train_universe`). The inputs and
    names are checked before a bar is read."""
    check_universe_settings(settings)
    names = [bars_instrument_name(group) for group in bars_groups]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise UsageError(f"--bars {bars_groups[i][0]}: instrument name {name!r} given twice")
    for group in bars_groups:
        check_bars_and_output(list(group), tz, timestamp_unit, out_uri, folder=True)
    check_inputs_outside(out_uri, [uri for group in bars_groups for uri in group])
    if storage.exists(storage.join(out_uri, SUMMARY)) and not settings.overwrite:
        raise UsageError(f"{out_uri}: holds a run already; give another --out or --overwrite")
    started, read = [], []
    for group in bars_groups:  # every instrument read (and its rows checked) before one is written
        started.append(time.perf_counter())
        read.append(read_bars(list(group), tz=tz, timestamp_unit=timestamp_unit))
    uris = [storage.join(out_uri, INSTRUMENTS_FOLDER, f"{name}.fxcache") for name in names]
    check_before_writing(read, uris, keep_other=not settings.overwrite)
    for bars, uri, start in zip(read, uris, started, strict=True):
        precompute_bars(bars, uri, start=start, progress=progress, keep_other=not settings.overwrite)
    return train_universe(uris, out_uri, settings, progress)


def check_before_writing(read: Sequence[Bars], uris: Sequence[str], *, keep_other: bool) -> None:
    """Refuse, before a first fxcache is written, what `precompute_bars` or `read_universe` would refuse
    after: bars too short for a feature row, instruments whose feature rows share no time, and (with
    `keep_other`) an fxcache at an instrument's URI built from other bars."""
    check_overlap([feature_span(bars) for bars in read])
    if keep_other:
        for bars, uri in zip(read, uris, strict=True):
            refuse_other_fxcache(bars, uri)


def feature_span(bars: Bars) -> tuple[str, int, int]:
    """The bars' source and the times of their first and last feature rows (the span of their fxcache,
    which drops the warm-up and the bars without a full target); BarsError when there are none."""
    lo, hi = feature_bars(bars)
    return bars.source, int(bars.timestamp[lo]), int(bars.timestamp[hi - 1])
