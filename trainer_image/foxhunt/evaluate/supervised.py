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

from typing import TYPE_CHECKING

from foxhunt.config import TARGET_HORIZONS

if TYPE_CHECKING:
    import torch

# torch is imported inside the functions that fit and trade: the report's `feature_oracle` and the
# names are read by code that must not load torch (the CLI, the reports).

SUPERVISED_HORIZONS = (15, 60)  # bars; each is a target column of the fxcache
HOLD_MARGIN = 1.5  # a prediction must clear this many round trips' cost to open or turn a position
RIDGE_LAMBDAS = (1e-2, 1e-1, 1.0, 10.0, 100.0)  # penalties per row tried; the held-back tail picks one
MLP_HIDDEN = 32  # units in each of the two hidden layers
MLP_STEPS = 300  # Adam steps per fit, whatever the training slice's size (bounds the CPU time)
MLP_BATCH = 1024  # rows per step, drawn with replacement from the fitted rows
MLP_LR = 1e-3  # Adam learning rate
MLP_WEIGHT_DECAY = 1e-4  # decoupled (AdamW) weight decay
TAIL_SHARE = 0.2  # of the training slice, held back to pick the penalty or checkpoint (never validation)
MLP_CHECK_EVERY = 25  # steps between checkpoints scored on the held-back tail
MIN_SPLIT_ROWS = 100  # fewer rows to fit or hold back: no tail (default penalty; the MLP predicts the mean)
MLP_CLIP = 5.0  # standardised features and targets are clipped to ±this, so one outlier cannot steer the fit
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
    from foxhunt.evaluate.ridge import RIDGE_LAMBDA, normal_equations, predict_ridges, solve_ridge
    from foxhunt.train.reductions import fixed_mean

    split = split_for_tail(features.shape[0], horizon)
    if split is None:
        return RIDGE_LAMBDA
    fit_rows, tail_start = split
    equations = normal_equations(features[:fit_rows], [target[:fit_rows]])
    fits = [solve_ridge(equations, 0, lam) for lam in RIDGE_LAMBDAS]
    tail_y = target[tail_start:].double()
    errors = [float(fixed_mean((pred - tail_y) ** 2)) for pred in predict_ridges(fits, features[tail_start:])]
    return RIDGE_LAMBDAS[errors.index(min(errors))]


# ---- the MLP ---------------------------------------------------------------------------------------
class MLPFit:
    """A fitted MLP with its training slice's feature and target scales (float32, on the device)."""

    def __init__(self, net: torch.nn.Module, mean, std, y_mean: float, y_std: float):
        self.net, self.mean, self.std, self.y_mean, self.y_std = net, mean, std, y_mean, y_std

    def predict(self, features: torch.Tensor) -> torch.Tensor:
        """Predicted forward log return per row (float64)."""
        import torch

        out = torch.empty(features.shape[0], dtype=torch.float64, device=features.device)
        with torch.no_grad():
            for lo in range(0, features.shape[0], 1 << 18):
                z = _standardise(features[lo : lo + (1 << 18)], self.mean, self.std)
                out[lo : lo + (1 << 18)] = self.net(z).squeeze(1).double() * self.y_std + self.y_mean
        return out


