"""A search's trainers take their compiled step from the run's compile cache and keep it there: one blob per
shape and population size, saved once the build has compiled and captured the step (on CUDA;
tests_gpu/test_compile_cache_cuda.py holds the real round trip)."""

from __future__ import annotations

import pytest
from support.recorded_cache import RecordedCache, record_caches
from support.search_cases import search_argv

from foxhunt.cli import main

pytestmark = pytest.mark.slow


@pytest.fixture
def asked(monkeypatch) -> list[RecordedCache]:
    return record_caches(monkeypatch)


def test_a_population_search_keeps_one_compiled_step_for_its_population(
    asked, tiny_fxcache, tiny_params, tmp_path
):
    assert main(search_argv(tiny_fxcache, tmp_path / "out", tiny_params, 3, "--population", "2")) == 0
    assert [(c.members, c.saves) for c in asked] == [(2, 1)]


def test_trials_one_at_a_time_keep_one_compiled_step_of_one_member(
    asked, tiny_fxcache, tiny_params, tmp_path
):
    assert main(search_argv(tiny_fxcache, tmp_path / "out", tiny_params, 2)) == 0
    assert [(c.members, c.saves) for c in asked] == [(1, 1)]
