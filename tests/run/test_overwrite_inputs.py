"""`--overwrite` never removes an input or a file it cannot show a run wrote: a --hyperopt-params file
inside --out is refused before anything is read or removed, and without a manifest the files named
like a run's outputs are taken for the user's own."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import pytest
from support.run_cases import ONE_FOLD, copy_run, train_argv

from foxhunt.cli import main


def listing(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def one_line(capsys) -> str:
    (line,) = capsys.readouterr().err.strip().splitlines()
    return line


@pytest.mark.parametrize("where", ["params.json", "notes/params.json"])
def test_hyperopt_params_inside_out_are_refused_before_any_deletion(
    where, one_fold_run, tiny_fxcache, tiny_params, tmp_path, capsys
):
    out = copy_run(one_fold_run, tmp_path / "out")
    inside = out / where
    inside.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(tiny_params, inside)
    before = listing(out)

    assert main(train_argv(tiny_fxcache, out, inside, *ONE_FOLD, "--overwrite")) == 2

    line = one_line(capsys)
    assert line.startswith("foxhunt train: error: --hyperopt-params") and "inside --out" in line
    assert listing(out) == before


@pytest.mark.parametrize("overwrite", [(), ("--overwrite",)])
def test_a_folder_of_the_users_files_named_like_outputs_but_no_manifest_loses_nothing(
    overwrite, tiny_fxcache, tiny_params, tmp_path, capsys
):
    out = tmp_path / "mine"
    out.mkdir()
    for name in ("daily.csv", "monthly.csv", "run.png"):
        (out / name).write_text(f"my own {name}")
    before = listing(out)

    assert main(train_argv(tiny_fxcache, out, tiny_params, *ONE_FOLD, *overwrite)) == 2

    assert "no manifest" in one_line(capsys)
    assert listing(out) == before


def test_overwrite_in_a_folder_without_a_manifest_or_run_files_keeps_them_and_runs(
    tiny_fxcache, tiny_params, tmp_path
):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("kept")

    with contextlib.redirect_stdout(io.StringIO()):
        assert main(train_argv(tiny_fxcache, out, tiny_params, *ONE_FOLD, "--overwrite")) == 0

    assert (out / "notes.txt").read_text() == "kept" and (out / "manifest.json").exists()
