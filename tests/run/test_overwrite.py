"""`--overwrite` removes the run's own files and nothing else; no input lives inside --out; a refused
pipeline leaves the earlier run's fxcache as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.run_cases import ONE_FOLD, copy_run, train_argv

from foxhunt.cli import main
from foxhunt.run.out_folder import run_file

PIPELINE = ["--sample-bars", "30000", "--epochs", "1", "--train-days", "5", "--val-days", "2"]
PIPELINE += ["--step-days", "2", "--max-folds", "1", "--device", "cpu"]


def listing(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def used_out(one_fold_run, tmp_path) -> Path:
    """An --out holding one finished one-fold run (a copy of the session's)."""
    return copy_run(one_fold_run, tmp_path / "out")


@pytest.mark.parametrize(
    "foreign", ["fold_12/thesis.tex", "fold_00/x", "trials/0001/mine.txt", "fold_0/x.pt"]
)
def test_overwrite_refuses_a_folder_holding_a_file_no_run_wrote(
    foreign, used_out, tiny_fxcache, tiny_params, capsys
):
    (used_out / foreign).parent.mkdir(parents=True, exist_ok=True)
    (used_out / foreign).write_text("mine")
    before = listing(used_out)
    assert (
        main(train_argv(tiny_fxcache, used_out, tiny_params, *ONE_FOLD, "--epochs", "2", "--overwrite")) == 2
    )
    err = capsys.readouterr().err
    assert foreign in err and "not written by a foxhunt run" in err and len(err.strip().splitlines()) == 1
    assert listing(used_out) == before


def test_overwrite_refuses_a_symbolic_link_and_leaves_its_target(
    used_out, tiny_fxcache, tiny_params, tmp_path
):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "weights.pt").write_text("not the run's")
    (used_out / "fold_1").symlink_to(precious, target_is_directory=True)
    assert main(train_argv(tiny_fxcache, used_out, tiny_params, *ONE_FOLD, "--overwrite")) == 2
    assert (precious / "weights.pt").read_text() == "not the run's"
    assert (used_out / "manifest.json").exists()


def test_overwrite_removes_the_runs_files_and_keeps_others_beside_them(used_out, tiny_fxcache, tiny_params):
    (used_out / "notes.txt").write_text("kept")
    (used_out / "fold_0" / ".weights.pt.0123456789ab.tmp").write_text("left by a SIGKILL")
    (used_out / "fold_7").mkdir()
    (used_out / "fold_7" / "report.json").write_text("{}")  # an earlier run's fold this one does not reach
    assert (
        main(train_argv(tiny_fxcache, used_out, tiny_params, *ONE_FOLD, "--epochs", "2", "--overwrite")) == 0
    )
    names = set(listing(used_out))
    assert "notes.txt" in names and not any(n.startswith("fold_7") or n.endswith(".tmp") for n in names)
    assert {"manifest.json", "summary.json", "fold_0/weights.pt"} <= names


@pytest.mark.parametrize("where", ["fold_3/in.fxcache", "inputs/in.fxcache"])
def test_an_fxcache_inside_out_is_refused_before_work(where, tiny_fxcache, tiny_params, tmp_path, capsys):
    out = tmp_path / "out"
    inside = out / where
    inside.parent.mkdir(parents=True)
    inside.write_bytes(tiny_fxcache.read_bytes())
    assert main(train_argv(inside, out, tiny_params, *ONE_FOLD, "--overwrite")) == 2
    assert "an input inside --out" in capsys.readouterr().err
    assert inside.read_bytes() == tiny_fxcache.read_bytes() and listing(out) == {where: inside.read_bytes()}


def test_bars_inside_the_pipelines_out_are_refused(tmp_path, capsys):
    out = tmp_path / "out"
    (out / "bars").mkdir(parents=True)
    bars = out / "bars" / "b.csv"
    bars.write_text("timestamp,open,high,low,close,volume\n")
    assert main(["pipeline", "--bars", str(bars), "--out", str(out), *PIPELINE]) == 2
    assert "an input inside --out" in capsys.readouterr().err


def test_a_refused_pipeline_leaves_the_earlier_runs_fxcache_as_it_was(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["pipeline", "--out", str(out), *PIPELINE, "--seed", "0"]) == 0
    fxcache = out / "features.fxcache"
    before, stamp = fxcache.read_bytes(), fxcache.stat().st_mtime_ns
    capsys.readouterr()
    assert main(["pipeline", "--out", str(out), *PIPELINE, "--seed", "1"]) == 2
    assert "seed: 0 → 1" in capsys.readouterr().err
    assert fxcache.read_bytes() == before and fxcache.stat().st_mtime_ns == stamp
    # Same settings, other bars: refused once the bars are read, still before a byte is written.
    assert main(["pipeline", "--out", str(out), *PIPELINE, "--seed", "0", "--sample-bars", "30500"]) == 2
    assert "built from other bars" in capsys.readouterr().err
    assert fxcache.read_bytes() == before and fxcache.stat().st_mtime_ns == stamp


@pytest.mark.parametrize(
    ("name", "owned"),
    [
        ("manifest.json", True),
        ("timings.png", True),
        (".summary.json.0123456789ab.tmp", True),
        ("fold_3/weights.pt", True),
        ("fold_3/norm_stats_fold3.json", True),
        ("fold_3/thesis.tex", False),
        ("fold_3/sub/weights.pt", False),
        ("trials/0001/trial.json", True),
        ("trials/0001/fold_0/positions.npy", True),
        ("trials/0001/mine.txt", False),
        ("notes.txt", False),
    ],
)
def test_the_files_a_run_writes_are_known_by_name(name, owned):
    assert run_file(name) is owned


def test_temp_files_a_killed_write_left_are_removed_by_the_next_run(
    used_out, tiny_fxcache, tiny_params, capsys
):
    left = [
        used_out / "fold_0" / ".weights.pt.0123456789ab.tmp",
        used_out / ".manifest.json.abcdef012345.tmp",
    ]
    for path in left:
        path.write_bytes(b"half a write")
    (used_out / "notes.0123456789ab.tmp").write_text("not a run's temp name: kept")
    capsys.readouterr()
    assert main(train_argv(tiny_fxcache, used_out, tiny_params, *ONE_FOLD)) == 0  # resumes: nothing to train
    assert "removed 2 temp file(s) an interrupted write left" in capsys.readouterr().out
    assert not any(p.exists() for p in left) and (used_out / "notes.0123456789ab.tmp").exists()
