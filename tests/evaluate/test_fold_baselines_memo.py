"""A memo keeps each fold window's baselines: members and trials fit them once per window, with the same figures."""

import numpy as np
import pytest
import torch
from support.signal_arrays import signal_arrays

from foxhunt.data.folds import FoldRange
from foxhunt.evaluate import run_scores
from foxhunt.evaluate.evaluation import Scoring
from foxhunt.evaluate.score_memo import ScoreMemo

FOLD = FoldRange(0, 500, 4500, 4560, 5560, 0.0)
LATER = FoldRange(1, 1500, 5500, 5560, 5960, 0.0)


@pytest.fixture(scope="module")
def data():
    arrays = signal_arrays(6000, seed=3)
    return torch.from_numpy(arrays.features), torch.from_numpy(arrays.targets), arrays.timestamp


@pytest.fixture
def fits(monkeypatch):
    calls = []
    real = run_scores.fold_baselines

    def counted(features, targets, fold_range, scoring):
        calls.append(fold_range.fold)
        return real(features, targets, fold_range, scoring)

    monkeypatch.setattr(run_scores, "fold_baselines", counted)
    return calls


def _positions(seed: int, fold: FoldRange) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.integers(-1, 2, fold.val_rows).astype(np.float32))


def test_members_of_one_fold_window_fit_the_baselines_once_with_the_figures_of_a_fit_each(data, fits):
    features, targets, timestamp = data
    scoring, memo = Scoring(resamples=50), ScoreMemo()
    for member in range(3):
        positions = _positions(member, FOLD)
        window, others = run_scores.evaluate_fold(
            features, targets, timestamp, FOLD, positions, scoring, memo
        )
        alone, alone_others = run_scores.evaluate_fold(features, targets, timestamp, FOLD, positions, scoring)
        assert window == alone
        assert all(torch.equal(others[name], alone_others[name]) for name in alone_others)
    assert fits == [0] + [0, 0, 0]  # the memo's one fit, then one for each call without a memo


def test_another_window_or_another_cost_fits_its_own_baselines(data, fits):
    features, targets, timestamp = data
    memo = ScoreMemo()
    run_scores.evaluate_fold(
        features, targets, timestamp, FOLD, _positions(0, FOLD), Scoring(resamples=0), memo
    )
    run_scores.evaluate_fold(
        features, targets, timestamp, LATER, _positions(0, LATER), Scoring(resamples=0), memo
    )
    dearer = Scoring(resamples=0, cost=Scoring().cost * 2 + 1e-4)
    run_scores.evaluate_fold(features, targets, timestamp, FOLD, _positions(0, FOLD), dearer, memo)
    assert fits == [0, 1, 0]
