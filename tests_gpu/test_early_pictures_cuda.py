"""The CUDA twin of tests/run/test_early_pictures.py: a GPU run's picture worker, spawned from a process
that holds a CUDA context while the folds train, draws the folds' pictures byte for byte as the run's own
process does, and no worker outlives the run."""

from __future__ import annotations

import multiprocessing

import pytest
from support.run_cases import tiny_fxcache, tiny_params
from test_early_pictures import COMPARED, run_with_cores

__all__ = ["tiny_fxcache", "tiny_params"]  # the CPU suite's fixtures: the same fxcache and parameters


def pictures(cores: int, fxcache, params, out, patch: pytest.MonkeyPatch) -> tuple[dict, list[set]]:
    """The compared pictures of a CUDA run whose process may use `cores` cores, and the processes it started."""
    started = run_with_cores(cores, fxcache, params, out, patch, "--device", "cuda")
    return {name: (out / name).read_bytes() for name in COMPARED}, started


def test_a_cuda_runs_early_picture_worker_draws_the_bytes_the_process_draws(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    here, none = pictures(2, tiny_fxcache, tiny_params, tmp_path / "here", monkeypatch)
    assert none == [set()]
    worker, (started,) = pictures(16, tiny_fxcache, tiny_params, tmp_path / "worker", monkeypatch)
    assert len(started) == 1  # the worker was up while the folds trained on the GPU
    assert worker == here
    assert not any(child.is_alive() for child in started)
    assert not multiprocessing.active_children()
