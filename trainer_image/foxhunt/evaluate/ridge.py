"""Ridge regression on standardised features, fitted on the device: the baselines' linear model."""

from __future__ import annotations

from dataclasses import dataclass

import torch

RIDGE_LAMBDA = 1e-2  # penalty per row on standardised features: (Z'Z / n + λI) w = Z'y / n
_CHUNK_ROWS = 1 << 20  # rows per float64 block of the normal equations: bounds device memory


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
