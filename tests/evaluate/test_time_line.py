"""The run's last words on time: where a run's seconds went, from its summary (data, the folds trained here
by phase, the rest), so a user sees what to change before the next run."""

from dataclasses import replace

from support.telemetry_cases import fold_report

from foxhunt.config import PHASES
from foxhunt.evaluate.reports import RunSummary, time_line


def _summary(**changes) -> RunSummary:
    folds = []
    for fold, seconds in ((0, 3.0), (1, 5.0)):
        phases = dict.fromkeys(PHASES, 0.05) | {
            "collect": 0.5,
            "train": 1.0 + fold,
            "select": 0.75,
            "validate": 0.5,
        }
        folds.append(replace(fold_report(fold), phases=phases, fold_seconds=seconds))
    fields = dict(run_id="r", model="dqn", device="cpu", version="0", fxcache="x", fxcache_checksum=None, rows=1,
                  epochs=1, seed=0, trials=0, fold_config={}, dqn_config={}, eval_config={}, started_at="",
                  folds=folds, data_load_seconds=0.5, run_seconds=10.0)  # fmt: skip
    return RunSummary(**{**fields, **changes})


def test_the_time_line_splits_the_run_into_data_the_folds_phases_and_the_rest():
    line = time_line(_summary())
    assert line.startswith("time: 10.0 s: data 0.5 s, 2 folds 8.0 s (")
    assert "train 3.0 s, select 1.5 s, collect 1.0 s, validate 1.0 s" in line
    assert line.endswith("the rest 1.5 s (trainer build, the run's scoring, pictures and files)")


def test_folds_taken_over_from_an_earlier_attempt_are_not_this_runs_time():
    line = time_line(_summary(resumed_folds=[0]))
    assert "1 fold 5.0 s (" in line and "train 2.0 s" in line and "the rest 4.5 s" in line


def test_the_phases_are_named_largest_first_and_the_small_ones_together():
    line = time_line(_summary())
    assert line.index("train") < line.index("select") < line.index("collect")
    assert "reset, normalize and checkpoint 0.3 s" in line


def test_a_run_that_trained_no_fold_here_says_so():
    line = time_line(_summary(resumed_folds=[0, 1]))
    assert ", no fold trained here, the rest 9.5 s" in line and "(" not in line.split("rest")[0]


def test_with_several_seeds_the_rest_holds_the_other_seeds_validation():
    line = time_line(_summary(seed_spread={"figures": {}}))
    assert "the rest 1.5 s (trainer build, the other seeds' validation, the run's scoring" in line
