"""Supervised baselines that could win: models of the forward return on the 42 features, held by one rule.

Beside the DQN every run reports what a plain supervised model earns from the same features under
the same costs and position rules. Each model is fitted on the fold's training slice only (purged:
no training target reaches the validation window) and predicts, at a bar's close, the forward log
return over a horizon h of the targets (15 or 60 bars):

* `ridge_15`, `ridge_60`: ridge regression on the standardised features (`ridge.fit_ridge`),
  its penalty picked from `RIDGE_LAMBDAS` on a held-back tail of the training slice (fitted on the
  rows before it), then refitted on the whole slice.
* `mlp_15`, `mlp_60`: a small multilayer perceptron (two hidden layers of `MLP_HIDDEN` ReLU units)
  fitted by Adam on the mean squared error of the standardised target, a fixed number of steps
  (`MLP_STEPS` minibatches of `MLP_BATCH` rows drawn from the training slice), deterministic by
  seed, keeping the checkpoint that best predicts the held-back tail. Nothing of the validation
  window is looked at: the tail is the last `TAIL_SHARE` of the training slice, and the `horizon` rows
  before it, whose targets reach into it, are left out of the fit.

**The hold rule** turns predictions of the h-bar return into positions in {−1, 0, 1}. A prediction
*clears* when |ŷ| > `HOLD_MARGIN` × the round trip's cost (2 × cost per unit of position change):
the predicted move pays for entering and leaving with room to spare. At each bar the position is
the sign of the latest prediction that cleared, if it cleared at most h − 1 bars ago (so a signal
is held over the h bars it predicts); otherwise flat. A cleared prediction of the other sign
reverses at once; one of the same sign restarts the h-bar clock.

The **feature oracle** of a run is the best of these models' stitched Sharpe after costs: what a
model that sees only the features earns on the run's windows. (Picked after the fact among four,
so it is a little optimistic; it is a yardstick, not a strategy.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from foxhunt.config import TARGET_HORIZONS
from foxhunt.evaluate.mlp_fit import (  # the MLP's settings and model, named here with the other baselines'
    MLP_BATCH,
    MLP_CHECK_EVERY,  # noqa: F401
    MLP_CLIP,  # noqa: F401
    MLP_HIDDEN,
    MLP_LR,
    MLP_STEPS,
    MLP_WEIGHT_DECAY,  # noqa: F401
    MLPFit,
    _step_rows_standardised,  # noqa: F401
)

if TYPE_CHECKING:
    import torch

# torch is imported inside the functions that fit and trade: the report's `feature_oracle` and the
# names are read by code that must not load torch (the CLI, the reports).

SUPERVISED_HORIZONS = (15, 60)  # bars; each is a target column of the fxcache
HOLD_MARGIN = 1.5  # a prediction must clear this many round trips' cost to open or turn a position
RIDGE_LAMBDAS = (1e-2, 1e-1, 1.0, 10.0, 100.0)  # penalties per row tried; the held-back tail picks one
TAIL_SHARE = 0.2  # of the training slice, held back to pick the penalty or checkpoint (never validation)
MIN_SPLIT_ROWS = 100  # fewer rows to fit or hold back: no tail (default penalty; the MLP predicts the mean)
SUPERVISED_SEED = 0  # the models do not depend on the run's training seed: every seed faces the same ones
SUPERVISED_NAMES = tuple(f"{kind}_{h}" for kind in ("ridge", "mlp") for h in SUPERVISED_HORIZONS)


def target_column(horizon: int) -> int:
    """The fxcache target column holding the forward log return over `horizon` bars."""
    if horizon not in TARGET_HORIZONS:
        raise ValueError(f"horizon {horizon}: the targets hold {TARGET_HORIZONS} bars")
    return TARGET_HORIZONS.index(horizon)


def hold_positions(prediction: torch.Tensor, horizon: int, threshold: float) -> torch.Tensor:
    """Positions from predictions of the `horizon`-bar return: the sign of the latest prediction with
    |ŷ| > `threshold`, held while it is at most `horizon` − 1 bars old; flat before and after."""
    import torch

    if horizon < 1:
        raise ValueError(f"horizon {horizon}: must be ≥ 1")
    n = prediction.shape[0]
    steps = torch.arange(n, device=prediction.device)
    cleared = torch.where(prediction.abs() > threshold, steps, torch.full_like(steps, -1))
    latest = torch.cummax(cleared, 0).values if n else cleared
    signs = torch.sign(prediction).to(torch.float32)
    held = (latest >= 0) & (steps - latest < horizon)
    return torch.where(held, signs[latest.clamp(min=0)], torch.zeros_like(signs))


def hold_threshold(cost_per_unit: float, margin: float = HOLD_MARGIN) -> float:
    """The |prediction| a signal must clear: `margin` round trips (2 × cost per unit of change)."""
    return margin * 2.0 * cost_per_unit


# ---- ridge ---------------------------------------------------------------------------------------
def split_for_tail(n: int, horizon: int) -> tuple[int, int] | None:
    """(rows fitted, first row of the held-back tail): the last `TAIL_SHARE` of n training rows are the
    tail, and the `horizon` rows before it are dropped, since their targets reach into the tail.
    None when fewer than `MIN_SPLIT_ROWS` rows would be fitted or held back."""
    tail_start = n - int(n * TAIL_SHARE)
    fit_rows = tail_start - horizon
    if fit_rows < MIN_SPLIT_ROWS or n - tail_start < MIN_SPLIT_ROWS:
        return None
    return fit_rows, tail_start


def ridge_penalty(features: torch.Tensor, target: torch.Tensor, horizon: int) -> float:
    """The penalty of `RIDGE_LAMBDAS` whose fit on the rows before the held-back tail has the least
    mean squared error on the tail (the first of equals); `ridge.RIDGE_LAMBDA` when the slice is
    too short for a tail. The rows' normal equations are formed once for all the penalties."""
    return pick_penalties([tail_errors(features, target, horizon)])[0]


