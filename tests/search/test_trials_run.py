"""`foxhunt train --trials N`: a study of whole walk-forward runs on the tiny fxcache, through the CLI."""

from __future__ import annotations

import contextlib
import csv
import io
import re
import shutil
import sqlite3
import sys
from contextlib import closing

import pytest
from support import strict_json
from support.search_cases import LR_ONLY, read_json, search_argv, space_file
from support.trainer_cases import DEVICES

from foxhunt import storage
from foxhunt.cli import main

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def three_trials(tiny_fxcache, tiny_params, tmp_path_factory):
    """A finished study of three trials with the default space: its --out."""
    out = tmp_path_factory.mktemp("three") / "out"
    assert main(search_argv(tiny_fxcache, out, tiny_params, 3)) == 0
    return out


# ---- the study's outputs --------------------------------------------------------------------------------


def test_a_study_of_three_trials_leaves_a_table_a_folder_per_trial_and_a_deflated_sharpe(three_trials):
    rows = read_json(three_trials / "trials.json")
    table = list(csv.DictReader(io.StringIO((three_trials / "trials.csv").read_text())))
    assert [r["number"] for r in rows] == [0, 1, 2] and [t["number"] for t in table] == ["0", "1", "2"]
    assert {r["state"] for r in rows} == {"COMPLETE"} and {r["folds_run"] for r in rows} == {2}
    assert len({r["params"]["lr"] for r in rows}) == 3  # three settings tried, not one three times
    for row in rows:
        folder = three_trials / row["folder"]
        trial = read_json(folder / "trial.json")
        assert trial["objective"]["value"] == pytest.approx(row["objective"], rel=1e-12)
        assert trial["objective"]["name"] == "stitched_sharpe"
        assert trial["stitched"]["net"]["sharpe"] == trial["objective"]["value"]
        assert sorted(p.name for p in folder.glob("fold_*")) == ["fold_0", "fold_1"]
        assert (folder / "fold_1" / "report.json").exists() and (folder / "fold_1" / "weights.pt").exists()
    study = read_json(three_trials / "study.json")
    best = max(rows, key=lambda r: r["objective"])
    assert study["best"]["number"] == best["number"] and study["finished_trials"] == 3
    assert study["selection"]["n_trials"] == 3 and study["selection"]["counted"]["complete"] == 3
    assert study["selection"]["dsr"] is None or 0.0 <= study["selection"]["dsr"] <= 1.0
    assert study["selection"]["dsr_reading"].startswith("DSR ")
    overfitting = study["selection"]["overfitting"]  # two folds: below the minimum, not read
    assert (
        overfitting["pbo"] is None and "4 or more" in overfitting["reason"] and overfitting["folds"] == [0, 1]
    )
    assert read_json(three_trials / "summary.json")["folds_planned"] == 3 * 2  # trials × folds


def test_the_studys_dsr_and_pbo_are_its_user_attributes_read_back_through_optuna(three_trials):
    import optuna

    summary = read_json(three_trials / "study.json")
    storage = f"sqlite:///{three_trials / 'study.sqlite3'}"
    attrs = optuna.load_study(study_name=summary["study_name"], storage=storage).user_attrs
    selection = summary["selection"]

    assert attrs["dsr"] == selection["dsr"] and attrs["dsr_trial"] == selection["trial"]
    assert attrs["pbo"] == selection["overfitting"]["pbo"]
    # Undefined figures (this 2-fold study is below PBO's minimum of folds) are attributes too, as None.
    assert {"dsr", "pbo", "dsr_trial"} <= attrs.keys()


