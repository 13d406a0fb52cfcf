"""`dqn.n_step` 0 resolved when a run starts: the held TD target where a change of position costs a large
share of a bar's move (config.dqn.choose_n_step). The noise is taken over the first fold's training rows
only, which precede every validation window of the run, so the choice reads nothing a fold is judged on."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from foxhunt.config import RunConfig
from foxhunt.config.dqn import choose_n_step
from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.records import host_array


def first_training_returns(targets: Sequence, ranges: Sequence[FoldRange | None]) -> list:
    """Each instrument's one-bar forward returns (`targets[i]`'s first column) over its rows of the first
    fold's training slice (`ranges[i]`; None: the instrument takes no part in that fold). Views, no copies."""
    return [t[r.train_slice, 0] for t, r in zip(targets, ranges, strict=True) if r is not None]


def training_noise(returns: Sequence) -> float:
    """The population standard deviation of the one-bar forward log returns in `returns` (pieces on the
    host or the device, pooled: one per instrument of a universe's first fold)."""
    rows = np.concatenate([host_array(r).reshape(-1) for r in returns]) if len(returns) else np.zeros(0)
    return float(rows.std()) if rows.size > 1 else 0.0


def n_step_line(chosen: int, cost: float, noise: float, switch: float) -> str:
    """The console's account of the choice: the cost against the noise, and the switch it was held to."""
    ratio = cost / noise if noise > 0 else float("inf")
    side = "at or above" if chosen > 1 else "under"
    return (
        f"n_step {chosen} (dqn.n_step 0 chooses): the reward's cost {cost * 1e4:.2f} bp is {ratio:.2f}× the first "
        f"fold's training bars' one-bar noise ({noise * 1e4:.2f} bp), {side} n_step_switch {switch:g}"
    )


def with_chosen_n_step(
    settings: RunConfig, returns: Sequence, progress: Callable[[str], None]
) -> tuple[RunConfig, dict | None]:
    """`settings` with dqn.n_step 0 resolved on the first fold's training returns (`returns`), the choice
    said on the console, and its record for the summary (`n_step_choice`); any other n_step is kept as
    given, unsaid, with no record."""
    if settings.dqn.n_step:
        return settings, None
    noise = training_noise(returns)
    dqn = choose_n_step(settings.dqn, noise)
    progress(n_step_line(dqn.n_step, dqn.cost, noise, dqn.n_step_switch))
    record = {
        "n_step": dqn.n_step,
        "cost": dqn.cost,
        "noise": noise,
        "cost_over_noise": dqn.cost / noise if noise > 0 else None,
        "n_step_switch": dqn.n_step_switch,
        "rows": "the one-bar forward returns of the first fold's training rows",
    }
    return replace(settings, dqn=dqn), record
