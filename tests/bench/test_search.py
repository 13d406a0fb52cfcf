"""bench/search.py: a study's figures read from its own files, and each population size against the first."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import search  # noqa: E402


def _study(folder: Path, durations: list[float | None], folds: list[int], finished: int) -> Path:
    folder.mkdir()
    rows = [{"duration_seconds": d, "folds_run": f} for d, f in zip(durations, folds, strict=True)]
    (folder / "trials.json").write_text(json.dumps(rows))
    (folder / "study.json").write_text(json.dumps({"finished_trials": finished, "states": {"COMPLETE": finished},
                                                   "trainers": 1, "best": {"objective": 1.25}}))  # fmt: skip
    (folder / "summary.json").write_text(json.dumps({"run_seconds": 50.0, "data_load_seconds": 1.0}))
    return folder


def test_rates_are_per_hour_of_the_wall_trials_as_the_study_counts_them_folds_as_they_ran(tmp_path):
    out = _study(tmp_path / "s", [10.0, 20.0, None], [3, 1, 0], finished=3)
    figures = search.study_figures(out, wall=60.0)
    assert figures["trials_per_hour"] == pytest.approx(180.0)
    assert figures["folds_per_hour"] == pytest.approx(240.0)
    assert figures["trial_seconds_median"] == 15.0
    assert figures["outside_trials_seconds"] == pytest.approx(30.0)
    assert figures["best_objective"] == 1.25


def test_a_populations_overlapping_trials_give_no_seconds_outside_them(tmp_path):
    out = _study(tmp_path / "s", [40.0, 45.0], [3, 3], finished=2)
    assert search.study_figures(out, wall=60.0, population=8)["outside_trials_seconds"] is None


def _fold_report(out: Path, trial: int, fold: int, fold_seconds: float = 0.0, **phases: float) -> None:
    folder = out / "trials" / f"{trial:04d}" / f"fold_{fold}"
    folder.mkdir(parents=True)
    every = {
        "reset": 0.0,
        "normalize": 0.0,
        "collect": 0.0,
        "train": 0.0,
        "select": 0.0,
        "validate": 0.0,
        "checkpoint": 0.0,
    }
    (folder / "report.json").write_text(
        json.dumps({"phases": {**every, **phases}, "fold_seconds": fold_seconds})
    )


def test_a_rounds_shared_training_counts_once_and_each_members_validation_counts_for_it(tmp_path):
    # two trials side by side at fold 0 (one round: the same collect and train), one alone at fold 1
    _fold_report(tmp_path, 0, 0, collect=1.0, train=6.0, validate=0.5, checkpoint=0.1)
    _fold_report(tmp_path, 1, 0, collect=1.0, train=6.0, validate=0.7, checkpoint=0.1)
    _fold_report(tmp_path, 0, 1, collect=2.0, train=8.0, validate=0.9, checkpoint=0.1)
    where = search.round_phases(tmp_path, wall=40.0)
    assert where["rounds"] == 2 and where["member_folds"] == 3
    assert where["training_seconds"] == pytest.approx(17.0)  # 1 + 6 once, then 2 + 8
    assert where["member_seconds"] == pytest.approx(2.4)  # 0.6 + 0.8 + 1.0
    assert where["training_share"] == pytest.approx(17.0 / 40.0)
    assert where["member_share"] == pytest.approx(2.4 / 40.0)
    assert where["member_seconds_median"] == pytest.approx(0.8)


def test_a_round_lasts_as_long_as_its_last_member_and_the_rest_is_what_neither_phase_holds(tmp_path):
    _fold_report(tmp_path, 0, 0, fold_seconds=8.0, collect=1.0, train=6.0, select=0.4, validate=0.5)
    _fold_report(tmp_path, 1, 0, fold_seconds=9.5, collect=1.0, train=6.0, select=0.4, validate=0.7)
    where = search.round_phases(tmp_path, wall=19.0)
    assert where["round_seconds"] == pytest.approx(9.5) and where["rounds_share"] == pytest.approx(0.5)
    assert where["selection_seconds"] == pytest.approx(0.4)
    assert where["rest_of_rounds_seconds"] == pytest.approx(9.5 - 7.0 - 0.4 - 1.2)


def test_each_size_is_compared_with_the_first_and_a_failed_study_is_left_out():
    studies = {"1": {"exit_code": 0, "trials_per_hour": 100.0, "folds_per_hour": 300.0},
               "8": {"exit_code": 0, "trials_per_hour": 150.0, "folds_per_hour": 330.0},
               "4": {"exit_code": 1, "wall_seconds": 3.0}}  # fmt: skip
    ratios = search.ratios(studies)
    assert ratios["8"] == pytest.approx({"trials_per_hour_vs_first": 1.5, "folds_per_hour_vs_first": 1.1})
    assert ratios["1"]["trials_per_hour_vs_first"] == 1.0 and "4" not in ratios


def test_a_primed_search_first_runs_one_trial_of_one_epoch_with_the_measured_flags(tmp_path, monkeypatch):
    ran: list[tuple[str, int, int, tuple]] = []

    def study(args, work, fxcache, name, *flags):
        ran.append((name, args.trials, args.epochs, flags))
        return {"exit_code": 0, "wall_seconds": 10.0}

    monkeypatch.setattr(search, "study", study)
    args = search.parse_args(["search", "--bars", "1000", "--primed", "--repeats", "2", "--device", "cpu"])
    record: dict = {"targets": {}}
    monkeypatch.setattr("foxhunt.run.precompute.precompute", lambda *a, **k: None)
    search.search(args, tmp_path, record)
    measured = ("--population", "8", "--holdout-days", "90.0")
    assert ran == [("prime", 1, 1, measured), ("search0", 64, 20, measured), ("search1", 64, 20, measured)]
    assert "primer" in record["targets"]["search_64_trials_wall_seconds"]["how"]


def test_train_flags_given_before_the_out_reach_the_studies_beside_those_after_a_double_dash():
    args = search.parse_args(
        [
            "search",
            "--bars",
            "100",
            "--train-flag=--diagnostics-every=20",
            "--out",
            "x.json",
            "--",
            "--seed",
            "1",
        ]
    )
    assert (args.train_flags, args.extra, args.out) == (["--diagnostics-every=20"], ["--seed", "1"], "x.json")