def test_a_search_without_a_holdout_writes_the_best_trials_trades_daily_and_monthly(three_trials):
    study = read_json(three_trials / "study.json")
    best = study["best"]["number"]
    assert study["headline_tables"]["files"] == ["trades.parquet", "daily.csv", "monthly.csv"]
    assert f"best trial {best}'s stitched out-of-sample record" in study["headline_tables"]["record"]
    trial = read_json(three_trials / "trials" / f"{best:04d}" / "trial.json")
    daily = list(csv.DictReader(io.StringIO((three_trials / "daily.csv").read_text())))
    monthly = list(csv.DictReader(io.StringIO((three_trials / "monthly.csv").read_text())))
    # The files are the best trial's record: its bars, and its net log return, day by day.
    assert sum(int(d["bars"]) for d in daily) == trial["stitched"]["net"]["n_bars"]
    assert sum(float(m["log_pnl"]) for m in monthly) == pytest.approx(
        trial["stitched"]["net"]["log_return"], abs=1e-9
    )
    assert (three_trials / "trades.parquet").stat().st_size > 0


def test_every_json_a_search_writes_is_strict_json(three_trials):
    # Trials score without the bootstrap: their intervals are undefined, written null, never a bare NaN.
    written = sorted(three_trials.rglob("*.json"))
    assert len(written) > 10
    for path in written:
        strict_json.read(path)


def test_the_manifest_records_every_fold_of_every_trial_with_its_checksums(three_trials):
    manifest = read_json(three_trials / "manifest.json")
    assert sorted(manifest["trials"]) == ["0", "1", "2"] and manifest["run"]["folds"] == {}
    outputs = manifest["trials"]["2"]["folds"]["1"]["outputs"]
    assert "trials/0002/fold_1/report.json" in outputs
    assert (
        manifest["search"]["objective"] == "stitched_sharpe" and manifest["search"]["storage"] == "embedded"
    )
    assert manifest["search"]["study_name"] == "out"  # the --out folder's name
    summary = read_json(three_trials / "summary.json")
    assert summary["status"] == "succeeded" and summary["trials"] == 3


def test_the_best_params_file_trains_again_to_the_best_trials_objective(three_trials, tiny_fxcache, tmp_path):
    best = read_json(three_trials / "study.json")["best"]
    out = tmp_path / "best"
    argv = search_argv(tiny_fxcache, out, three_trials / "best_params.json", 0)
    assert main(argv) == 0
    summary = read_json(out / "summary.json")
    assert summary["dqn_config"] == read_json(three_trials / "best_params.json")["dqn"]
    # Same settings, seed and folds on the CPU: the run's stitched net Sharpe is the trial's objective.
    assert summary["stitched"]["policies"]["model"]["net"]["sharpe"] == pytest.approx(
        best["objective"], rel=1e-9
    )


def test_a_finished_study_run_again_trains_nothing_more(
    three_trials, tiny_fxcache, tiny_params, tmp_path, capsys
):
    out = tmp_path / "out"
    shutil.copytree(three_trials, out)  # the finished study, left as it is for the other tests
    before = (out / "trials.json").read_text()
    assert main(search_argv(tiny_fxcache, out, tiny_params, 3)) == 0
    assert " epoch " not in capsys.readouterr().out
    assert (out / "trials.json").read_text() == before


def test_another_objective_is_the_figure_it_names(tiny_fxcache, tiny_params, tmp_path):
    out = tmp_path / "out"
    argv = search_argv(tiny_fxcache, out, tiny_params, 1, "--objective", "mean_fold_sharpe")
    assert main(argv) == 0
    trial = read_json(out / "trials" / "0000" / "trial.json")
    folds = list(trial["fold_net_sharpe"].values())
    assert trial["objective"]["value"] == pytest.approx(sum(folds) / len(folds), rel=1e-12)
    assert trial["objective"]["value"] != pytest.approx(trial["stitched"]["net"]["sharpe"], rel=1e-6)


