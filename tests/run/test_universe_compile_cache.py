"""A universe run and a universe's search keep their compiled step as a run of one fxcache does: beside the
first fxcache, one blob per step shape (the universe's rows among it) and member count, saved once the build
has compiled the step; a folder named without the signing key is refused before work (tests_gpu holds the
real round trip)."""

from __future__ import annotations

import pytest
from support.recorded_cache import RecordedCache, record_caches
from support.two_instruments import NAMES, train, write_small_params, write_two_caches

from foxhunt.data.fxcache import read_fxcache
from foxhunt.run import compile_cache

pytestmark = pytest.mark.slow


@pytest.fixture
def asked(monkeypatch) -> list[RecordedCache]:
    return record_caches(monkeypatch)


@pytest.mark.parametrize(("flags", "members"), [(("--seeds", "2"), 2), (("--trials", "2"), 1)])
def test_a_universe_keeps_the_step_of_its_members_beside_its_first_fxcache(flags, members, asked, tmp_path):
    caches = write_two_caches(tmp_path)
    code, _, errors = train(caches, write_small_params(tmp_path), tmp_path / "out", *flags)
    assert code == 0, errors
    rows = sum(len(read_fxcache(caches[name])) for name in NAMES)
    assert [(c.fxcache_uri, c.members, c.rows, c.saves) for c in asked] == [
        (caches[NAMES[0]], members, rows, 1)
    ]


@pytest.mark.parametrize("flags", [(), ("--trials", "2")])
def test_a_universe_given_a_cache_folder_without_the_key_is_refused_before_work(flags, tmp_path, monkeypatch):
    monkeypatch.delenv(compile_cache.KEY_ENV, raising=False)
    caches = write_two_caches(tmp_path)
    out = tmp_path / "out"
    folder = ("--compile-cache", str(tmp_path / "steps"))
    code, _, errors = train(caches, write_small_params(tmp_path), out, *folder, *flags)
    assert code == 2 and compile_cache.KEY_ENV in errors
    assert not out.exists()
