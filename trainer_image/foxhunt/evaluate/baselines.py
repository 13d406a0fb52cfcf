"""Baseline policies on the model's bars, under the model's position rules, computed on the device.

Every baseline holds positions in {−1, 0, 1} over a fold's validation window, entered from flat
at its first bar, and is scored by `foxhunt.evaluate.evaluation` with the same costs as the model:

* `buy_and_hold`: long on every bar (pays the entry once).
* `flat`: never in the market.
* `last_return_sign`: at bar t, the sign of the bar's own 1-bar log return (feature
  `log_return_1`: close t over close t − 1, known at t's close), held over the next bar. It never
  reads the target (close t + 1 over close t).
* `ridge`: a ridge regression of the 1-bar target on the 42 features, fitted on the fold's
  training slice (purged, so no training target reaches the window), traded by `threshold_positions`
  with the switching cost as threshold.
* `ridge_15`, `ridge_60`, `mlp_15`, `mlp_60`: supervised models of the 15- and 60-bar forward
  return, fitted on the training slice and held by one rule (`foxhunt.evaluate.supervised`); the best of
  them is the run's feature oracle.
"""

from __future__ import annotations

import torch

from foxhunt.data.features import FEATURE_NAMES
from foxhunt.evaluate.ridge import RIDGE_LAMBDA, fit_ridge, predict_ridge  # noqa: F401 (tests read them here)

BASELINE_NAMES = (
    "buy_and_hold",
    "flat",
    "last_return_sign",
    "ridge",
    "ridge_15",
    "ridge_60",
    "mlp_15",
    "mlp_60",
)
LAST_RETURN_COLUMN = FEATURE_NAMES.index("log_return_1")


def last_return_sign_positions(features: torch.Tensor, start: int, end: int) -> torch.Tensor:
    """Positions over rows [start, end): the sign of each bar's own 1-bar log return (0 when unchanged)."""
    return torch.sign(features[start:end, LAST_RETURN_COLUMN]).to(torch.float32)


def threshold_positions(prediction: torch.Tensor, threshold: float) -> torch.Tensor:
    """Trade the sign of a 1-bar prediction only when it pays for the switch; otherwise hold.

    Starting flat, at each bar: if |prediction| > threshold, take position sign(prediction);
    else keep the previous position. With threshold = cost per unit of change this is the
    one-bar comparison of switching to q = sign(ŷ) from p ≠ q: q·ŷ − c·|q − p| > p·ŷ ⟺ |ŷ| > c
    (for a reversal both sides double). Vectorised: the position is the sign at the latest bar
    that cleared the threshold.
    """
    n = prediction.shape[0]
    steps = torch.arange(n, device=prediction.device)
    cleared = torch.where(prediction.abs() > threshold, steps, torch.full_like(steps, -1))
    latest = torch.cummax(cleared, 0).values if n else cleared
    signs = torch.sign(prediction).to(torch.float32)
    return torch.where(latest >= 0, signs[latest.clamp(min=0)], torch.zeros_like(signs))


def fold_baselines(
    features, targets, fold_range, cost_per_unit: float, *, ridge_lambda: float = RIDGE_LAMBDA
) -> dict[str, torch.Tensor]:
    """Each baseline's positions over the fold's validation window, on the features' device."""
    from foxhunt.evaluate.supervised import mlp_predictions, ridge_predictions, supervised_baselines

    features = torch.as_tensor(features)
    targets = torch.as_tensor(targets, device=features.device)
    start, end = fold_range.val_start, fold_range.val_end
    ones = torch.ones(end - start, device=features.device)
    # The 1-bar ridge and the supervised ridges are fitted on the same training rows: one Gram matrix.
    predictions = ridge_predictions(features, targets, fold_range, one_bar_lambda=ridge_lambda)
    one_bar = predictions.pop("ridge")
    predictions.update(mlp_predictions(features, targets, fold_range))
    return {
        "buy_and_hold": ones,
        "flat": torch.zeros_like(ones),
        "last_return_sign": last_return_sign_positions(features, start, end),
        "ridge": threshold_positions(one_bar, cost_per_unit),
        **supervised_baselines(features, targets, fold_range, cost_per_unit, predictions),
    }
