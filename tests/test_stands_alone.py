"""The repository stands alone: no test reads a file outside it (tests/support/outside_reads.py guards every session)."""

from __future__ import annotations

import os
import re
import sys
import uuid
from pathlib import Path

import pytest
from support.outside_reads import REPO, allowed_roots, is_outside

# How a test would reach the project's reference files beside a clone: `../shared`, the machine's
# absolute copy, or a path built from the repository's parent directory.
BESIDE_THE_REPOSITORY = re.compile(r"\.\./shared|/work/" + r"shared|parents\[1\]\.parent|REPO\.parent\b")
SCANNED = ("tests", "tests_gpu", "scripts", ".ci")


def test_a_file_opened_outside_the_repository_is_recorded(outside_reads):
    outside = f"/foxhunt-outside-{uuid.uuid4().hex}/bars.parquet"
    with pytest.raises(FileNotFoundError):
        open(outside)  # the audit event fires before the open fails
    assert outside_reads.paths.pop(outside) == os.environ["PYTEST_CURRENT_TEST"].rsplit(" ", 1)[0]


def test_files_in_the_repository_and_temporary_directories_are_allowed(tmp_path):
    roots = allowed_roots()
    assert not is_outside(os.path.join(REPO, "tests", "data", "README.md"), roots)
    assert not is_outside(str(tmp_path / "bars.parquet"), roots)
    assert not is_outside(os.path.join(sys.prefix, "lib", "site.py"), roots)


def test_files_beside_the_repository_are_outside():
    roots = allowed_roots()
    assert is_outside("/work-elsewhere/shared/data/EURUSD_M1_2018_2019.parquet", roots)
    # A sibling whose name starts like an allowed root is not inside it.
    assert is_outside("/srv/foxhunt-shared/data.parquet", ("/srv/foxhunt",))
    assert not is_outside("/srv/foxhunt/tests/data/bars.parquet", ("/srv/foxhunt",))


def test_no_test_or_ci_script_names_a_path_beside_the_repository():
    this = Path(__file__).resolve()
    found = []
    for top in SCANNED:
        for path in sorted((Path(REPO) / top).rglob("*")):
            if not path.is_file() or path.resolve() == this or "node_modules" in path.parts:
                continue
            if path.suffix not in (".py", ".sh", ".yaml", ".yml", ".toml", "") or path.name.startswith("."):
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if BESIDE_THE_REPOSITORY.search(line):
                    found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_test_prometheus_loads_the_charts_rule_file():
    from support.prom_services import CHART_RULES

    assert CHART_RULES.is_file()
