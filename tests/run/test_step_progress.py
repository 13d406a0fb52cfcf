"""Progress within an epoch: a bar on a terminal, plain lines in a pod, nothing for a fast epoch."""

from __future__ import annotations

import io

from foxhunt.run import step_progress
from foxhunt.run.step_progress import StepProgress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def ticking(*times: float):
    values = iter(times)
    return lambda: next(values)


def test_a_pod_log_gets_a_plain_line_once_the_interval_has_passed():
    out = io.StringIO()
    progress = StepProgress("fold 0 epoch 1/3", out, clock=ticking(0.0, 5.0, 10.0, 12.0))

    progress.update(10, 40)  # 5 s: too soon
    progress.update(20, 40)  # 10 s: a line; 20 replays in 10 s, 20 left: 10 s
    progress.update(30, 40)  # 12 s: too soon again

    assert out.getvalue() == "fold 0 epoch 1/3: 20/40 steps (50%), 10s left\n"


def test_a_terminal_gets_a_bar_redrawn_in_place_and_cleared_at_the_end():
    out = Terminal()
    progress = StepProgress("f", out, clock=ticking(0.0, 1.0))

    progress.update(1, 4)
    progress.close()

    drawn = out.getvalue()
    assert drawn.startswith("\rf [" + "#" * 6 + "." * 18 + "]  25% 1/4 steps, 3s left")
    assert drawn.endswith("\r") and "\n" not in drawn


def test_the_last_replay_and_a_fast_epoch_print_nothing():
    out = io.StringIO()
    progress = StepProgress("f", out, clock=ticking(0.0, 0.1, 100.0))

    progress.update(1, 2)  # 0.1 s
    progress.update(2, 2)  # done: the epoch line follows

    assert out.getvalue() == ""


def test_the_intervals_are_pinned():
    assert (step_progress.TERMINAL_SECONDS, step_progress.PLAIN_SECONDS) == (0.5, 10.0)
