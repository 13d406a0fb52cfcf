"""A guard that the suite opens no file outside the repository (it must pass from a fresh clone alone).

An audit hook on "open" records every path a test process opens that lies outside the repository and
outside the places any Python program reads or writes (the interpreter and its packages, the system,
temporary directories, per-user caches). At the end of the session the recorded paths fail the run.
Paths are compared as written (made absolute, not resolved), so a link inside the repository, such as
the ignored `.cache` of installed tools, counts as the repository.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

REPO = os.path.abspath(Path(__file__).resolve().parents[2])

# Read by libraries and tools, never test data: the system, and per-user caches and settings
# (matplotlib's font cache, fontconfig, torch's kernels, hypothesis' and pip's caches).
SYSTEM_ROOTS = ("/usr", "/lib", "/lib64", "/etc", "/proc", "/sys", "/dev", "/run", "/var/lib", "/var/cache")
USER_DIRS = (".cache", ".config", ".local", ".matplotlib", ".triton", ".nv")


def allowed_roots() -> tuple[str, ...]:
    """Absolute directories a test may open files under: the repository and where Python itself lives."""
    roots = {REPO, tempfile.gettempdir(), *SYSTEM_ROOTS}
    roots.update(p for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p)
    roots.update(
        v for k, v in sysconfig.get_paths().items() if k in ("stdlib", "platstdlib", "purelib", "platlib")
    )
    roots.update(site.getsitepackages())
    home = os.path.expanduser("~")
    roots.update(os.path.join(home, d) for d in USER_DIRS)
    # Both spellings of each root: the venv's python may be reached through a link.
    roots.update([os.path.realpath(r) for r in roots])
    return tuple(sorted(os.path.abspath(r) for r in roots))


def is_outside(path: str, roots: tuple[str, ...]) -> bool:
    """Whether an absolute path lies outside every allowed root."""
    return not any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


class OutsideReads:
    """The audit hook's state: the allowed roots and the outside paths opened so far."""

    def __init__(self) -> None:
        self.roots = allowed_roots()
        self.paths: dict[str, str] = {}  # path -> the test that opened it
        self.current_test = "(collection)"

    def audit(self, event: str, args: tuple) -> None:
        if event != "open":
            return
        path = args[0]
        if isinstance(path, int):  # os.fdopen / open(fd): nothing new is opened by name
            return
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        path = os.path.abspath(os.fspath(path))
        if is_outside(path, self.roots):
            self.paths.setdefault(path, self.current_test)


GUARD = OutsideReads()
sys.addaudithook(GUARD.audit)  # audit hooks cannot be removed: install once, on import


@pytest.fixture
def outside_reads() -> OutsideReads:
    """The session's guard, for a test that checks the guard itself."""
    return GUARD


def pytest_runtest_setup(item: pytest.Item) -> None:
    GUARD.current_test = item.nodeid


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not GUARD.paths:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"{path}  (opened by {test})" for path, test in sorted(GUARD.paths.items())]
    message = "\ntests opened files outside the repository (put what they need in tests/data/):\n  "
    if reporter is not None:
        reporter.write_line(message + "\n  ".join(lines), red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
