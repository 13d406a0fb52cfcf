"""Pictures drawn side by side (`evaluate/plot_jobs.py`): worker processes only where there are many
pictures and the cores for them, the same bytes as drawn in the process, a worker's error raised here."""

from __future__ import annotations

import json

import pytest

from foxhunt.evaluate import plot_jobs
from foxhunt.evaluate.plot import render_timings_png
from foxhunt.evaluate.plot_jobs import PictureJob, draw_pictures, picture_workers, usable_cores


def timings_job(k: int) -> PictureJob:
    phases = {"train": [1.0 + k, 2.0, 0.5], "validate": [0.2, 0.3 * k, 0.1]}
    return PictureJob(f"fold_{k}/timings.png", render_timings_png, ([0, 1, 2], phases, f"run {k}: timings"))


def test_a_single_runs_four_pictures_are_drawn_in_the_process():
    assert picture_workers(4, cores=16) == 1


def test_a_universes_pictures_take_a_worker_per_four_up_to_half_the_cores():
    assert picture_workers(33, cores=16) == 8
    assert picture_workers(12, cores=16) == 3
    assert picture_workers(33, cores=6) == 3


def test_two_cores_draw_every_picture_in_the_process():
    assert picture_workers(33, cores=2) == 1


def test_pictures_drawn_by_workers_are_the_bytes_drawn_here():
    jobs = [timings_job(k) for k in range(3)]
    here = draw_pictures(jobs, workers=1)
    assert draw_pictures(jobs, workers=2) == here
    assert len(set(here.values())) == 3 and all(png.startswith(b"\x89PNG") for png in here.values())


def test_a_workers_error_is_raised_here():
    jobs = [timings_job(0), PictureJob("broken.png", json.loads, ("{",))]
    with pytest.raises(json.JSONDecodeError):
        draw_pictures(jobs, workers=2)


def test_a_large_node_draws_with_at_most_eight_workers():
    assert picture_workers(129, cores=64) == 8


def test_a_pods_cpu_quota_caps_the_usable_cores(tmp_path):
    cpu_max = tmp_path / "cpu.max"
    cpu_max.write_text("200000 100000\n")  # a limit of 2 CPUs
    assert usable_cores(cpu_max) == min(2, usable_cores(tmp_path / "absent"))
    cpu_max.write_text("max 100000\n")
    assert usable_cores(cpu_max) == usable_cores(tmp_path / "absent") >= 1


def test_a_pool_that_cannot_start_draws_every_picture_here(monkeypatch):
    def refused(*args, **kwargs):
        raise OSError("spawn refused")

    jobs = [timings_job(k) for k in range(3)]
    here = draw_pictures(jobs, workers=1)
    monkeypatch.setattr(plot_jobs, "ProcessPoolExecutor", refused)
    assert draw_pictures(jobs, workers=2) == here