def test_a_search_into_object_storage_keeps_its_study_there_and_a_new_pod_continues_it(
    moto_s3, tiny_fxcache, tiny_params, tmp_path, capsys
):
    out = moto_s3.uri("runs", "search")
    assert main(search_argv(tiny_fxcache, out, tiny_params, 2)) == 0
    for name in ("study.sqlite3", "trials.json", "best_params.json", "trials/0001/trial.json"):
        assert storage.exists(f"{out}/{name}"), name
    local = storage.download_file(f"{out}/study.sqlite3", tmp_path / "study.sqlite3")
    with closing(sqlite3.connect(local)) as db:
        assert db.execute("select count(*) from trials where state = 'COMPLETE'").fetchone() == (2,)
    capsys.readouterr()
    # A new pod has no local study: only the uploaded one can tell it that both trials are done.
    assert main(search_argv(tiny_fxcache, out, tiny_params, 2)) == 0
    assert " epoch " not in capsys.readouterr().out


# ---- one trainer per shape --------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_trials_of_shape_free_settings_share_one_trainer_one_capture_and_one_compile(
    device, request, tiny_fxcache, tiny_params, tmp_path
):
    if device == "cpu":  # the module's study of three trials is this search
        out = request.getfixturevalue("three_trials")
    else:
        out = tmp_path / "out"
        assert main(search_argv(tiny_fxcache, out, tiny_params, 3, device=device)) == 0
    cuda = device == "cuda"
    built = read_json(out / "study.json")["trainers"]
    assert built == {"builds": 1, "graph_captures": int(cuda), "compiles": int(cuda)}
    assert read_json(out / "summary.json")["graph_captures"] == int(cuda)


@pytest.mark.parametrize("device", DEVICES)
def test_each_batch_size_builds_its_own_trainer_once_and_trials_of_that_size_reuse_it(
    device, tiny_fxcache, tiny_params, tmp_path
):
    space = space_file(tmp_path, {**LR_ONLY, "batch_size": {"type": "categorical", "choices": [128, 256]}})
    out = tmp_path / "out"
    assert (
        main(search_argv(tiny_fxcache, out, tiny_params, 4, "--search-space", str(space), device=device)) == 0
    )
    sizes = [r["params"]["batch_size"] for r in read_json(out / "trials.json")]
    built = read_json(out / "study.json")["trainers"]
    assert len(sizes) == 4 and built["builds"] == len(set(sizes)) < len(sizes)
    assert built["graph_captures"] == built["compiles"] == (len(set(sizes)) if device == "cuda" else 0)


# ---- trials side by side (--population) ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def three_trials_side_by_side(tiny_fxcache, tiny_params, tmp_path_factory):
    """The `three_trials` study again, its trials trained two at a time as one batched population; what it
    printed is in console.log beside its --out."""
    out = tmp_path_factory.mktemp("side") / "out"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(search_argv(tiny_fxcache, out, tiny_params, 3, "--population", "2")) == 0
    (out.parent / "console.log").write_text(printed.getvalue())
    return out


def test_on_cpu_trials_side_by_side_find_what_trials_one_at_a_time_find(
    three_trials, three_trials_side_by_side
):
    alone, side = (read_json(out / "trials.json") for out in (three_trials, three_trials_side_by_side))
    assert [r["params"] for r in side] == [r["params"] for r in alone]
    assert {r["state"] for r in side} == {"COMPLETE"} and {r["folds_run"] for r in side} == {2}
    # Each member draws a lone trainer's numbers on the CPU; only the batched products round differently.
    assert [r["objective"] for r in side] == pytest.approx([r["objective"] for r in alone], rel=1e-6)
    for row in side:
        folder = three_trials_side_by_side / row["folder"]
        assert read_json(folder / "trial.json")["objective"]["value"] == row["objective"]
        assert (folder / "fold_1" / "weights.pt").exists() and (folder / "fold_1" / "positions.npy").exists()
    assert read_json(three_trials_side_by_side / "best_params.json") == read_json(
        three_trials / "best_params.json"
    )


