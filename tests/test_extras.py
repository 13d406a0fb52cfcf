"""A command that needs an extra says so, and without it exits 2 with the install line before any work."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import tomllib

from foxhunt import extras
from foxhunt.cli import main

REPO = Path(__file__).resolve().parents[1]


def without(monkeypatch, *modules: str) -> None:
    """Make `modules` look uninstalled to the extras check."""
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        extras.importlib.util, "find_spec", lambda name, *a: None if name in modules else find_spec(name, *a)
    )


@pytest.mark.parametrize("extra", ["train", "render"])
def test_each_extras_modules_are_its_pyproject_requirements(extra):
    requirements = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"][
        extra
    ]
    names = [re.split(r"[<>=\[ ]", r, maxsplit=1)[0].lower().replace("-", "_") for r in requirements]

    assert names == list(extras.EXTRA_MODULES[extra])


def test_train_without_numpy_exits_2_naming_numpy_and_the_install_line(monkeypatch, capsys, tmp_path):
    without(monkeypatch, "numpy")

    assert main(["train", "--fxcache", str(tmp_path / "in.fxcache"), "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == (
        "foxhunt train: error: foxhunt train needs the train extra, and numpy is not installed: "
        "pip install '.[train]' (in the foxhunt checkout)\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_render_without_hera_exits_2_with_the_install_line(monkeypatch, capsys, tmp_path):
    without(monkeypatch, "hera")

    assert main(["workflows", "render", "--out", str(tmp_path / "out")]) == 2
    assert "pip install '.[render]' (in the foxhunt checkout)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_submit_needs_no_extra(monkeypatch, capsys):
    without(monkeypatch, *extras.EXTRA_MODULES["train"], *extras.EXTRA_MODULES["render"])
    data = ["-p", "bars-uri=s3://d/b.parquet", "-p", "fxcache-uri=s3://d/f.arrow", "-p", "output-uri=s3://r"]

    assert main(["submit", *data, "--dry-run", "-o", "json"]) == 0


def test_every_missing_module_is_named(monkeypatch):
    monkeypatch.setitem(extras.REQUIRED_MODULES, "probe", ("json", "nothere_a", "nothere_b"))

    with pytest.raises(extras.UsageError, match=r"and nothere_a, nothere_b are not installed: pip install"):
        extras.require_extra("probe", "foxhunt x")


def test_train_on_local_files_needs_no_search_or_s3_library(monkeypatch, capsys, tmp_path):
    # The GPU image has torch, numpy and pyarrow but neither boto3 nor optuna: a plain run still starts.
    without(monkeypatch, "boto3", "optuna", "sqlalchemy", "psycopg")

    assert main(["train", "--fxcache", str(tmp_path / "in.fxcache"), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "extra" not in err and "in.fxcache" in err  # refused for the missing input, not the install


def test_a_training_command_needs_torch_numpy_and_pyarrow_first():
    assert extras.REQUIRED_MODULES["train"] == ("torch", "numpy", "pyarrow")
