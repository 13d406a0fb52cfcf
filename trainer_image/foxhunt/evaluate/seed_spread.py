"""The spread of a run's result across training seeds (`--seeds K`): one lucky seed shows as such.

K seeds of the same settings train side by side as a population; member 0 (the run's `--seed`) is the
run's ordinary result, member i trains from seed `--seed + i`. Beside it the report gives the median and
interquartile range (linear interpolation between order statistics, numpy's default) of the seeds'
stitched net Sharpe, and says that one seed carries the result when exactly one of K > 1 seeds has its
stitched Sharpe interval above flat's 0.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def seed_spread(sharpes: Mapping[int, float], ci_lows: Mapping[int, float]) -> dict:
    """Median, quartiles and IQR of the seeds' stitched net Sharpe (seed → figure), the seeds whose
    interval lies above flat, and whether one seed alone carries the result."""
    if not sharpes:
        raise ValueError("no seed to summarise")
    seeds = sorted(sharpes)
    values = np.array([sharpes[s] for s in seeds], dtype=np.float64)
    q1, median, q3 = (float(v) for v in np.percentile(values, [25.0, 50.0, 75.0]))
    above = [s for s in seeds if ci_lows[s] > 0.0]
    return {
        "seeds": seeds,
        "sharpe": {str(s): float(sharpes[s]) for s in seeds},
        "median": median,
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "above_flat": above,
        "one_seed_carries": len(seeds) > 1 and len(above) == 1,
    }


def spread_lines(spread: dict) -> list[str]:
    """The console lines of a seed spread."""
    k = len(spread["seeds"])
    each = ", ".join(f"seed {s} {v:.2f}" for s, v in spread["sharpe"].items())
    lines = [
        f"{k} seeds: stitched net Sharpe median {spread['median']:.2f}, IQR {spread['iqr']:.2f} "
        f"({spread['q1']:.2f} to {spread['q3']:.2f}); {each}; "
        f"{len(spread['above_flat'])} of {k} above flat outside the interval"
    ]
    if spread["one_seed_carries"]:
        lines.append(
            f"WARNING one seed carries the result: only seed {spread['above_flat'][0]} is above flat"
        )
    return lines
