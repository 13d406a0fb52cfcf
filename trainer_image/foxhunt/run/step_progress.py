"""Progress within an epoch: on a terminal a bar redrawn in place, in a pod a plain line now and then.

An epoch of a CPU run can take tens of seconds; without this the console says nothing between epoch
lines. The trainer calls `StepProgress.update(done, total)` after each replay of its step; drawing is
throttled by time, so a fast GPU epoch prints nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

BAR_WIDTH = 24
TERMINAL_SECONDS = 0.5  # between redraws of the bar on a terminal
PLAIN_SECONDS = 10.0  # between plain lines where the output is no terminal (a pod's log)


class StepProgress:
    """Throttled progress of one epoch's gradient steps, for one fold and epoch."""

    def __init__(
        self,
        label: str,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.label, self.stream, self.clock = label, stream or sys.stderr, clock
        self.terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every = TERMINAL_SECONDS if self.terminal else PLAIN_SECONDS
        self.started = self.last = clock()
        self.drawn = False

    def update(self, done: int, total: int) -> None:
        """Report `done` of `total` replays; draws only when `every` seconds have passed since the last."""
        now = self.clock()
        if now - self.last < self.every or done >= total:
            return
        self.last = now
        share = done / total
        rate = done / max(now - self.started, 1e-9)
        eta = (total - done) / rate
        if self.terminal:
            filled = int(share * BAR_WIDTH)
            bar = "#" * filled + "." * (BAR_WIDTH - filled)
            self.stream.write(f"\r{self.label} [{bar}] {share:4.0%} {done}/{total} steps, {eta:.0f}s left")
            self.drawn = True
        else:
            self.stream.write(f"{self.label}: {done}/{total} steps ({share:.0%}), {eta:.0f}s left\n")
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line (a terminal only), so the epoch's own line starts on a fresh one."""
        if self.drawn:
            self.stream.write("\r" + " " * (len(self.label) + BAR_WIDTH + 40) + "\r")
            self.stream.flush()
            self.drawn = False
