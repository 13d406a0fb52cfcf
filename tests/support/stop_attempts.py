"""A command run in this process while a stop signal comes at a chosen point: what the stop tests of a
universe run and of a universe search read (exit code, console, the endings the metrics were told of, whose
signal handlers were in place while it trained and after it)."""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from foxhunt.run.sinks.telemetry import RunMetrics
from foxhunt.train import DQNTrainer

STOP = (signal.SIGINT, signal.SIGTERM)
Deliver = Callable[[pytest.MonkeyPatch], None]  # patches the command: something happens at a chosen point
Command = Callable[[], tuple[int, str, str]]  # runs the command: exit code, console, error line


class Unhandled(Exception):
    """What a stop signal raises here when the command has not put its own handler in place (a SIGTERM's
    default would end the test process)."""


def _unhandled(signum: int, frame) -> None:
    raise Unhandled(signal.Signals(signum).name)


@dataclass(frozen=True)
class Attempt:
    """A command stopped (or failed) on the way: exit code, console, error line, the endings its metrics
    were told of, whether the stop signals had handlers of its own as it trained, and whether after it they
    have those they had before it."""

    code: int
    console: str
    line: str
    endings: list[str]
    handled_while_training: bool
    handlers_kept: bool


def attempt(command: Command, deliver: Deliver) -> Attempt:
    """`command()` with `deliver`'s patches; meanwhile a stop signal it does not handle raises `Unhandled`."""
    before = {s: signal.signal(s, _unhandled) for s in STOP}
    endings: list[str] = []
    while_training: list[bool] = []
    run_finished = RunMetrics.run_finished

    def told(self, status: str) -> None:
        endings.append(status)
        run_finished(self, status)

    try:
        with pytest.MonkeyPatch.context() as patch:
            deliver(patch)
            train_epoch = DQNTrainer.train_epoch  # the delivering one, if `deliver` patched it

            def watched(self, *args, **kwargs):
                while_training.append(all(signal.getsignal(s) is not _unhandled for s in STOP))
                return train_epoch(self, *args, **kwargs)

            patch.setattr(DQNTrainer, "train_epoch", watched)
            patch.setattr(RunMetrics, "run_finished", told)
            code, console, line = command()
        kept = all(signal.getsignal(s) is _unhandled for s in STOP)
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    return Attempt(code, console, line, endings, while_training[0], kept)
