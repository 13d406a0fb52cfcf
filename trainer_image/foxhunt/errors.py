"""The kinds of failure and the exit code each one ends a command with.

Two kinds matter to whoever runs foxhunt: bad input or usage (exit 2: fix the command, do not
retry) and a failure during a run (exit 1: the run's `summary.json` says what failed and where
its partial outputs are). A run stopped by SIGINT or SIGTERM exits 130 or 143, the shell's
convention (128 + the signal number), so Argo can retry exactly the exits a resume can fix.
"""

from __future__ import annotations

import signal

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


class FoxhuntError(Exception):
    """Base of every error foxhunt raises on purpose; `exit_code` is the command's exit status."""

    exit_code = EXIT_FAILURE


class UsageError(FoxhuntError):
    """Bad usage or settings: a flag, a settings file, an output that cannot be used (exit 2)."""

    exit_code = EXIT_USAGE


class BadInput(UsageError, ValueError):
    """An input that cannot be used: bars, an fxcache, a parameters file; the message names it (exit 2)."""


class ConfigError(UsageError, ValueError):
    """A setting of the wrong type or out of range; `path` is its dotted name, e.g. "folds.train_days"."""

    def __init__(self, section: str, path: str, problem: str) -> None:
        self.section = section
        self.path = path
        self.problem = problem
        super().__init__(f"{section}: {path.rpartition('.')[2]} {problem}")


class RunFailure(FoxhuntError):
    """A failure during a run; the message says what failed and where the partial outputs are (exit 1)."""

    exit_code = EXIT_FAILURE


class RunInterrupted(FoxhuntError):
    """A run stopped by a signal at a step boundary; exits 128 + the signal number."""

    def __init__(self, signum: int, where: str = "") -> None:
        self.signum, self.where = signum, where
        self.exit_code = 128 + signum
        name = signal.Signals(signum).name
        super().__init__(f"stopped by {name}" + (f" {where}" if where else ""))