def test_a_population_search_writes_its_manifest_once_a_round_and_each_fold_before_the_pruner_hears_of_it(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    # Catches: the manifest rewritten after every member's fold (6 writes here; 1,152 in a 64-trial search,
    # a minute of a P = 8 search's wall); a fold reported to the study before the manifest holds it (a
    # study that resumes would count a fold whose files no record vouches for).
    import foxhunt.search.driver as driver
    from foxhunt.search.trial_loop import AskedTrial

    written: list[set[tuple[int, int]]] = []
    write = driver.write_manifest

    def counted(out_uri, manifest):
        written.append({(n, f) for n, r in manifest.trials.items() for f in r.folds})
        write(out_uri, manifest)

    heard: list[tuple[int, int, set[tuple[int, int]]]] = []
    report = AskedTrial.report_fold

    def reported(self, fold, value, *, last=False):
        heard.append((self.number, fold, set(written[-1]) if written else set()))
        return report(self, fold, value, last=last)

    monkeypatch.setattr(driver, "write_manifest", counted)
    monkeypatch.setattr(AskedTrial, "report_fold", reported)
    out = tmp_path / "out"
    assert main(search_argv(tiny_fxcache, out, tiny_params, 3, "--population", "2")) == 0
    # Rounds: fold 0 of trials 0 and 1, their fold 1, then trial 2's folds 0 and 1.
    assert [sorted(w) for w in written] == [
        [(0, 0), (1, 0)],
        [(0, 0), (0, 1), (1, 0), (1, 1)],
        [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)],
        [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)],
    ]
    assert len(heard) == 6 and all((number, fold) in on_disk for number, fold, on_disk in heard)
    manifest = read_json(out / "manifest.json")
    assert {n: sorted(r["folds"]) for n, r in manifest["trials"].items()} == {
        str(n): ["0", "1"] for n in range(3)
    }


def test_a_population_search_writes_the_study_files_once_a_round_that_ends_trials_and_a_line_per_trial(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch, capsys
):
    # Catches: the files written after every trial (a round's members end together: 8 writes where 1 does,
    # 1.9 s of a 64-trial search's host work on the CPU); a trial's line counting from a stale save.
    import foxhunt.search.driver as driver

    saved: list[list[int]] = []
    write = driver.write_study_outputs

    def counted(study, *args, **kwargs):
        saved.append(sorted(t.number for t in study.get_trials(deepcopy=False) if t.state.is_finished()))
        return write(study, *args, **kwargs)

    monkeypatch.setattr(driver, "write_study_outputs", counted)
    assert main(search_argv(tiny_fxcache, tmp_path / "out", tiny_params, 3, "--population", "2")) == 0
    # Trials 0 and 1 end in one round, trial 2 in a later one; then the search's closing save.
    assert saved == [[0, 1], [0, 1, 2], [0, 1, 2]]
    printed = capsys.readouterr().out
    for number, finished in ((0, 1), (1, 2), (2, 3)):
        assert re.search(rf"trial {number} complete objective \S+; {finished}/3 finished", printed)


