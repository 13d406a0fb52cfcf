"""The garbage collector in a console command's process: its long-lived objects frozen, a caller's left alone."""

import gc
import sys

import pytest

from foxhunt import collector
from foxhunt.cli import main


@pytest.fixture
def thawed():
    """The collector as a test process keeps it: nothing frozen before or after, the process not owned."""
    gc.unfreeze()
    yield
    collector.own_process(False)
    gc.unfreeze()


def test_settle_freezes_only_in_a_process_marked_as_the_command_s_own(thawed):
    assert not collector.settle()
    assert gc.get_freeze_count() == 0
    collector.own_process()
    assert collector.settle()
    assert gc.get_freeze_count() > 0


def test_main_with_an_argument_list_leaves_the_callers_collector_alone(thawed):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert gc.get_freeze_count() == 0


def test_main_as_the_console_script_calls_it_freezes_at_the_end(thawed, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["foxhunt", "--version"])
    with pytest.raises(SystemExit):
        main()
    assert gc.get_freeze_count() > 0
