"""Warming a trainer at build (CUDA does it, to load its kernels before the first fold) changes nothing a
fold sees. The warm-up runs on any device, so CPU pins what it leaves behind."""

import pytest
import torch
from support.trainer_cases import DEVICES, FOLDS, SMALL, planted_arrays, run_fold

from foxhunt.train import DQNTrainer, to_device
from foxhunt.train.step import WARM_VAL_ROWS, warm_up_range


@pytest.fixture(scope="module")
def synthetic():
    return planted_arrays()


def test_the_warm_up_range_is_shaped_like_the_largest_fold():
    fold = warm_up_range(rows=100_000, max_train_rows=60_000)
    assert (fold.train_start, fold.train_end) == (0, 60_000)
    assert (fold.val_start, fold.val_end) == (60_000, 60_000 + WARM_VAL_ROWS)


def test_the_warm_up_range_fits_data_shorter_than_the_folds():
    fold = warm_up_range(rows=1000, max_train_rows=5000)
    assert fold.train_rows == 750 and fold.val_end == 1000


def test_there_is_no_warm_up_range_in_a_handful_of_rows():
    assert warm_up_range(rows=5, max_train_rows=5) is None


@pytest.mark.parametrize("device", DEVICES)
def test_a_warm_up_leaves_no_fold_behind(synthetic, device):
    trainer = DQNTrainer(to_device(*synthetic, torch.device(device)), SMALL, max_train_rows=8000, seed=3)
    trainer.warm_up(8000)
    assert trainer.window.fold_range is None
    assert not torch.any(trainer.window.mean) and torch.all(trainer.window.std == 1.0)
    assert (int(trainer.window.n_valid), trainer.window.parts) == (1, ())


@pytest.mark.parametrize("device", DEVICES)
def test_a_warmed_trainer_trains_exactly_like_one_that_was_not(synthetic, device):
    data = to_device(*synthetic, torch.device(device))
    warmed = DQNTrainer(data, SMALL, max_train_rows=8000, seed=3)
    warmed.warm_up(8000)
    warmed.reset_for_fold(0)  # as the build does after its warm-up
    plain = DQNTrainer(data, SMALL, max_train_rows=8000, seed=3)
    assert run_fold(warmed, FOLDS[1]) == run_fold(plain, FOLDS[1])
    for name, tensor in plain.networks[0].state_dict().items():
        assert torch.equal(tensor, warmed.networks[0].state_dict()[name]), name
