"""Two small generated instruments of different calendars (an FX one, an exchange's) and a small network's
settings, for the tests that stop, fail or resume a universe run through `foxhunt train`."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from foxhunt.cli import main
from support.universe_cases import three_instruments, write_caches

DAYS = 12
FOLDS = ["--train-days", "4", "--val-days", "2", "--step-days", "2", "--max-folds", "2"]
NAMES = ("fx00", "exchange01")


def write_two_caches(folder: Path) -> dict[str, str]:
    """The two instruments' fxcaches in `folder`, by name."""
    return write_caches(folder, three_instruments(DAYS)[:2])


def write_small_params(folder: Path) -> str:
    """A params file of a 16-unit network taking 20 steps an epoch."""
    path = folder / "params.json"
    path.write_text(json.dumps({"dqn": {"hidden": 16, "steps_per_epoch": 20}}))
    return str(path)


def train(caches, params, out, *extra: str, names=NAMES) -> tuple[int, str, str]:
    """`foxhunt train` on the instruments `names` (2 folds of 2 epochs) with `extra` flags: its exit code,
    console and error line."""
    args = ["train", "--out", str(out), "--device", "cpu", "--epochs", "2", *FOLDS]
    args += ["--hyperopt-params", params]
    for name in names:
        args += ["--fxcache", caches[name]]
    console, errors = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(console), contextlib.redirect_stderr(errors):
        code = main([*args, *extra])
    return code, console.getvalue(), errors.getvalue().strip()
