"""Baseline policies on the model's bars, under the model's position rules, computed on the device.

Every baseline holds positions in {−1, 0, 1} over a fold's validation window, entered from flat
at its first bar, and is scored by `foxhunt.evaluation` with the same costs as the model:

* `buy_and_hold`: long on every bar (pays the entry once).
* `flat`: never in the market.
* `last_return_sign`: at bar t, the sign of the bar's own 1-bar log return (feature
  `log_return_1`: close t over close t − 1, known at t's close), held over the next bar. It never
  reads the target (close t + 1 over close t).
* `ridge`: a ridge regression of the 1-bar target on the 42 features, fitted on the fold's
  training slice (purged, so no training target reaches the window), traded by `threshold_positions`
  with the switching cost as threshold.
* `ridge_15`, `ridge_60`, `mlp_15`, `mlp_60`: supervised models of the 15- and 60-bar forward
  return, fitted on the training slice and held by one rule (`foxhunt.supervised`); the best of
  them is the run's feature oracle.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from foxhunt.features import FEATURE_NAMES

RIDGE_LAMBDA = 1e-2  # penalty per row on standardised features: (Z'Z / n + λI) w = Z'y / n
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
_CHUNK_ROWS = 1 << 20  # rows per float64 block of the normal equations: bounds device memory


def last_return_sign_positions(features: torch.Tensor, start: int, end: int) -> torch.Tensor:
    """Positions over rows [start, end): the sign of each bar's own 1-bar log return (0 when unchanged)."""
    return torch.sign(features[start:end, LAST_RETURN_COLUMN]).to(torch.float32)


@dataclass(frozen=True)
class RidgeFit:
    """A ridge model on features standardised with its training slice's stats (float64, on the device)."""

    mean: torch.Tensor  # (k,)
    std: torch.Tensor  # (k,): population std, 1 where a feature is constant
    weights: torch.Tensor  # (k,): on the standardised features
    intercept: torch.Tensor  # (): the training target's mean (not penalised)


def fit_ridge(features: torch.Tensor, target: torch.Tensor, lam: float = RIDGE_LAMBDA) -> RidgeFit:
    """Solve (Z'Z / n + λI) w = Z'(y − ȳ) / n on the device; Z = (X − mean) / std of these rows.

    Two passes over row blocks in float64: the means, then the centred cross-products, so
    features with a large mean and a small spread lose nothing to cancellation. A feature whose
    std is ≤ 1e-8 keeps std 1 (as the trainer's norm stats do) and gets weight 0.
    """
    if not lam > 0:
        raise ValueError(f"ridge lambda {lam}: must be > 0")
    n, k = features.shape
    if n < 2:
        raise ValueError(f"ridge needs at least 2 training rows, got {n}")
    dev = features.device
    sum_x = torch.zeros(k, dtype=torch.float64, device=dev)
    sum_y = torch.zeros((), dtype=torch.float64, device=dev)
    for lo in range(0, n, _CHUNK_ROWS):
        sum_x += features[lo : lo + _CHUNK_ROWS].double().sum(0)
        sum_y += target[lo : lo + _CHUNK_ROWS].double().sum()
    mean, y_mean = sum_x / n, sum_y / n
    gram = torch.zeros((k, k), dtype=torch.float64, device=dev)
    cross = torch.zeros(k, dtype=torch.float64, device=dev)
    for lo in range(0, n, _CHUNK_ROWS):
        x = features[lo : lo + _CHUNK_ROWS].double() - mean
        gram += x.T @ x
        cross += x.T @ (target[lo : lo + _CHUNK_ROWS].double() - y_mean)
    std = torch.sqrt(torch.diagonal(gram) / n)
    std = torch.where(std > 1e-8, std, torch.ones_like(std))
    scale = 1.0 / std
    lhs = gram * scale[:, None] * scale[None, :] / n + lam * torch.eye(k, dtype=torch.float64, device=dev)
    weights = torch.linalg.solve(lhs, cross * scale / n)
    return RidgeFit(mean=mean, std=std, weights=weights, intercept=y_mean)


def predict_ridge(fit: RidgeFit, features: torch.Tensor) -> torch.Tensor:
    """Predicted 1-bar log return per row (float64, on the features' device)."""
    out = torch.empty(features.shape[0], dtype=torch.float64, device=features.device)
    for lo in range(0, features.shape[0], _CHUNK_ROWS):
        z = (features[lo : lo + _CHUNK_ROWS].double() - fit.mean) / fit.std
        out[lo : lo + _CHUNK_ROWS] = z @ fit.weights + fit.intercept
    return out


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
    from foxhunt.supervised import supervised_baselines  # it builds on this module's ridge

    features = torch.as_tensor(features)
    targets = torch.as_tensor(targets, device=features.device)
    start, end = fold_range.val_start, fold_range.val_end
    ones = torch.ones(end - start, device=features.device)
    fit = fit_ridge(
        features[fold_range.train_start : fold_range.train_end],
        targets[fold_range.train_start : fold_range.train_end, 0],
        ridge_lambda,
    )
    return {
        "buy_and_hold": ones,
        "flat": torch.zeros_like(ones),
        "last_return_sign": last_return_sign_positions(features, start, end),
        "ridge": threshold_positions(predict_ridge(fit, features[start:end]), cost_per_unit),
        **supervised_baselines(features, targets, fold_range, cost_per_unit),
    }
