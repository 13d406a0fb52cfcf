"""The base install is the light client: CLI, `workflows render` and `submit`, without torch.

A fresh virtualenv (no system site-packages) gets the package without extras, from the repo's wheel
and the base dependencies' wheels that scripts/test.sh downloads into .cache/light-wheels, with
`--no-index`: the test itself needs no network. It then runs the client's commands. Both virtualenvs
are built in the background from the session's start (tests/support/background_runs.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tomllib
from support.background_runs import BACKGROUND, STARTERS

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
WHEELHOUSE = REPO / ".cache" / "light-wheels"
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")
DATA = [
    "-p",
    "bars-uri=s3://d/bars.parquet",
    "-p",
    "fxcache-uri=s3://d/bars.arrow",
    "-p",
    "output-uri=s3://runs",
]
TRAINING_LIBRARIES = ("torch", "numpy", "scipy", "pyarrow", "matplotlib", "boto3", "prometheus_client")


def run(*argv: str | Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300, **kwargs)


def install(root: Path, extras: str = "") -> Path:
    """A fresh virtualenv under `root` with the package (and `extras`) installed offline from the wheelhouse."""
    assert WHEELHOUSE.is_dir(), (
        f"{WHEELHOUSE} is missing: scripts/test.sh downloads the base install's and render's wheels"
    )
    # Built from the files the image's build context has too, so the packaging needs nothing else,
    # and in a copy, so the build leaves nothing in the repo.
    source = root / "source"
    for part in ("pyproject.toml", "README.md", "trainer_image/foxhunt", "foxhunt_workflows"):
        (source / part).parent.mkdir(parents=True, exist_ok=True)
        if (REPO / part).is_dir():
            shutil.copytree(REPO / part, source / part, ignore=IGNORED)
        else:
            shutil.copy(REPO / part, source / part)
    pip_wheel = (sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation")
    built = run(*pip_wheel, "-w", root, source, cwd=source)
    assert built.returncode == 0, built.stderr
    (wheel,) = root.glob("foxhunt-*.whl")
    venv = root / "venv"
    created = run(sys.executable, "-m", "venv", venv)
    assert created.returncode == 0, created.stderr
    requirement = f"foxhunt[{extras}] @ {wheel.as_uri()}" if extras else wheel
    installed = run(
        venv / "bin" / "pip",
        "install",
        "-q",
        "--no-compile",
        "--no-index",
        "--find-links",
        WHEELHOUSE,
        requirement,
    )
    assert installed.returncode == 0, installed.stderr
    return venv


def queue_install(request: pytest.FixtureRequest, extras: str = ""):
    """Queue `install` with `extras` in a fresh folder; the future of its virtualenv."""

    def make():
        root = request.getfixturevalue("tmp_path_factory").mktemp(extras or "light")
        return lambda: install(root, extras)

    return BACKGROUND.start(f"venv-{extras or 'light'}", make)


STARTERS.update(light_venv=queue_install, render_venv=lambda request: queue_install(request, "render"))


@pytest.fixture(scope="session")
def light_venv(request) -> Path:
    return queue_install(request).result()


@pytest.fixture(scope="session")
def render_venv(request) -> Path:
    return queue_install(request, "render").result()


def test_the_base_dependencies_are_the_client_only():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"]).lower()

    assert not [lib for lib in TRAINING_LIBRARIES if lib.replace("_", "-") in base]
    assert "hera" not in base and any(
        r.startswith("hera") for r in project["optional-dependencies"]["render"]
    )
    assert {"torch", "numpy", "scipy", "pyarrow", "matplotlib", "boto3"} <= {
        r.split(">")[0].split("=")[0].split("<")[0].lower() for r in project["optional-dependencies"]["train"]
    }


def test_the_light_install_has_no_training_library(light_venv):
    code = f"import importlib.util, json; print(json.dumps([m for m in {TRAINING_LIBRARIES!r} if importlib.util.find_spec(m)]))"
    result = run(light_venv / "bin" / "python", "-c", code)

    assert json.loads(result.stdout) == []


def test_version_answers_quickly_without_torch(light_venv, capsys):
    from foxhunt import __version__

    start = time.perf_counter()
    result = run(light_venv / "bin" / "foxhunt", "--version")
    seconds = time.perf_counter() - start

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"foxhunt {__version__}"
    with capsys.disabled():
        print(f"\nlight install: `foxhunt --version` took {seconds:.3f} s (fresh process, no torch)")


def test_submit_help_works_without_torch(light_venv):
    result = run(light_venv / "bin" / "foxhunt", "submit", "--help")

    assert result.returncode == 0, result.stderr
    assert "--dry-run" in result.stdout and "--parameter-file" in result.stdout


def test_the_light_install_has_no_hera(light_venv):
    result = run(
        light_venv / "bin" / "python", "-c", "import importlib.util; print(importlib.util.find_spec('hera'))"
    )

    assert result.stdout.strip() == "None"


def test_workflows_render_without_the_render_extra_exits_2_with_the_install_line(light_venv, tmp_path):
    result = run(light_venv / "bin" / "foxhunt", "workflows", "render", "--out", tmp_path / "out")

    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "foxhunt workflows render: error: foxhunt workflows render needs the render extra, and hera is not "
        "installed: pip install '.[render]' (in the foxhunt checkout)"
    ]
    assert not (tmp_path / "out").exists()


def test_workflows_render_works_with_the_render_extra_and_without_torch(render_venv, tmp_path):
    result = run(render_venv / "bin" / "foxhunt", "workflows", "render", "--out", tmp_path)

    assert result.returncode == 0, result.stderr
    assert {p.name for p in tmp_path.iterdir()} == {
        "precompute-features.yaml",
        "train.yaml",
        "train-pipeline.yaml",
    }
    assert (tmp_path / "train.yaml").read_text() == (
        REPO / "foxhunt_workflows/rendered/train.yaml"
    ).read_text()


TRAINING_COMMANDS = {
    "precompute": ["--bars", "bars.csv", "--out", "out.fxcache"],
    "train": ["--fxcache", "in.fxcache", "--out", "run"],
    "pipeline": ["--out", "run"],
    "evaluate": ["--run", "run", "--fxcache", "in.fxcache"],
}


@pytest.mark.parametrize("command", list(TRAINING_COMMANDS))
def test_a_training_command_without_the_train_extra_exits_2_with_the_install_line(
    light_venv, tmp_path, command
):
    result = run(light_venv / "bin" / "foxhunt", command, *TRAINING_COMMANDS[command], cwd=tmp_path)

    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(
        f"foxhunt {command}: error: foxhunt {command} needs the train extra, and torch, numpy,"
    )
    assert line.endswith("are not installed: pip install '.[train]' (in the foxhunt checkout)")
    assert list(tmp_path.iterdir()) == []


def test_the_help_says_which_commands_need_the_train_extra(light_venv):
    listing = " ".join(run(light_venv / "bin" / "foxhunt", "--help").stdout.split())

    for command in TRAINING_COMMANDS:
        assert re.search(
            rf"{command} .*?\[needs the train extra: pip install '\.\[train\]' \(in the foxhunt checkout\)\]",
            listing,
        )
    assert listing.count("[needs the train extra") == len(TRAINING_COMMANDS)


def test_a_dry_run_submission_works_without_torch(light_venv):
    result = run(light_venv / "bin" / "foxhunt", "submit", "--epochs", "5", *DATA, "--dry-run", "-o", "json")

    assert result.returncode == 0, result.stderr
    assert {"name": "epochs", "value": "5"} in json.loads(result.stdout)["spec"]["arguments"]["parameters"]


@pytest.mark.parametrize(
    "argv",
    [["--version"], ["--help"], ["submit", "--help"], ["submit", *DATA, "--dry-run"]],
    ids=["version", "help", "submit-help", "submit-dry-run"],
)
def test_client_commands_import_no_training_library(argv):
    code = (
        "import sys\nfrom foxhunt.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        f"print('MODULES', sorted(m for m in {TRAINING_LIBRARIES!r} if m in sys.modules))"
    )
    # This checkout's packages (PYTHONPATH), nothing else from the environment.
    path = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    result = run(sys.executable, "-c", code, env={"PATH": "/usr/bin:/bin", "ARGO_NAMESPACE": "ci", **path})

    assert result.stdout.strip().splitlines()[-1] == "MODULES []", result.stderr