def _standardise(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    # In place after the subtraction: the same operations in the same order, one buffer instead of three.
    return (x.float() - mean).div_(std).clamp_(-MLP_CLIP, MLP_CLIP)


def _step_rows_standardised(features, rows: torch.Tensor, fit_rows: int, mean, std) -> torch.Tensor:
    """Every step's rows of `features`, standardised: (steps, batch, k). Elementwise, so the same numbers
    whichever comes first: the fitted rows standardised once and gathered when they are fewer than the
    steps draw (300 × 1024; a two-year fold fits ~100,000), else the drawn rows gathered and standardised."""
    flat = rows.reshape(-1)
    if fit_rows < flat.numel():
        z = _standardise(features[:fit_rows], mean, std)[flat]
    else:
        z = _standardise(features[flat], mean, std)
    return z.view(*rows.shape, features.shape[1])


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
    import torch

    if features.device.type == "cpu":  # so small a network runs fastest on one thread, and shares the CPU
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return _fit_mlp(features, target, horizon, seed, hidden, steps, batch, lr, graphs)
        finally:
            torch.set_num_threads(threads)
    return _fit_mlp(features, target, horizon, seed, hidden, steps, batch, lr, graphs)


def _new_mlp(k: int, hidden: int, seed: int) -> torch.nn.Sequential:
    """The k → hidden → hidden → 1 ReLU net, initialised from `seed` alone, its head zeroed.

    The zero head predicts the training mean at step 0; the global RNG is forked so that
    building the net leaves the caller's random stream where it was.
    """
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = torch.nn.Sequential(
            torch.nn.Linear(k, hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, 1),
        )
        head = net[-1]
        assert isinstance(head, torch.nn.Linear)
        torch.nn.init.zeros_(head.weight)
        torch.nn.init.zeros_(head.bias)
    return net


def _fit_mlp(
    features, target, horizon: int, seed: int, hidden: int, steps: int, batch: int, lr: float, graphs: bool
) -> MLPFit:
    import torch

    from foxhunt.train.reductions import fixed_mean, fixed_std

    n, k = features.shape
    if n < 1:
        raise ValueError("the MLP needs at least 1 training row")
    split = split_for_tail(n, horizon)
    fit_rows, tail_start = split if split is not None else (n, n)
    dev = features.device
    x64 = features[:fit_rows].double()
    mean, std = x64.mean(0), x64.std(0, unbiased=False)
    std = torch.where(std > 1e-8, std, torch.ones_like(std))
    y64 = target[:fit_rows].double()
    y_mean, y_std = float(fixed_mean(y64)), float(fixed_std(y64)) or 1.0
    mean, std = mean.float(), std.float()

    def scaled_target(rows) -> torch.Tensor:
        return ((target[rows].double() - y_mean) / y_std).float().clamp(-MLP_CLIP, MLP_CLIP)

    gen = torch.Generator().manual_seed(seed)
    net = _new_mlp(k, hidden, seed)
    from foxhunt.evaluate.mlp_steps import StepPlan, fit_segments

    net = net.to(dev)
    fit_batch = min(batch, fit_rows)
    rows = torch.randint(0, fit_rows, (steps, fit_batch), generator=gen).to(dev)
    tail_z = _standardise(features[tail_start:], mean, std)
    tail_y = scaled_target(slice(tail_start, n))

    def tail_loss() -> float:
        with torch.no_grad():
            # fixed_mean: a long tail's mean would otherwise round by the CPU's thread count
            return float(fixed_mean((net(tail_z).squeeze(1) - tail_y) ** 2))

    if split is None:  # too short for a tail: the step-0 model, which predicts the training mean
        net.eval()
        return MLPFit(net, mean, std, y_mean, y_std)
    best_loss, best_state = tail_loss(), {name: v.clone() for name, v in net.state_dict().items()}
    batches_z = _step_rows_standardised(features, rows, fit_rows, mean, std)
    batches_y = scaled_target(rows.reshape(-1)).view(rows.shape)
    plan = StepPlan(dev, k, hidden, steps, fit_batch, MLP_CHECK_EVERY, lr, MLP_WEIGHT_DECAY)
    # AdamW (foreach) steps; on a CUDA device replayed graphs of the same kernels (mlp_steps).
    for _ in fit_segments(net, batches_z, batches_y, plan, use_graphs=graphs):
        current = tail_loss()
        if current < best_loss:
            best_loss, best_state = current, {name: v.clone() for name, v in net.state_dict().items()}
    net.load_state_dict(best_state)
    net.eval()
    return MLPFit(net, mean, std, y_mean, y_std)


# ---- per fold --------------------------------------------------------------------------------------
def ridge_predictions(
    features, targets, fold_range, *, one_bar_lambda: float | None = None
) -> dict[str, torch.Tensor]:
    """The ridge models' predictions over the fold's validation window (name → float64 tensor), fitted on
    its training slice only: `ridge_15`, `ridge_60`, and first the 1-bar `ridge` of the baselines when
    `one_bar_lambda` is given. Every fit on the whole slice shares one set of normal equations."""
    from foxhunt.evaluate.ridge import float64_once, normal_equations, predict_ridges, solve_ridge

    train = slice(fold_range.train_start, fold_range.train_end)
    x = float64_once(features[train])  # the three slices fitted below are its prefixes
    columns, penalties, names = [], [], []
    if one_bar_lambda is not None:
        columns.append(targets[train, 0])
        penalties.append(one_bar_lambda)
        names.append("ridge")
    for h in SUPERVISED_HORIZONS:
        y = targets[train, target_column(h)]
        columns.append(y)
        penalties.append(ridge_penalty(x, y, h))
        names.append(f"ridge_{h}")
    equations = normal_equations(x, columns)
    fits = [solve_ridge(equations, j, lam) for j, lam in enumerate(penalties)]
    val = features[fold_range.val_start : fold_range.val_end]
    return dict(zip(names, predict_ridges(fits, val), strict=True))


def mlp_predictions(features, targets, fold_range, *, seed: int = SUPERVISED_SEED) -> dict[str, torch.Tensor]:
    """The MLPs' predictions over the fold's validation window (name → float64 tensor), fitted on its
    training slice only."""
    train = slice(fold_range.train_start, fold_range.train_end)
    val = features[fold_range.val_start : fold_range.val_end]
    return {
        f"mlp_{h}": fit_mlp(
            features[train], targets[train, target_column(h)], h, seed=seed + fold_range.fold
        ).predict(val)
        for h in SUPERVISED_HORIZONS
    }


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
