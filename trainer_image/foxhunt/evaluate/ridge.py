"""Ridge regression on standardised features, fitted on the device: the baselines' linear model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from foxhunt.train.reductions import fixed_sum

RIDGE_LAMBDA = 1e-2  # penalty per row on standardised features: (Z'Z / n + λI) w = Z'y / n
_CHUNK_ROWS = 1 << 20  # rows per float64 block of the normal equations: bounds device memory


@dataclass(frozen=True)
class RidgeFit:
    """A ridge model on features standardised with its training slice's stats (float64, on the device)."""

    mean: torch.Tensor  # (k,)
    std: torch.Tensor  # (k,): population std, 1 where a feature is constant
    weights: torch.Tensor  # (k,): on the standardised features
    intercept: torch.Tensor  # (): the training target's mean (not penalised)


@dataclass(frozen=True)
class NormalEquations:
    """The centred cross-products of one slice of features with one or more targets (float64, on the device):
    what every ridge fit on those rows needs, whatever its penalty."""

    rows: int
    mean: torch.Tensor  # (k,)
    gram: torch.Tensor  # (k, k): Σ (x − mean)(x − mean)'
    y_means: list[torch.Tensor]  # per target, ()
    crosses: list[torch.Tensor]  # per target, (k,): Σ (x − mean)(y − ȳ)
    std: (
        torch.Tensor
    )  # (k,): population std, 1 where a feature is constant; one tensor for every fit of these rows


def float64_once(features: torch.Tensor) -> torch.Tensor:
    """The rows in float64 when they fit one block of `_CHUNK_ROWS` (the conversion is exact, and the fits
    on them, which convert every block on every pass, then find it done); larger slices as they are."""
    return features.double() if features.shape[0] <= _CHUNK_ROWS else features


def normal_equations(features: torch.Tensor, targets: Sequence[torch.Tensor]) -> NormalEquations:
    """Two passes over row blocks in float64: the means, then the centred cross-products, so features with
    a large mean and a small spread lose nothing to cancellation. The Gram matrix, the costly part, is
    computed once for every target and penalty fitted on these rows."""
    n, k = features.shape
    if n < 2:
        raise ValueError(f"ridge needs at least 2 training rows, got {n}")
    dev = features.device
    sum_x = torch.zeros(k, dtype=torch.float64, device=dev)
    sum_y = [torch.zeros((), dtype=torch.float64, device=dev) for _ in targets]
    for lo in range(0, n, _CHUNK_ROWS):
        sum_x += features[lo : lo + _CHUNK_ROWS].double().sum(0)
        for total, target in zip(sum_y, targets, strict=True):
            total += fixed_sum(target[lo : lo + _CHUNK_ROWS].double())
    mean, y_means = sum_x / n, [total / n for total in sum_y]
    gram = torch.zeros((k, k), dtype=torch.float64, device=dev)
    crosses = [torch.zeros(k, dtype=torch.float64, device=dev) for _ in targets]
    for lo in range(0, n, _CHUNK_ROWS):
        x = features[lo : lo + _CHUNK_ROWS].double() - mean
        gram += x.T @ x
        for cross, target, y_mean in zip(crosses, targets, y_means, strict=True):
            cross += x.T @ (target[lo : lo + _CHUNK_ROWS].double() - y_mean)
    std = torch.sqrt(torch.diagonal(gram) / n)
    std = torch.where(std > 1e-8, std, torch.ones_like(std))
    return NormalEquations(rows=n, mean=mean, gram=gram, y_means=y_means, crosses=crosses, std=std)


def solve_ridge(equations: NormalEquations, target: int, lam: float = RIDGE_LAMBDA) -> RidgeFit:
    """Solve (Z'Z / n + λI) w = Z'(y − ȳ) / n for the `target`-th target of `equations`; Z = (X − mean) / std.

    A feature whose std is ≤ 1e-8 keeps std 1 (as the trainer's norm stats do) and gets weight 0.
    """
    return solve_ridges(equations, [(target, lam)])[0]


def solve_ridges(equations: NormalEquations, wanted: Sequence[tuple[int, float]]) -> list[RidgeFit]:
    """`solve_ridge` for each (target, penalty) of `wanted`, each solved alone; the scaled Gram matrix and
    each target's right-hand side are formed once, and no solve waits for the host (see below)."""
    for _, lam in wanted:
        if not lam > 0:
            raise ValueError(f"ridge lambda {lam}: must be > 0")
    n, gram, std = equations.rows, equations.gram, equations.std
    k = gram.shape[0]
    scale = 1.0 / std
    scaled = gram * scale[:, None] * scale[None, :] / n
    eye = torch.eye(k, dtype=torch.float64, device=gram.device)
    rhs = {target: equations.crosses[target] * scale / n for target in dict(wanted)}
    fits = []
    for target, lam in wanted:
        # Z'Z / n is positive semi-definite and λ > 0: the system is positive definite, never singular, so
        # the solve skips `linalg.solve`'s error check (on CUDA a wait for the device); the same kernels.
        weights = torch.linalg.solve_ex(scaled + lam * eye, rhs[target], check_errors=False).result
        fits.append(
            RidgeFit(mean=equations.mean, std=std, weights=weights, intercept=equations.y_means[target])
        )
    return fits


def fit_ridge(features: torch.Tensor, target: torch.Tensor, lam: float = RIDGE_LAMBDA) -> RidgeFit:
    """Solve (Z'Z / n + λI) w = Z'(y − ȳ) / n on the device; Z = (X − mean) / std of these rows
    (`normal_equations`, then `solve_ridge`)."""
    if not lam > 0:
        raise ValueError(f"ridge lambda {lam}: must be > 0")
    return solve_ridge(normal_equations(features, [target]), 0, lam)


def predict_ridge(fit: RidgeFit, features: torch.Tensor) -> torch.Tensor:
    """Predicted 1-bar log return per row (float64, on the features' device)."""
    return predict_ridges([fit], features)[0]


def predict_ridges(fits: Sequence[RidgeFit], features: torch.Tensor) -> list[torch.Tensor]:
    """Each fit's predictions per row (float64, on the features' device); fits fitted on the same rows
    share their standardisation, which is then computed once."""
    outs = [torch.empty(features.shape[0], dtype=torch.float64, device=features.device) for _ in fits]
    for lo in range(0, features.shape[0], _CHUNK_ROWS):
        x = features[lo : lo + _CHUNK_ROWS].double()
        z, scaled_by = None, None
        for fit, out in zip(fits, outs, strict=True):
            if z is None or scaled_by is None or not _same_scaling(scaled_by, fit):
                z, scaled_by = (x - fit.mean) / fit.std, fit
            out[lo : lo + _CHUNK_ROWS] = z @ fit.weights + fit.intercept
    return outs


def _same_scaling(a: RidgeFit, b: RidgeFit) -> bool:
    # By identity (fits of one set of normal equations), not by value: comparing values waits for the
    # device, and scaling again where they happen to agree gives the same numbers.
    return a.mean is b.mean and a.std is b.std
