"""A single run's picture worker started with its training (`plot_jobs.early_worker`, forced here: this
machine has few cores): the run's pictures byte for byte those drawn in the process, apart from
timings.png (seconds differ between runs); drawn in the process when the worker cannot start; and a run
that fails while it trains leaves no worker behind."""

from __future__ import annotations

import contextlib
import io
import logging
import multiprocessing

import pytest
from support.run_cases import train_argv

from foxhunt import collector
from foxhunt.cli import main
from foxhunt.evaluate import plot_jobs, plot_learning
from foxhunt.run import walk_forward

# Two folds of one epoch, one run id: the pictures' titles name the run.
EXTRA = ("--epochs", "1", "--max-folds", "2", "--run-id", "early-pictures", "--pictures", "on")
COMPARED = ("run.png", "positions.png", "learning.png")


def run_with_cores(cores: int, fxcache, params, out, patch: pytest.MonkeyPatch, *flags: str) -> list[set]:
    """A finished run (with `flags` after the tiny run's) whose process may use `cores` cores; the
    processes started while its folds walked."""
    walk, started = walk_forward.walk_folds, []
    before = set(multiprocessing.active_children())

    def watched(*args, **kwargs):
        done = walk(*args, **kwargs)
        started.append(set(multiprocessing.active_children()) - before)
        return done

    patch.setattr(plot_jobs, "usable_cores", lambda *args: cores)
    patch.setattr(collector, "owned", lambda: True)  # as the console command's own process
    patch.setattr(walk_forward, "walk_folds", watched)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(train_argv(fxcache, out, params, *EXTRA, *flags)) == 0
    return started


@pytest.fixture(scope="module")
def in_process(tiny_fxcache, tiny_params, tmp_path_factory):
    """The run's pictures drawn in the process, as on two cores."""
    out = tmp_path_factory.mktemp("in-process") / "out"
    with pytest.MonkeyPatch.context() as patch:
        assert run_with_cores(2, tiny_fxcache, tiny_params, out, patch) == [set()]
    return {name: (out / name).read_bytes() for name in COMPARED}


def test_a_run_with_cores_to_spare_draws_with_an_early_worker_the_same_bytes(
    in_process, tiny_fxcache, tiny_params, tmp_path, monkeypatch, caplog
):
    submit, sent, titles = plot_jobs.PicturePool.submit, [], []

    def spy(pool, job):
        sent.append(job.key)
        titles.append(job.args[-1])
        submit(pool, job)

    stitch_outcomes = walk_forward.stitch_outcomes

    def stitched(*args, **kwargs):
        sent.append("the stitched record")
        return stitch_outcomes(*args, **kwargs)

    learning_figure, drawn_here = plot_learning.learning_figure, []

    def learning_here(*args):
        drawn_here.append(args)
        return learning_figure(*args)

    monkeypatch.setattr(plot_jobs.PicturePool, "submit", spy)
    monkeypatch.setattr(walk_forward, "stitch_outcomes", stitched)
    monkeypatch.setattr(plot_learning, "learning_figure", learning_here)  # this process's, not the worker's
    out = tmp_path / "out"
    with caplog.at_level(logging.WARNING, logger=plot_jobs.__name__):
        (started,) = run_with_cores(4, tiny_fxcache, tiny_params, out, monkeypatch)
    assert len(started) == 1  # the worker was up while the folds trained
    # The folds' pictures went to it before the stitched record was scored, so their title has no verdict.
    assert sent == ["timings.png", "learning.png", "the stitched record"]
    assert titles == [f"foxhunt run early-pictures on cpu: {name}" for name in ("timings", "learning")]
    assert not caplog.records and not drawn_here  # and it drew them: no fallback, not drawn again here
    assert {name: (out / name).read_bytes() for name in COMPARED} == in_process
    assert not any(child.is_alive() for child in started)


def test_a_run_whose_worker_cannot_start_draws_the_same_bytes_in_the_process(
    in_process, tiny_fxcache, tiny_params, tmp_path, monkeypatch, caplog
):
    def refused(*args, **kwargs):
        raise OSError("spawn refused")

    monkeypatch.setattr(plot_jobs, "ProcessPoolExecutor", refused)
    out = tmp_path / "out"
    with caplog.at_level(logging.WARNING, logger=plot_jobs.__name__):
        run_with_cores(4, tiny_fxcache, tiny_params, out, monkeypatch)
    assert "could not start" in caplog.text
    assert {name: (out / name).read_bytes() for name in COMPARED} == in_process
    assert (out / "timings.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_run_that_fails_while_it_trains_leaves_no_picture_worker(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    before, seen = set(multiprocessing.active_children()), []

    def broken(*args, **kwargs):
        seen.extend(set(multiprocessing.active_children()) - before)
        raise RuntimeError("the device fell over")

    monkeypatch.setattr(plot_jobs, "usable_cores", lambda *args: 4)
    monkeypatch.setattr(collector, "owned", lambda: True)
    monkeypatch.setattr(walk_forward, "walk_folds", broken)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(train_argv(tiny_fxcache, tmp_path / "out", tiny_params, *EXTRA)) == 1
    assert len(seen) == 1  # the worker had started
    assert not any(child.is_alive() for child in seen)


def test_a_run_called_from_a_library_starts_no_picture_worker(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    # main(argv) is not the console command's own process: a spawned worker would re-import the caller's script
    walk, started = walk_forward.walk_folds, []
    before = set(multiprocessing.active_children())

    def watched(*args, **kwargs):
        started.append(set(multiprocessing.active_children()) - before)
        return walk(*args, **kwargs)

    monkeypatch.setattr(plot_jobs, "usable_cores", lambda *args: 16)
    monkeypatch.setattr(walk_forward, "walk_folds", watched)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(train_argv(tiny_fxcache, tmp_path / "out", tiny_params, *EXTRA)) == 0
    assert started == [set()]


SEEDS_AND_HOLDOUT = ("--seeds", "2", "--holdout-days", "2")


@pytest.mark.parametrize("cores", [2, 4])
def test_seeds_png_is_written_before_the_holdout_fold_which_may_fail_or_be_killed(
    cores, tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    out, written_at_holdout = tmp_path / "out", []

    def broken(*args, **kwargs):
        written_at_holdout.append((out / "seeds.png").read_bytes()[:8])
        raise RuntimeError("the device fell over in the holdout")

    monkeypatch.setattr(walk_forward, "run_holdout", broken)
    monkeypatch.setattr(plot_jobs, "usable_cores", lambda *args: cores)
    monkeypatch.setattr(collector, "owned", lambda: True)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(train_argv(tiny_fxcache, out, tiny_params, *EXTRA, *SEEDS_AND_HOLDOUT)) == 1
    assert written_at_holdout == [b"\x89PNG\r\n\x1a\n"]  # on disk before the held-out fold began
