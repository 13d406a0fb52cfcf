"""The console excerpts of the README and docs/universe.md are what their commands print today: the quick
start's is the default pipeline's console (the suite's own run of it), the others their commands', run as
written.

An excerpt line stands for a whole console line, each "…" in it for any text; a line "..." for lines left
out."""

import re
import shlex
import sys
from pathlib import Path

import pytest
from support.background_runs import background_process, one_thread
from support.reference_figures import portable_env

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
UNIVERSE = (REPO / "docs" / "universe.md").read_text()
LEFT_OUT = "..."


def excerpt_after(marker: str, text: str = README) -> list[str]:
    """The lines of the first fenced block after `marker` in `text` (the README's)."""
    after = text[text.index(marker) :]
    block = after[after.index("```") + 3 :]
    return block[block.index("\n") + 1 : block.index("```")].splitlines()


def commands_after(marker: str, text: str = README) -> list[str]:
    """The indented command lines of the first indented block after `marker` in `text` (to a blank line)."""
    lines = text[text.index(marker) :].splitlines()[1:]
    start = next(i for i, line in enumerate(lines) if line.startswith("    "))
    block = []
    for line in lines[start:]:
        if not line.startswith("    "):
            break
        block.append(line.strip())
    return block


def pattern(line: str) -> re.Pattern:
    """An excerpt line as a pattern of a whole console line, "…" any text."""
    return re.compile(".*".join(re.escape(part) for part in line.rstrip().split("…")))


def missing(excerpt: list[str], console: str) -> list[str]:
    """The excerpt's lines that no console line matches whole."""
    printed = [line.rstrip() for line in console.splitlines()]
    shown = [line for line in excerpt if line.strip() != LEFT_OUT]
    return [line for line in shown if not any(pattern(line).fullmatch(p) for p in printed)]


def as_process(command: str) -> str:
    """A README command line run by this interpreter: `python` and `foxhunt` as this venv's."""
    words = shlex.split(command)
    head = [sys.executable] if words[0] == "python" else [sys.executable, "-m", "foxhunt"]
    assert words[0] in ("python", "foxhunt"), command
    return shlex.join(head + words[1:])


def in_folder(steps: list[str]):
    """The argv of a process that runs `steps` (README command lines) one after another in its folder."""
    return lambda work: [
        "bash",
        "-c",
        f"cd {shlex.quote(str(work))} && " + " && ".join(map(as_process, steps)),
    ]


def readme_run(fixture: str, steps: list[str]):
    """A session fixture: the finished run of `steps` in a fresh folder, in the portable numeric mode."""
    return background_process(fixture, fixture, in_folder(steps), lambda _: one_thread(portable_env()))


own_bars_run = readme_run(
    "own_bars_run", commands_after("**Sample bars**") + commands_after("**Train on it**")
)
search_run = readme_run("search_run", commands_after("## Search"))
universe_doc_run = readme_run(
    "universe_doc_run", commands_after("Generate three sample instruments", UNIVERSE)
)


def test_the_quick_start_excerpt_is_the_default_pipelines_console(default_pipeline):
    done = default_pipeline.done
    assert done.returncode == 0, done.stderr
    excerpt = excerpt_after("Expect, trimmed:")
    assert len(excerpt) >= 5 and missing(excerpt, done.stdout + done.stderr) == []


def test_the_own_bars_excerpt_is_what_its_commands_print(own_bars_run):
    done, _ = own_bars_run
    assert done.returncode == 0, done.stderr[-2000:]
    excerpt = excerpt_after("**Train on it**")
    assert len(excerpt) >= 2 and missing(excerpt, done.stdout + done.stderr) == []


def test_the_search_excerpt_is_what_its_command_prints(search_run):
    done, _ = search_run
    assert done.returncode == 0, done.stderr[-2000:]
    excerpt = excerpt_after("## Search")
    assert len(excerpt) >= 3 and missing(excerpt, done.stdout + done.stderr) == []


def test_the_universe_guides_excerpt_is_what_its_commands_print(universe_doc_run):
    done, _ = universe_doc_run
    assert done.returncode == 0, done.stderr[-2000:]
    excerpt = excerpt_after("Generate three sample instruments", UNIVERSE)
    assert len(excerpt) >= 10 and missing(excerpt, done.stdout + done.stderr) == []


def test_an_excerpt_line_that_was_never_printed_is_found_missing():
    console = "fold 0: flat\n  model: flat in every fold; fold 0: pooled Sharpe 2.36 over 1 window\n"
    assert (
        missing(["fold 0: flat", "  model: flat in every fold; …", "…: pooled Sharpe 2.36 …"], console) == []
    )
    assert missing(["  model: flat in every fold; fold 0: pooled Sharpe 9.99 …"], console) != []
    assert missing(["fold 1: flat", "fold 0"], console) == ["fold 1: flat", "fold 0"]  # a line, not a part
    assert missing(["fold 0: flat", LEFT_OUT], console) == []
