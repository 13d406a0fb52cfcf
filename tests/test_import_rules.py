"""The package's stages import downstream only: data → train → evaluate → run → search.

`cli`, `config`, `errors`, `out_names` and `storage` sit outside the flow: every stage may import the
last four, and nothing imports `cli` (it is the entry point) but its own modules. Read from the source with `ast`, so a
function-level import counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "trainer_image" / "foxhunt"
STAGES = ("data", "train", "evaluate", "run", "search")  # in the order data flows
SHARED = ("config", "errors", "out_names", "redaction", "storage", "strict_json")  # below every stage


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, known: set[str]) -> set[str]:
    """The foxhunt modules `path` imports (`from foxhunt.x import y`: x.y when y is a module, else x)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "foxhunt":
                submodules = {f"{node.module}.{a.name}" for a in node.names} & known
                # `from package import submodule` needs the submodule; a name from a module needs the module
                found.update(submodules if len(submodules) == len(node.names) else {node.module, *submodules})
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "foxhunt")
    return found & known


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: imported(path, set(paths)) - {name} for name, path in paths.items()}


def place(module: str) -> str:
    """The stage or top-level module a module belongs to: foxhunt.train.dqn → train."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def upstream_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import that points up the flow, or from a shared module into a stage, or at `cli`."""
    bad = []
    for module, targets in sorted(graph.items()):
        here = place(module)
        for target in sorted(targets):
            there = place(target)
            if there == "cli" and here != "cli" and module != "foxhunt.__main__":
                bad.append(f"{module} imports the CLI")
            elif here in STAGES and there in STAGES and STAGES.index(there) > STAGES.index(here):
                bad.append(f"{module} ({here}) imports {target} ({there}), a later stage")
            elif here in SHARED and there in STAGES:
                bad.append(f"{module} (shared) imports {target} ({there}), a stage")
    return bad


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle, found by depth-first search (each reported once, from where it was met)."""
    found, state = [], {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                found.append([*trail[trail.index(target) :], target])
            elif target not in state:
                visit(target, [*trail, target])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_the_package_has_every_stage_as_a_subpackage():
    assert all((PACKAGE / stage / "__init__.py").is_file() for stage in STAGES)


def test_no_module_imports_a_later_stage_or_the_cli():
    assert upstream_imports(import_graph()) == []


def test_the_package_has_no_import_cycle():
    assert cycles(import_graph()) == []


@pytest.mark.parametrize(
    "graph, problem",
    [
        (
            {"foxhunt.train.dqn": {"foxhunt.run.lock"}},
            "foxhunt.train.dqn (train) imports foxhunt.run.lock (run)",
        ),
        ({"foxhunt.run.pipeline": {"foxhunt.search.driver"}}, "imports foxhunt.search.driver (search)"),
        ({"foxhunt.config": {"foxhunt.train.step"}}, "foxhunt.config (shared) imports foxhunt.train.step"),
        ({"foxhunt.evaluate.rescore": {"foxhunt.cli"}}, "foxhunt.evaluate.rescore imports the CLI"),
        ({"foxhunt.run.pipeline": {"foxhunt.cli.parser"}}, "foxhunt.run.pipeline imports the CLI"),
    ],
)
def test_the_rules_name_an_import_that_breaks_them(graph, problem):
    (found,) = upstream_imports(graph)
    assert problem in found


def test_a_cycle_is_found_with_its_modules():
    graph = {"foxhunt.a": {"foxhunt.b"}, "foxhunt.b": {"foxhunt.c"}, "foxhunt.c": {"foxhunt.a"}}
    assert cycles(graph) == [["foxhunt.a", "foxhunt.b", "foxhunt.c", "foxhunt.a"]]


def test_downstream_imports_break_no_rule():
    graph = {"foxhunt.search.driver": {"foxhunt.run.lifecycle", "foxhunt.train", "foxhunt.config"}}
    assert upstream_imports(graph) == [] and cycles(graph) == []


def test_the_cli_s_own_modules_may_import_each_other():
    graph = {"foxhunt.cli": {"foxhunt.cli.parser"}, "foxhunt.cli.parser": {"foxhunt.cli.commands"}}
    assert upstream_imports(graph) == []
