"""The docs name only what exists: every `foxhunt.…` name in the project's prose, and every module a
stage package's docstring lists, resolves to a module or an attribute of the code as it is."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROSE = ("README.md", "CHANGELOG.md", "CONTRIBUTING.md", "helm/foxhunt/README.md", "bench/README.md")
# A dotted name; one followed by "/" is a Kubernetes label or annotation key (foxhunt.io/gpu-pool), no module.
DOTTED = re.compile(r"\b(foxhunt(?:_workflows)?(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?![A-Za-z0-9_./])")
STAGES = ("data", "train", "evaluate", "run", "search", "storage", "cli")
PACKAGE = ROOT / "trainer_image" / "foxhunt"


def resolves(name: str) -> bool:
    """True when `name` is an importable module, or an attribute path below the longest importable one."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def dotted_names(text: str) -> set[str]:
    """The `foxhunt.…` names in a text, with a trailing sentence full stop left out."""
    return {m.rstrip(".") for m in DOTTED.findall(text)}


def listed_names(package: str) -> set[str]:
    """Backticked Python names (modules, `module.attribute`) in a stage package's docstring."""
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text())) or ""
    return {n for n in re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)`", doc) if not n.isupper()}


def resolves_in(package: str, name: str) -> bool:
    """A name a package's docstring lists: relative to the package, to `foxhunt`, or absolute."""
    candidates = (f"foxhunt.{package}.{name}", f"foxhunt.{name}", name)
    return any(resolves(c) for c in candidates)


@pytest.mark.parametrize("document", PROSE)
def test_every_foxhunt_name_in_the_prose_resolves(document):
    names = dotted_names((ROOT / document).read_text())
    assert [n for n in sorted(names) if not resolves(n)] == []


@pytest.mark.parametrize("package", STAGES)
def test_every_module_a_stage_docstring_lists_exists(package):
    assert [n for n in sorted(listed_names(package)) if not resolves_in(package, n)] == []


def test_a_name_that_does_not_exist_is_caught():
    text = "see `foxhunt.execution` and foxhunt.evaluate.fold_policy.load_policy and foxhunt.io/gpu-pool."
    assert dotted_names(text) == {"foxhunt.execution", "foxhunt.evaluate.fold_policy.load_policy"}
    assert not resolves("foxhunt.execution")
    assert not resolves("foxhunt.evaluate.fold_policy.no_such_function")
    assert resolves("foxhunt.evaluate.fold_policy.load_policy")


def test_a_module_a_docstring_lists_in_the_wrong_stage_is_caught():
    assert not resolves_in("evaluate", "rescore")
    assert resolves_in("run", "rescore")


REPO_PATH = re.compile(
    r"\b((?:tests|tests_gpu|bench|trainer_image|foxhunt_workflows|helm|scripts)/[A-Za-z0-9_/.{},*-]+"
    r"\.(?:py|md|json|yaml|sh|log|tpl|txt))\b"
)


def expanded(pattern: str) -> list[str]:
    """A path as the docs write it, its `{a,b}` alternatives expanded (one level)."""
    match = re.search(r"\{([^{}]*)\}", pattern)
    if not match:
        return [pattern]
    return [pattern[: match.start()] + part + pattern[match.end() :] for part in match.group(1).split(",")]


def missing_paths(text: str, root: Path) -> list[str]:
    """The repository paths a text names that match no file (a `*` must match at least one)."""
    missing = []
    for named in sorted(set(REPO_PATH.findall(text))):
        for path in expanded(named):
            if not (any(root.glob(path)) if "*" in path else (root / path).exists()):
                missing.append(path)
    return missing


@pytest.mark.parametrize("document", PROSE)
def test_every_repository_path_in_the_prose_exists(document):
    assert missing_paths((ROOT / document).read_text(), ROOT) == []


def test_a_moved_file_named_in_the_prose_is_caught(tmp_path):
    (tmp_path / "tests" / "support").mkdir(parents=True)
    (tmp_path / "tests" / "support" / "outside_reads.py").write_text("")
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "a-on.json").write_text("{}")
    text = "see `tests/outside_reads.py`, tests/support/outside_reads.py, bench/results/a-{on,off}.json"
    assert missing_paths(text, tmp_path) == ["bench/results/a-off.json", "tests/outside_reads.py"]
