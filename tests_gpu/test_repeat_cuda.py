"""The CUDA twin of tests/run/test_cpu_repeats.py: on one GPU the same command in fresh processes gives
the same weights and figures bit for bit, and a run killed inside fold 1 resumes to the uninterrupted run."""

from __future__ import annotations

import pytest
from support.reference_figures import run_figures
from support.run_cases import completed_folds
from test_cpu_repeats import _differences, finished, inputs, only_folds, start

EPOCHS = 40  # enough for the kill to land inside fold 1 on a GPU
__all__ = ["inputs"]  # the CPU module's fixture: the same fxcache and parameters file


@pytest.fixture(scope="module")
def uninterrupted(inputs, tmp_path_factory) -> dict[str, object]:
    return finished(inputs, tmp_path_factory.mktemp("cuda") / "out", 2, "cuda", EPOCHS)


def test_the_same_cuda_training_twice_gives_every_weight_and_figure_bit_for_bit(
    inputs, uninterrupted, tmp_path
):
    again = finished(inputs, tmp_path / "out", 2, "cuda", EPOCHS)
    assert sum(":" in k for k in again) == 2 * 6  # both folds' six weight tensors are compared
    assert not _differences(again, uninterrupted), "\n".join(_differences(again, uninterrupted)[:20])


def test_a_cuda_run_killed_inside_fold_1_resumes_to_the_uninterrupted_run(inputs, uninterrupted, tmp_path):
    out = tmp_path / "out"
    first = start(inputs, out, 2, "cuda", EPOCHS)
    first.wait_for("fold 1 epoch 2/")
    first.process.kill()
    first.finish()
    assert completed_folds(out) == [0]
    second = start(inputs, out, 2, "cuda", EPOCHS)
    assert second.finish() == 0, second.output()
    resumed, whole = only_folds(run_figures(out)), only_folds(uninterrupted)
    assert not _differences(resumed, whole), "\n".join(_differences(resumed, whole)[:20])
