"""A universe run's time line: each universe fold trained here once, its shared phases once, its instruments'
validations and checkpoints added up, and the fold as long as its last instrument's report."""

from dataclasses import replace

import numpy as np
from support.telemetry_cases import fold_report

from foxhunt.config import PHASES
from foxhunt.run.fold import FoldOutcome
from foxhunt.run.universe_walk import UniverseOutcome, universe_fold_times


def _outcome(
    fold: int, instruments: dict[int, tuple[float, float]], taken_over: bool = False
) -> UniverseOutcome:
    """A universe fold whose instrument i validated for the given seconds and reported at the given time."""
    shared = dict.fromkeys(PHASES, 0.0) | {"collect": 0.5, "train": 2.0, "select": 1.0}
    outcomes = {
        i: FoldOutcome(
            replace(fold_report(fold), phases=shared | {"validate": validate}, fold_seconds=seconds),
            np.zeros(3),
            None,
            None if taken_over else {"x": "sha"},
        )
        for i, (validate, seconds) in instruments.items()
    }
    return UniverseOutcome(outcomes, None)


def test_a_universe_folds_shared_phases_count_once_and_its_instruments_validations_add_up():
    ((phases, seconds),) = universe_fold_times({0: _outcome(0, {0: (0.25, 4.0), 1: (0.5, 4.5)})})
    assert (phases["train"], phases["select"], phases["validate"], seconds) == (2.0, 1.0, 0.75, 4.5)


def test_a_universe_fold_taken_over_from_an_earlier_attempt_is_not_this_runs_time():
    times = universe_fold_times(
        {0: _outcome(0, {0: (0.25, 4.0)}, taken_over=True), 1: _outcome(1, {0: (0.5, 5.0)})}
    )
    assert [seconds for _, seconds in times] == [5.0]