def test_each_trials_folds_are_pushed_under_its_trial_number(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    # Catches: the trials' figures for one fold pushed under one label set, where the last trial's hides the
    # others' on the dashboard.
    from foxhunt.run.sinks.telemetry import RunMetrics

    pushed: list[tuple[int, int | None]] = []
    finished = RunMetrics.fold_finished

    def recorded(self, figures, instrument=None, trial=None):
        pushed.append((figures.fold, trial))
        finished(self, figures, instrument, trial)

    monkeypatch.setattr(RunMetrics, "fold_finished", recorded)
    assert main(search_argv(tiny_fxcache, tmp_path / "out", tiny_params, 2, "--population", "2")) == 0
    assert sorted(pushed) == [(0, 0), (0, 1), (1, 0), (1, 1)]


@pytest.mark.parametrize("device", DEVICES)
def test_a_population_search_builds_one_population_with_one_capture_and_one_compile(
    device, request, tiny_fxcache, tiny_params, tmp_path, capsys
):
    if device == "cpu":  # the module's side-by-side study is this search
        out = request.getfixturevalue("three_trials_side_by_side")
        printed = (out.parent / "console.log").read_text()
    else:
        out = tmp_path / "out"
        assert main(search_argv(tiny_fxcache, out, tiny_params, 3, "--population", "2", device=device)) == 0
        printed = capsys.readouterr().out
    cuda = device == "cuda"
    assert read_json(out / "study.json")["trainers"] == {
        "builds": 1,
        "graph_captures": int(cuda),
        "compiles": int(cuda),
    }
    assert "trials 0, 1 side by side at fold 0 (2 of a population of 2)" in printed
    assert "trial 2 at fold 0 (1 of a population of 2)" in printed
    assert read_json(out / "study.json")["finished_trials"] == 3


@pytest.mark.parametrize("population", ["0", "17"])
def test_a_population_outside_1_to_16_exits_2_naming_the_flag(
    population, tiny_fxcache, tiny_params, tmp_path, capsys
):
    assert main(search_argv(tiny_fxcache, tmp_path / "out", tiny_params, 2, "--population", population)) == 2
    assert "--population" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# ---- checked before any work ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("space", "named"),
    [
        ({"lrr": {"type": "float", "low": 1e-4, "high": 1e-2}}, "lrr: not a DQN setting"),
        ({"gamma": {"type": "float", "low": 0.5, "high": 1.5}}, "gamma: high 1.5 is outside"),
        ({"eval_cost": {"type": "float", "low": 0.0, "high": 1e-3}}, "eval_cost: an evaluation setting"),
        ({"spread": {"type": "float", "low": 0.0, "high": 1e-3}}, "spread: an evaluation setting"),
    ],
)
def test_a_bad_search_space_exits_2_naming_the_key_before_any_work(
    space, named, tiny_fxcache, tiny_params, tmp_path, capsys
):
    out = tmp_path / "out"
    argv = search_argv(tiny_fxcache, out, tiny_params, 2, "--search-space", str(space_file(tmp_path, space)))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert named in err and "space.json" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (("--search-space", "space.json"), "--search-space: only for a search"),
        (("--study-name", "s"), "--study-name: only for a search"),
        (("--population", "2"), "--population: only for a search"),
        (("--pruner", "none"), "--pruner: only for a search"),
    ],
)
def test_search_flags_without_trials_exit_2(extra, named, tiny_fxcache, tiny_params, tmp_path, capsys):
    assert main(search_argv(tiny_fxcache, tmp_path / "out", tiny_params, 0, *extra)) == 2
    assert named in capsys.readouterr().err


def test_a_study_storage_that_is_no_url_exits_2_without_its_password(
    tiny_fxcache, tiny_params, tmp_path, capsys
):
    argv = search_argv(tiny_fxcache, tmp_path / "out", tiny_params, 2, "--study-storage", "pg:/x:hunter2@")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "not a usable SQLAlchemy URL" in err and "hunter2" not in err


def test_a_shared_study_needs_a_name_that_survives_a_restart(tiny_fxcache, tiny_params, tmp_path, capsys):
    argv = search_argv(
        tiny_fxcache, tmp_path / "out", tiny_params, 2, "--study-storage", f"sqlite:///{tmp_path}/s.db"
    )
    assert main(argv) == 2
    assert "--study-name" in capsys.readouterr().err


def test_a_search_where_optuna_is_not_installed_exits_2_naming_the_extra(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch, capsys
):
    monkeypatch.setitem(sys.modules, "foxhunt.search.driver", None)  # what a missing Optuna makes of it
    assert main(search_argv(tiny_fxcache, tmp_path / "out", tiny_params, 2)) == 2
    assert "pip install '.[train]'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_used_out_with_another_search_space_is_refused_naming_the_difference(
    three_trials, tiny_fxcache, tiny_params, tmp_path, capsys
):
    argv = search_argv(
        tiny_fxcache, three_trials, tiny_params, 3, "--search-space", str(space_file(tmp_path, LR_ONLY))
    )
    assert main(argv) == 2
    assert "search.space" in capsys.readouterr().err


# ---- resume -------------------------------------------------------------------------------------------------
