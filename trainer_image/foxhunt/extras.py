"""Which optional part of the install a command needs, and the one line that says how to get it.

The base install is the light client (CLI, `submit`); `train` adds the training libraries,
`render` adds Hera for `workflows render` and `mlflow` the MLflow client for `--mlflow-uri`. A command
that needs an extra says so in its `--help` and, where the extra is missing, exits 2 with the install
line before importing anything from it.
Standard library only: the CLI parser reads this.
"""

from __future__ import annotations

import importlib.util

from foxhunt.errors import UsageError

# The modules of each extra (pyproject.toml's optional dependencies, by import name).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "train": (
        "torch", "numpy", "scipy", "pyarrow", "boto3", "prometheus_client", "matplotlib", "optuna",
        "sqlalchemy", "psycopg",
    ),
    "render": ("hera",),
    "mlflow": ("mlflow",),  # the mlflow-skinny distribution
}  # fmt: skip
# What every command of an extra imports before work; the rest is imported where a run needs it
# (boto3 for s3:// URIs, optuna, SQLAlchemy and psycopg for --trials), so an image without them
# still trains on local files.
REQUIRED_MODULES: dict[str, tuple[str, ...]] = {
    "train": ("torch", "numpy", "pyarrow"),
    "render": ("hera",),
    "mlflow": ("mlflow",),
}


def install_line(extra: str) -> str:
    """The pip command that installs `extra` from a foxhunt checkout (quoted for a POSIX shell): the
    project is installed from its repository, not from a package registry."""
    return f"pip install '.[{extra}]' (in the foxhunt checkout)"


def needs_note(extra: str) -> str:
    """What a command's help adds: the extra it needs and how to install it."""
    return f"[needs the {extra} extra: {install_line(extra)}]"


def missing_modules(extra: str) -> list[str]:
    """The modules `extra`'s commands need before work that this Python cannot import (found without
    importing them)."""
    return [name for name in REQUIRED_MODULES[extra] if importlib.util.find_spec(name) is None]


def require_extra(extra: str, command: str) -> None:
    """UsageError (exit 2) naming the missing modules and the install line, unless `extra` is installed."""
    missing = missing_modules(extra)
    if missing:
        raise UsageError(
            f"{command} needs the {extra} extra, and {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed: {install_line(extra)}"
        )
