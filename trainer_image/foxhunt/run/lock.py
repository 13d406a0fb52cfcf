"""The lock of a run's output folder: while a run lives, no other run writes into its `--out`.

The lock is a small JSON file (or S3 object) `run.lock` created only if absent (O_EXCL locally,
If-None-Match on S3), naming its holder: run id, pid, host, start time. The holder rewrites it every
HEARTBEAT_SECONDS, so its modification time is a heartbeat. A lock is stale when its heartbeat is
older than the stale limit, or when its holder ran on this host and that pid is gone (a SIGKILLed
local run is taken over at once). A stale lock is taken over under a second, short-lived lock
(`run.lock.takeover`), so two runs that both find it stale cannot both take it.

A retried pod of the same run (same run id) finds its predecessor's lock still fresh for up to the
stale limit: it waits that long rather than refusing. Any other live holder is refused at once.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

from foxhunt import out_names, storage
from foxhunt.errors import FoxhuntError, UsageError
from foxhunt.storage.cache import pid_alive

LOCK_NAME = out_names.LOCK
HEARTBEAT_SECONDS = 10.0
STALE_SECONDS = 60.0  # six missed heartbeats
MAX_PID = 2**22  # Linux's largest pid_max; a lock naming a larger pid was not written by a run


class OutLocked(UsageError):
    """Another live run holds the `--out`; the message names it."""


@dataclass(frozen=True)
class LockHolder:
    """Who holds a lock."""

    run_id: str
    pid: int
    host: str
    started_at: str
    token: str  # unique per acquisition: tells two holders with the same run id apart

    def describe(self) -> str:
        """The holder in words, for the refusal message."""
        return f"run {self.run_id} (pid {self.pid} on {self.host}, started {self.started_at})"

    def to_bytes(self) -> bytes:
        return (json.dumps(asdict(self), sort_keys=True) + "\n").encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> LockHolder | None:
        """The holder a lock names, or None for bytes that are not a lock (one still being written, or
        fields of the wrong type: a pid that is no process id of this OS, such as "abc" or 2**40)."""
        try:
            holder = cls(**json.loads(raw))
        except (ValueError, TypeError):
            return None
        texts = (holder.run_id, holder.host, holder.started_at, holder.token)
        if not all(isinstance(t, str) for t in texts) or type(holder.pid) is not int:
            return None
        return holder if 0 < holder.pid <= MAX_PID else None


class OutLock:
    """The lock of one `--out`, held by this process for one run."""

    def __init__(self, out_uri: str, run_id: str, *, stale_seconds: float = STALE_SECONDS) -> None:
        self.uri = storage.join(out_uri, LOCK_NAME)
        self.stale_seconds = stale_seconds
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.me = LockHolder(run_id, os.getpid(), socket.gethostname(), started, uuid.uuid4().hex)
        self._mine = self.me.to_bytes()
        self.held = False

    def acquire(self, *, wait_seconds: float = 0.0) -> LockHolder | None:
        """Take the lock; returns the stale holder taken over (None when it was free).

        A live holder with this run id is waited for up to `wait_seconds` (a retried pod finds its
        predecessor's heartbeat still fresh); any other live holder is refused with OutLocked.
        """
        deadline = time.monotonic() + wait_seconds
        while True:
            if self._create():
                self.held = True
                return None
            raw, holder, age = self._current()
            if raw is None:
                continue  # released between our attempt and the read: try again
            if self._stale(holder, age):
                if self._take_over(raw):
                    self.held = True
                    return holder
                continue
            if holder is None and age < 1.0:
                time.sleep(0.05)  # created an instant ago, its content not yet written
                continue
            same_run = holder is not None and holder.run_id == self.me.run_id
            if same_run and time.monotonic() < deadline:
                time.sleep(min(1.0, self.stale_seconds / 10))
                continue
            who = (
                holder.describe()
                if holder is not None
                else "an unreadable lock (not one a run writes; remove it if no run uses this --out)"
            )
            raise OutLocked(
                f"{self.uri}: held by {who}, heartbeat {age:.0f}s ago; two runs cannot "
                f"write into one --out (a lock is stale after {self.stale_seconds:g}s)"
            )

    def _create(self) -> bool:
        try:
            return storage.create_exclusive(self.uri, self._mine)
        except FoxhuntError:
            raise
        except OSError as exc:  # the first write into --out: a path that cannot hold files shows here
            raise UsageError(
                f"{self.uri}: cannot create the run's lock ({exc}); is --out a writable folder?"
            ) from exc

    def _current(self) -> tuple[bytes | None, LockHolder | None, float]:
        """The lock's bytes, its holder and its heartbeat age in seconds (None bytes: no lock)."""
        try:
            raw = storage.read_bytes(self.uri)
            # A heartbeat from the future (a clock far ahead, a forged mtime) ages as far as it is off,
            # so it goes stale too instead of holding --out for ever.
            age = abs(time.time() - storage.head(self.uri)["mtime"])
        except FileNotFoundError:
            return None, None, 0.0
        return raw, LockHolder.from_bytes(raw), age

    def _stale(self, holder: LockHolder | None, age: float) -> bool:
        if age > self.stale_seconds:
            return True
        return holder is not None and holder.host == self.me.host and not pid_alive(holder.pid)

    def _take_over(self, stale: bytes) -> bool:
        """Replace the stale lock whose bytes are `stale` by ours, under the takeover lock."""
        mutex = self.uri + ".takeover"
        if not storage.create_exclusive(mutex, self._mine):
            # Someone else is taking over; a takeover lock left by a process that died in those few
            # milliseconds would block everyone, so an old one is removed.
            try:
                if time.time() - storage.head(mutex)["mtime"] > self.stale_seconds:
                    storage.delete(mutex)
            except FileNotFoundError:
                pass
            time.sleep(0.05)
            return False
        try:
            raw, _, _ = self._current()
            if raw == stale:  # still the lock judged stale, not a fresh one taken meanwhile
                storage.delete(self.uri)
            return storage.create_exclusive(self.uri, self._mine)
        finally:
            storage.delete(mutex)

    def refresh(self) -> bool:
        """Renew the heartbeat; False when the lock is no longer ours (taken over while we stalled)."""
        if not self.held:
            return False
        try:
            if storage.read_bytes(self.uri) != self._mine:
                self.held = False
                return False
        except FileNotFoundError:
            self.held = False
            return False
        storage.write_bytes(self.uri, self._mine)
        return True

    def release(self) -> None:
        """Remove the lock if it is still ours."""
        if not self.held:
            return
        self.held = False
        try:
            if storage.read_bytes(self.uri) == self._mine:
                storage.delete(self.uri)
        except FileNotFoundError:
            pass
