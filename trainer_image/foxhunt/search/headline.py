"""The trade list, daily and monthly files of a search's headline, as an ordinary run writes them for its
stitched record (`evaluate.trades`): `trades.parquet`, `daily.csv` and `monthly.csv` at the top of `--out`.

The headline is the held-out final period (`--holdout-days`: the chosen settings' fold trained after the
search, never seen by any trial), or where there is none the best trial's stitched out-of-sample record,
which is what the search selected on (optimistic: `study.json` says which one the files hold).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from foxhunt import out_names, storage
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.evaluation import Scoring
from foxhunt.evaluate.records import fold_record, host_array, stitch
from foxhunt.evaluate.trades import record_tables
from foxhunt.run.fold import load_fold

TABLE_FILES = (out_names.TRADES, out_names.DAILY, out_names.MONTHLY)


def headline_tables(
    data, folds: Sequence[FoldRange], positions: Mapping[int, np.ndarray], scoring: Scoring
) -> dict[str, bytes]:
    """The three files of the model's positions over `folds`' validation windows (stitched as a run's
    folds are), beside buy-and-hold on the same bars, net of `scoring`'s costs and execution model."""
    returns = host_array(data.targets[:, 0])
    model, held = [], []
    for fold in folds:
        model.append(fold_record(fold.fold, fold.val_start, positions[fold.fold], data.timestamp, returns))
        held.append(fold_record(fold.fold, fold.val_start, np.ones(fold.val_rows), data.timestamp, returns))
    return record_tables(stitch(model), stitch(held), scoring.cost_per_unit, scoring.execution)


def write_headline_tables(
    out_uri: str,
    data,
    scoring: Scoring,
    folds: Sequence[FoldRange],
    trial: int,
    holdout: FoldRange | None = None,
) -> dict[str, Any]:
    """Write the headline's files into `out_uri`: the held-out fold's (`holdout`, read from `holdout/`), or
    best trial `trial`'s folds' (read from its folder); returns what they hold, for `study.json`."""
    if holdout is not None:
        where, chosen = storage.join(out_uri, out_names.HOLDOUT_DIR), [holdout]
        record = f"the held-out final period (fold {holdout.fold}), best trial {trial}'s settings"
    else:
        where, chosen = storage.join(out_uri, out_names.trial_folder(trial)), list(folds)
        record = (
            f"best trial {trial}'s stitched out-of-sample record over {len(chosen)} fold(s), the record the "
            "search selected on (optimistic: no held-out period was asked for)"
        )
    positions = {f.fold: load_fold(where, f.fold).positions for f in chosen}
    tables = headline_tables(data, chosen, positions, scoring)
    for name, content in tables.items():
        storage.write_bytes(storage.join(out_uri, name), content)
    return {"record": record, "files": list(tables)}
