"""A second `bench/power.py run` call over the work folder a background call left."""

from __future__ import annotations

import subprocess
from pathlib import Path


def again_with_resume(done: subprocess.CompletedProcess, folder: Path, out: Path) -> list[str]:
    """The arguments of the background call `done` (after the script) with `--resume` and `--out out`."""
    argv = [a for a in done.args[2:] if a != str(folder / "power.json")]
    argv[argv.index("--out")] = "--resume"
    return [*argv, "--out", str(out)]


def no_process(*_args, **_kwargs):
    """In place of `harness.fresh_run` where nothing may run."""
    raise AssertionError("a finished row ran a process again")