def tail_errors(features: torch.Tensor, target: torch.Tensor, horizon: int) -> torch.Tensor | None:
    """The held-back tail's mean squared error of each penalty's fit (`ridge_penalty`), on the device;
    None when the slice is too short for a tail."""
    import torch

    from foxhunt.evaluate.ridge import normal_equations, predict_ridges, solve_ridges
    from foxhunt.train.reductions import fixed_mean

    split = split_for_tail(features.shape[0], horizon)
    if split is None:
        return None
    fit_rows, tail_start = split
    equations = normal_equations(features[:fit_rows], [target[:fit_rows]])
    fits = solve_ridges(equations, [(0, lam) for lam in RIDGE_LAMBDAS])
    tail_y = target[tail_start:].double()
    return torch.stack(
        [fixed_mean((pred - tail_y) ** 2) for pred in predict_ridges(fits, features[tail_start:])]
    )


def pick_penalties(errors: Sequence[torch.Tensor | None]) -> list[float]:
    """Each slice's penalty from its `tail_errors`, all read from the device at once."""
    import torch

    from foxhunt.evaluate.ridge import RIDGE_LAMBDA

    found = [e for e in errors if e is not None]
    read = iter(torch.stack(found).tolist() if found else [])
    picks = []
    for e in errors:
        values = next(read) if e is not None else None
        picks.append(RIDGE_LAMBDA if values is None else RIDGE_LAMBDAS[values.index(min(values))])
    return picks


# ---- the MLP (`mlp_fit`) ---------------------------------------------------------------------------
def fit_mlp(
    features: torch.Tensor,
    target: torch.Tensor,
    horizon: int,
    *,
    seed: int = SUPERVISED_SEED,
    hidden: int = MLP_HIDDEN,
    steps: int = MLP_STEPS,
    batch: int = MLP_BATCH,
    lr: float = MLP_LR,
    graphs: bool = True,
) -> MLPFit:
    """Fit the MLP on these rows only (the fold's training slice); the same inputs and seed give the same fit.

    The last `TAIL_SHARE` of the rows are held back: the fit steps on the rows before them, less the
    `horizon` rows whose targets reach into the tail, and keeps the weights of the checkpoint (every
    `MLP_CHECK_EVERY` steps, step 0 included) with the least mean squared error on the tail. The last
    layer starts at zero, so step 0 predicts the training mean: a slice with nothing to learn ends
    there, and its predictions never clear the hold rule's threshold. A slice too short for a tail
    (`split_for_tail`) gets that step-0 model: it predicts the training mean. On a CUDA device the steps
    replay CUDA graphs of the same kernels (`mlp_steps`); `graphs=False` runs them eagerly.
    """
    from foxhunt.evaluate.mlp_fit import fit_mlps

    job = (features, target, split_for_tail(features.shape[0], horizon))
    return fit_mlps([job], seed=seed, hidden=hidden, steps=steps, batch=batch, lr=lr, graphs=graphs)[0]


