"""The compile cache as a recorder (`compile_cache.for_run` replaced): what each trainer build asked of it
(where, for how many members and rows) and how often it saved; CI's CPUs never compile a step."""

from __future__ import annotations

import pytest

from foxhunt.run import compile_cache


class RecordedCache:
    """One trainer build's request: the fxcache its blob sits beside, its members and rows, its saves."""

    def __init__(self, fxcache_uri: str, members: int, rows: int) -> None:
        self.fxcache_uri, self.members, self.rows, self.saves = fxcache_uri, members, rows, 0

    def after_build(self, progress) -> None:
        self.saves += 1


def record_caches(monkeypatch: pytest.MonkeyPatch) -> list[RecordedCache]:
    """Every cache a trainer build opens from now on, in order."""
    opened: list[RecordedCache] = []

    def for_run(setting, fxcache_uri, dqn, data, replay_rows, members, progress):
        opened.append(RecordedCache(fxcache_uri, members, int(data.features.shape[0])))
        return opened[-1]

    monkeypatch.setattr(compile_cache, "for_run", for_run)
    return opened
