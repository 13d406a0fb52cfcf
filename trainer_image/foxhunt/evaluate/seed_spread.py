"""The spread of a run's result across training seeds (`--seeds K`): one lucky seed shows as such.

K seeds of the same settings train side by side as a population; member 0 (the run's `--seed`) is the
run's ordinary result, member i trains from seed `--seed + i`. Beside it the report gives the median and
interquartile range (linear interpolation between order statistics, numpy's default) of the seeds'
stitched net Sharpe, and says that one seed carries the result when exactly one of K > 1 seeds has its
stitched Sharpe interval above flat's 0. Each seed's interval, exposure and turnover are kept too, so a
seed that does harm (its whole interval below flat's 0) or churns shows as such. A seed with no stitched
record (it diverged in some fold) cannot be in the spread: it is listed as left out, with why.

With three seeds or more the report also scores the seeds' majority: on each bar the side (long or short)
that more than half the seeds hold, else flat. One seed's luck, bad or good, cannot move it alone, so its
record says what the settings find rather than what one draw of the weights found. With `--result
majority` that vote is the run's result (`walk_forward`), and member 0 one seed of the spread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from foxhunt.config import MIN_SEEDS_FOR_MAJORITY
from foxhunt.evaluate.evaluation import MODEL, Metrics, RunEvaluation
from foxhunt.evaluate.records import Record


def seed_spread(net: Mapping[int, Metrics], left_out: Mapping[int, str] | None = None) -> dict:
    """Median, quartiles and IQR of the seeds' stitched net Sharpe (seed → the stitched net figures), the
    seeds whose interval lies above flat and those whose interval lies below it, each seed's interval,
    exposure and turnover, whether one seed alone carries the result, and the seeds `left_out` of it
    (seed → why), each with its reason."""
    if not net:
        raise ValueError("no seed to summarise")
    seeds = sorted(net)
    values = np.array([net[s].sharpe for s in seeds], dtype=np.float64)
    q1, median, q3 = (float(v) for v in np.percentile(values, [25.0, 50.0, 75.0]))
    above = [s for s in seeds if net[s].sharpe_ci_low > 0.0]
    return {
        "seeds": seeds,
        "sharpe": {str(s): float(net[s].sharpe) for s in seeds},
        "figures": {
            str(s): {
                "sharpe": float(net[s].sharpe),
                "ci": [float(net[s].sharpe_ci_low), float(net[s].sharpe_ci_high)],
                "exposure": float(net[s].exposure),
                "turnover_per_year": float(net[s].turnover_per_year),
            }
            for s in seeds
        },
        "below_flat": [s for s in seeds if net[s].sharpe_ci_high < 0.0],
        "median": median,
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "above_flat": above,
        "one_seed_carries": len(seeds) > 1 and len(above) == 1,
        "left_out": [{"seed": s, "reason": why} for s, why in sorted((left_out or {}).items())],
    }


MIN_SEEDS_FOR_IQR = 4


def majority_positions(members: Sequence[np.ndarray]) -> np.ndarray:
    """Per bar, the side (+1 or -1) that more than half of `members` (each −1/0/1 per bar) hold, else 0."""
    if not members:
        raise ValueError("no member positions to vote on")
    stacked = np.stack([np.asarray(m, dtype=np.float64) for m in members])
    half = stacked.shape[0] / 2.0
    longs, shorts = (stacked > 0).sum(axis=0), (stacked < 0).sum(axis=0)
    return np.where(longs > half, 1.0, 0.0) - np.where(shorts > half, 1.0, 0.0)


def majority_record(evaluations: Sequence[RunEvaluation]) -> Record:
    """The seeds' stitched model record with the seeds' vote for positions (`majority_positions`); their
    stitched records cover the same bars, so the first one's bars, returns and folds serve."""
    model = evaluations[0].records[MODEL]
    return replace(model, positions=majority_positions([e.records[MODEL].positions for e in evaluations]))


def result_label(voters: Sequence[int], first: int) -> str:
    """Whose record a `--result majority` run's result is (summary.json's and book.json's `result`): the
    seeds' majority where MIN_SEEDS_FOR_MAJORITY or more seeds vote (`voters`), else the `first` seed's."""
    if len(voters) < MIN_SEEDS_FOR_MAJORITY:
        return f"seed {first} (the majority needs {MIN_SEEDS_FOR_MAJORITY} seeds)"
    return f"majority of seeds {', '.join(str(s) for s in voters)}"


def majority_figures(net: Metrics, members: Sequence[int]) -> dict:
    """The seeds' majority's stitched net figures (`net`) and which seeds voted (`members`)."""
    return {
        "members": list(members),
        "sharpe": float(net.sharpe),
        "ci": [float(net.sharpe_ci_low), float(net.sharpe_ci_high)],
        "exposure": float(net.exposure),
        "turnover_per_year": float(net.turnover_per_year),
        "above_flat": bool(net.sharpe_ci_low > 0.0),
        "below_flat": bool(net.sharpe_ci_high < 0.0),
    }


def spread_lines(spread: dict) -> list[str]:
    """The console lines of a seed spread."""
    k = len(spread["seeds"])
    each = ", ".join(f"seed {s} {v:.2f}" for s, v in spread["sharpe"].items())
    values = list(spread["sharpe"].values())
    # Below MIN_SEEDS_FOR_IQR a median and quartiles of two or three numbers say less than the numbers.
    centre = (
        f"median {spread['median']:.2f}, IQR {spread['iqr']:.2f} ({spread['q1']:.2f} to {spread['q3']:.2f})"
        if k >= MIN_SEEDS_FOR_IQR
        else f"from {min(values):.2f} to {max(values):.2f}"
    )
    lines = [
        f"{k} seeds: stitched net Sharpe {centre}; {each}; "
        f"{len(spread['above_flat'])} of {k} above flat outside the interval, "
        f"{len(spread['below_flat'])} of {k} below it"
    ]
    if spread["one_seed_carries"]:
        lines.append(
            f"WARNING one seed carries the result: only seed {spread['above_flat'][0]} is above flat"
        )
    left_out = spread["left_out"]
    if left_out:
        named = ", ".join(f"seed {e['seed']} ({e['reason']})" for e in left_out)
        lines.append(f"{len(left_out)} of {k + len(left_out)} seeds left out of the spread: {named}")
    majority = spread.get("majority")
    if majority is not None:
        lines.append(majority_line(majority))
    return lines


def majority_line(majority: dict) -> str:
    """The console line of the seeds' majority (`majority_figures`)."""
    low, high = majority["ci"]
    if majority["above_flat"] or majority["below_flat"]:
        where = f"{'above' if majority['above_flat'] else 'below'} flat outside its interval"
    else:
        where = "flat within its interval"
    return (
        f"majority of {len(majority['members'])} seeds (the side more than half hold, else flat): stitched "
        f"net Sharpe {majority['sharpe']:.2f} [{low:.2f}, {high:.2f}], {where}; exposure "
        f"{majority['exposure']:.0%}, turnover {majority['turnover_per_year']:.0f}/yr"
    )
