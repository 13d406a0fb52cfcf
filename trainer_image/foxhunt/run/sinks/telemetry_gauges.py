"""The run's figure gauges, each read off the plain figures a run hands its telemetry, and the label that
names the instrument they are of.

Every fold, stitched and held-out gauge carries an `instrument` label: the run's instrument (a
single-instrument run: its name, from the fxcache's file name) or `book` for the several instruments
combined (`foxhunt.evaluate.book`). The metric names are the single-instrument ones; a query that names
no instrument reads them as before. A search's fold gauges also carry a `trial` label (its trials walk the
same folds, so one `fold` label would keep only the last trial's); a run outside a search leaves it empty,
which Prometheus reads as no label.
"""

from __future__ import annotations

from collections.abc import Callable

from foxhunt.run.sinks.telemetry_figures import FoldFigures, HoldoutFigures, StitchedFigures

INSTRUMENT = "instrument"  # the label
BOOK = "book"  # its value for the book (the same word as `foxhunt.evaluate.book.BOOK`)
TRIAL = "trial"  # a search's trial number on its fold gauges; empty (no label) outside a search


def instrument_name(uri: str) -> str:
    """An instrument's label value from its fxcache's (or bars') URI: the file name up to its first dot."""
    return uri.rstrip("/").rsplit("/", 1)[-1].split(".", 1)[0]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


# One gauge per fold figure, labelled by fold (and instrument): (name, help, how to read it from the fold's figures).
FOLD_GAUGES: tuple[tuple[str, str, Callable[[FoldFigures], float]], ...] = (
    ("foxhunt_fold_seconds", "Wall seconds of a whole fold.", lambda f: f.fold_seconds),
    (
        "foxhunt_fold_epoch_seconds",
        "Mean seconds per training epoch of a fold.",
        lambda f: _mean(list(f.epoch_seconds)),
    ),
    (
        "foxhunt_fold_last_epoch_seconds",
        "Seconds of a fold's last epoch.",
        lambda f: f.epoch_seconds[-1] if f.epoch_seconds else 0.0,
    ),
    ("foxhunt_fold_epochs", "Training epochs run in a fold.", lambda f: len(f.epoch_seconds)),
    (
        "foxhunt_fold_samples_per_second",
        "Training samples per second of a fold.",
        lambda f: f.samples_per_second,
    ),
    ("foxhunt_fold_final_loss", "Training loss of a fold's last epoch.", lambda f: f.final_loss),
    ("foxhunt_fold_train_rows", "Rows in a fold's training range.", lambda f: f.train_rows),
    ("foxhunt_fold_validation_rows", "Rows in a fold's validation range.", lambda f: f.val_rows),
    ("foxhunt_fold_difficulty_score", "Difficulty score of a fold's range.", lambda f: f.difficulty_score),
    (
        "foxhunt_fold_validation_sharpe",
        "Validation Sharpe ratio of the greedy policy.",
        lambda f: f.model.sharpe,
    ),
    (
        "foxhunt_fold_validation_return",
        "Validation total log return after costs.",
        lambda f: f.model.log_return,
    ),
    (
        "foxhunt_fold_validation_max_drawdown",
        "Validation maximum drawdown of the greedy policy.",
        lambda f: f.model.max_drawdown,
    ),
    (
        "foxhunt_fold_validation_turnover",
        "Validation turnover of the greedy policy.",
        lambda f: f.model.turnover,
    ),
)


# The held-out final period's gauges (--holdout-days; the run's headline): name → its figure.
HOLDOUT_GAUGES: dict[str, tuple[str, Callable[[HoldoutFigures], float]]] = {
    "foxhunt_holdout_net_sharpe": ("Annualised Sharpe after costs", lambda h: h.net_sharpe),
    "foxhunt_holdout_net_sharpe_ci_low": (
        "Lower bound of the bootstrap interval of the Sharpe",
        lambda h: h.net_sharpe_ci_low,
    ),
    "foxhunt_holdout_net_sharpe_ci_high": (
        "Upper bound of the bootstrap interval of the Sharpe",
        lambda h: h.net_sharpe_ci_high,
    ),
    "foxhunt_holdout_net_sharpe_se": ("Standard error (Lo 2002) of the Sharpe", lambda h: h.net_sharpe_se),
}
# The stitched record's gauges: name → (what it holds, how to read it from the stitched figures).
STITCHED_GAUGES: dict[str, tuple[str, Callable[[StitchedFigures], float]]] = {
    "foxhunt_stitched_validation_sharpe": ("Annualised Sharpe", lambda s: s.model.sharpe),
    "foxhunt_stitched_validation_sharpe_se": (
        "Standard error (Lo 2002) of the Sharpe",
        lambda s: s.model.sharpe_se,
    ),
    "foxhunt_stitched_return": ("Total log return", lambda s: s.model.log_return),
    "foxhunt_stitched_max_drawdown": ("Max drawdown", lambda s: s.model.max_drawdown),
}
