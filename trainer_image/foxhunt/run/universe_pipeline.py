"""`foxhunt pipeline --bars A --bars B ...`: each instrument's bars (one `--bars` group each, named by its
first file) read and checked, all of them before anything is written (a universe whose instruments share
no time is refused with nothing in `--out`), then precomputed to ``instruments/<name>.fxcache`` under
`--out`, then `universe_run.train_universe` on all of them."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import PurePosixPath

from foxhunt import storage
from foxhunt.config import RunConfig
from foxhunt.data.bars import read_bars
from foxhunt.data.universe_inputs import check_overlap
from foxhunt.errors import UsageError
from foxhunt.run.fold import Progress
from foxhunt.run.out_folder import check_inputs_outside
from foxhunt.run.precompute import check_bars_and_output, precompute_bars
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
    check_overlap([(bars.source, int(bars.timestamp[0]), int(bars.timestamp[-1])) for bars in read])
    uris = []
    for name, bars, start in zip(names, read, started, strict=True):
        uri = storage.join(out_uri, INSTRUMENTS_FOLDER, f"{name}.fxcache")
        precompute_bars(bars, uri, start=start, progress=progress, keep_other=not settings.overwrite)
        uris.append(uri)
    return train_universe(uris, out_uri, settings, progress)
