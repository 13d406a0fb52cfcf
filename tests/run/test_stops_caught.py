"""`lifecycle.stops_caught`: a body's stop signals caught and every way out told once to its ending, which
says what the body raises instead; the signals' handlers restored before the ending is told."""

import signal

import pytest

from foxhunt.errors import RunFailure, RunInterrupted
from foxhunt.run.lifecycle import stops_caught


class Told:
    """An ending that records what it was told, whether SIGTERM was foxhunt's then, and raises `instead`."""

    def __init__(self, instead: BaseException | None = None) -> None:
        self.calls: list[tuple[str, BaseException | None, bool]] = []
        self.instead = instead
        self.default = signal.getsignal(signal.SIGTERM)

    def __call__(self, status: str, why: BaseException | None) -> BaseException | None:
        self.calls.append((status, why, signal.getsignal(signal.SIGTERM) == self.default))
        return self.instead


def test_a_body_that_ends_is_told_succeeded_once_with_the_handlers_back():
    told = Told()
    with stops_caught(told) as signals:
        assert signal.getsignal(signal.SIGTERM) != told.default and signals.received is None
    assert told.calls == [("succeeded", None, True)]


def test_a_failure_is_told_and_what_the_ending_gives_is_raised_from_it():
    told, boom = Told(RunFailure("fold 1 failed: boom")), ValueError("boom")
    with pytest.raises(RunFailure) as raised:
        with stops_caught(told):
            raise boom
    assert told.calls == [("failed", boom, True)] and raised.value.__cause__ is boom


def test_a_stop_is_told_as_its_interruption_and_what_the_ending_gives_is_raised_alone():
    told, stopped = Told(RunInterrupted(signal.SIGTERM, "stopped; the same command resumes")), None
    with pytest.raises(RunInterrupted) as raised:
        with stops_caught(told):
            stopped = RunInterrupted(signal.SIGTERM, "stopped by SIGTERM during fold 1")
            raise stopped
    assert told.calls == [("interrupted", stopped, True)]
    assert (
        raised.value is told.instead and raised.value.__cause__ is None and raised.value.__suppress_context__
    )


def test_a_second_ctrl_c_is_told_as_an_interruption():
    told = Told(RunInterrupted(signal.SIGINT, "stopped"))
    with pytest.raises(RunInterrupted):
        with stops_caught(told):
            raise KeyboardInterrupt
    ((status, why, _),) = told.calls
    assert status == "interrupted" and isinstance(why, RunInterrupted) and why.signum == signal.SIGINT


def test_an_ending_that_gives_nothing_lets_the_exception_itself_through():
    told = Told()
    with pytest.raises(SystemExit):
        with stops_caught(told):
            raise SystemExit(3)
    assert [status for status, _, _ in told.calls] == ["failed"]
