"""A run's `--out` lock taken over by another run while the run stalls, as the heartbeat then finds it."""

from __future__ import annotations

import threading
import time

import pytest

from foxhunt.run import lifecycle
from foxhunt.run.lock import LOCK_NAME, OutLock
from foxhunt.train import DQNTrainer

BEAT_S = 0.01  # the heartbeat's interval here: a taken-over lock is noticed at once, not after 10 s
NOTICE_S = 60.0  # the longest the run waits for that (a run whose heartbeat never notices then trains on)
THIEF = "thief"  # the run id of the run that takes the lock over


def lock_taken_over(out, fold: int, patch: pytest.MonkeyPatch) -> None:
    """The first time epoch 1 of fold `fold` begins, the run stalls (no beat renews its lock) and another
    live run (`THIEF`) takes the lock of `out` over, as it would once the lock went stale; the run's
    heartbeat notices before the epoch trains."""
    beats: list[lifecycle.Heartbeat] = []
    stalled = threading.Lock()  # held while the run stalls
    refresh = OutLock.refresh

    def renew(self) -> bool:
        with stalled:
            return refresh(self)

    class QuickHeartbeat(lifecycle.Heartbeat):
        def __init__(self, lock, metrics, interval: float = BEAT_S) -> None:
            super().__init__(lock, metrics, BEAT_S)
            beats.append(self)

    original = DQNTrainer.train_epoch

    def train_epoch(self, at, epochs, *args, **kwargs):
        if self.window.fold.fold == fold and at == 0 and not beats[-1].lost:
            with stalled:
                (out / LOCK_NAME).write_bytes(OutLock(str(out), THIEF).me.to_bytes())
            deadline = time.monotonic() + NOTICE_S
            while not beats[-1].lost and time.monotonic() < deadline:
                time.sleep(BEAT_S)
        return original(self, at, epochs, *args, **kwargs)

    patch.setattr(OutLock, "refresh", renew)
    patch.setattr(lifecycle, "Heartbeat", QuickHeartbeat)
    patch.setattr(DQNTrainer, "train_epoch", train_epoch)
