"""The project's habits are enforced, not just written down: strict markers, formatting, pre-commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def test_a_misspelt_marker_is_an_error(tmp_path):
    (tmp_path / "test_marked.py").write_text(
        "import pytest\n\n@pytest.mark.servcies\ndef test_x():\n    pass\n"
    )

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(REPO / "pyproject.toml"),
         "--rootdir", str(tmp_path), str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert result.returncode != 0
    assert "'servcies' not found in `markers`" in result.stdout + result.stderr


def test_ci_checks_formatting_after_lint():
    lines = [line.strip() for line in (REPO / "scripts" / "test.sh").read_text().splitlines()]

    assert lines.index("ruff format --check .") == lines.index("ruff check .") + 1


def test_pre_commit_runs_ruff_check_and_ruff_format():
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    hooks = {hook["id"]: hook["entry"] for repo in config["repos"] for hook in repo["hooks"]}

    assert hooks["ruff"].startswith("ruff check")
    assert hooks["ruff-format"] == "ruff format"


def _first_session() -> list[str]:
    script = (REPO / "scripts" / "test.sh").read_text()
    line = next(x for x in script.splitlines() if x.startswith("first_session=("))
    return line.removeprefix("first_session=(").removesuffix(")").split()


def test_ci_splits_the_suite_into_two_sessions_that_take_every_test_folder_once():
    first = _first_session()
    script = (REPO / "scripts" / "test.sh").read_text()

    assert first and all((REPO / folder).is_dir() and folder.startswith("tests/") for folder in first)
    # The second session is `tests` less exactly the first's folders, so a new folder lands in one of them.
    assert 'for folder in "${first_session[@]}"; do ignored+=("--ignore=$folder"); done' in script
    assert 'python -m pytest -q -p no:cacheprovider tests "${ignored[@]}" || second_status=$?' in script
    assert (
        'python -m pytest -q -p no:cacheprovider "${first_session[@]}" > .cache/pytest-first.log 2>&1 &'
        in script
    )


def test_ci_fails_when_either_session_fails():
    script = (REPO / "scripts" / "test.sh").read_text()

    assert 'wait "$first_job" || first_status=$?' in script
    assert 'if [ "$first_status" -ne 0 ] || [ "$second_status" -ne 0 ]; then exit 1; fi' in script