# ---- per fold --------------------------------------------------------------------------------------
def ridge_predictions(
    features, targets, fold_range, *, one_bar_lambda: float | None = None
) -> dict[str, torch.Tensor]:
    """The ridge models' predictions over the fold's validation window (name → float64 tensor), fitted on
    its training slice only: `ridge_15`, `ridge_60`, and first the 1-bar `ridge` of the baselines when
    `one_bar_lambda` is given. Every fit on the whole slice shares one set of normal equations."""
    from foxhunt.evaluate.ridge import float64_once, normal_equations, predict_ridges, solve_ridges

    train = slice(fold_range.train_start, fold_range.train_end)
    x = float64_once(features[train])  # the three slices fitted below are its prefixes
    ys = {h: targets[train, target_column(h)] for h in SUPERVISED_HORIZONS}
    chosen = pick_penalties([tail_errors(x, ys[h], h) for h in SUPERVISED_HORIZONS])
    columns, penalties, names = [], [], []
    if one_bar_lambda is not None:
        columns.append(targets[train, 0])
        penalties.append(one_bar_lambda)
        names.append("ridge")
    for h, lam in zip(SUPERVISED_HORIZONS, chosen, strict=True):
        columns.append(ys[h])
        penalties.append(lam)
        names.append(f"ridge_{h}")
    equations = normal_equations(x, columns)
    fits = solve_ridges(equations, list(enumerate(penalties)))
    val = features[fold_range.val_start : fold_range.val_end]
    return dict(zip(names, predict_ridges(fits, val), strict=True))


def mlp_predictions(features, targets, fold_range, *, seed: int = SUPERVISED_SEED) -> dict[str, torch.Tensor]:
    """The MLPs' predictions over the fold's validation window (name → float64 tensor), fitted on its
    training slice only."""
    from foxhunt.evaluate.mlp_fit import fit_mlps

    train = slice(fold_range.train_start, fold_range.train_end)
    x, val = features[train], features[fold_range.val_start : fold_range.val_end]
    jobs = [(x, targets[train, target_column(h)], split_for_tail(x.shape[0], h)) for h in SUPERVISED_HORIZONS]
    fits = fit_mlps(  # every fit's host-side part first, then their steps
        jobs,
        seed=seed + fold_range.fold,
        hidden=MLP_HIDDEN,
        steps=MLP_STEPS,
        batch=MLP_BATCH,
        lr=MLP_LR,
        graphs=True,
    )
    return {f"mlp_{h}": fit.predict(val) for h, fit in zip(SUPERVISED_HORIZONS, fits, strict=True)}


def supervised_predictions(features, targets, fold_range, *, seed: int = SUPERVISED_SEED) -> dict:
    """Each model's predictions over the fold's validation window (name → float64 tensor), fitted on
    its training slice only."""
    return {
        **ridge_predictions(features, targets, fold_range),
        **mlp_predictions(features, targets, fold_range, seed=seed),
    }


def supervised_baselines(
    features, targets, fold_range, cost_per_unit: float, predictions: dict | None = None
) -> dict[str, torch.Tensor]:
    """Each supervised model's positions over the fold's validation window under the hold rule
    (`predictions`: the models' predictions, when already made)."""
    import torch

    if predictions is None:
        features = torch.as_tensor(features)
        targets = torch.as_tensor(targets, device=features.device)
        predictions = supervised_predictions(features, targets, fold_range)
    threshold = hold_threshold(cost_per_unit)
    return {
        name: hold_positions(predictions[name], int(name.rsplit("_", 1)[1]), threshold)
        for name in SUPERVISED_NAMES
    }


def oracle_label(models: int) -> str:
    """What the feature oracle is, as every place that prints it says: a pick made after the fact."""
    return f"best of {models} models picked on the validation windows, optimistic"


def oracle_record(sharpes: dict[str, float]) -> dict | None:
    """`summary.json`'s `feature_oracle`: the model picked, its net Sharpe, how many it was picked from
    and on what; None when no supervised model was scored."""
    oracle = feature_oracle(sharpes)
    if oracle is None:
        return None
    models = sum(name in SUPERVISED_NAMES for name in sharpes)
    return {"name": oracle[0], "net_sharpe": oracle[1], "models": models, "label": oracle_label(models)}


def feature_oracle(sharpes: dict[str, float]) -> tuple[str, float] | None:
    """The best supervised model by Sharpe (name, Sharpe) among `sharpes`; None when none is there."""
    found = {name: s for name, s in sharpes.items() if name in SUPERVISED_NAMES}
    if not found:
        return None
    best = max(found, key=lambda name: found[name])
    return best, found[best]
