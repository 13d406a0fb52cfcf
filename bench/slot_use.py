"""How full a population's rounds are with the median pruner: batches walked in lockstep (a pruned trial's slot
idles until its batch ends) against the slot loop (`foxhunt.search.slot_loop`: a freed slot takes the next
trial). Counts, not timings: the same Optuna study machinery (TPE seeded, the shipped median pruner) drives
both, the objective is a cheap stand-in whose fold values are a trial's skill (a smooth function of its
settings) plus fold noise, and each round is one fold trained for its members side by side.

    python bench/slot_use.py [--populations 4 8] [--folds 3 21] [--trials 64] [--noise 1.0]
    CPU check: --populations 2 --folds 3 --trials 8

Per case: rounds, member-folds trained, slot use (member-folds over rounds × P), trials pruned, the best
complete trial's skill (the search's result: 0 is the best possible), and the rounds' ratio. Where a round costs the same whatever its members (a population on one GPU, whose step costs
about one member's up to P = 8 on the H200), lockstep's rounds over the slot loop's is the trials/h gain at
equal trials; that is a model, not a device measurement.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import harness as h
import numpy as np

sys.path.insert(0, str(h.ROOT / "trainer_image"))

import optuna  # noqa: E402

from foxhunt.config.search import DEFAULT_PRUNER  # noqa: E402
from foxhunt.search.slot_loop import run_slot_trials  # noqa: E402
from foxhunt.search.space import parse_search_space  # noqa: E402
from foxhunt.search.study import open_study, trial_pruner  # noqa: E402
from foxhunt.search.trial_loop import run_trials  # noqa: E402

SPACE = parse_search_space(
    {"lr": {"type": "float", "low": 1e-5, "high": 1e-3, "log": True},
     "gamma": {"type": "float", "low": 0.8, "high": 0.99}}, "slot_use space",
)  # fmt: skip


def fold_value(params: dict, number: int, fold: int, noise: float) -> float:
    """A trial's skill (best at lr 1e-4, gamma 0.95) plus its fold's noise, fixed by (trial, fold)."""
    skill = -((math.log10(params["lr"]) + 4.0) ** 2) - 10.0 * (params["gamma"] - 0.95) ** 2
    return skill + noise * float(np.random.default_rng([number, fold]).standard_normal())


def lockstep(study, trials: int, size: int, folds: int, noise: float) -> list[int]:
    """Batches of `size` walked fold by fold together; the members of each round."""
    rounds: list[int] = []

    def batch(asked):
        for fold in range(folds):
            live = [a for a in asked if not a.pruned]
            if not live:
                break
            rounds.append(len(live))
            for a in live:
                a.report_fold(fold, fold_value(a.params, a.number, fold, noise), last=fold == folds - 1)
        return {a.number: fold_value(a.params, a.number, folds, 0.0) for a in asked if not a.pruned}

    run_trials(study, trials, batch, size=size, space=SPACE, seed=0)
    return rounds


def slots(study, trials: int, size: int, folds: int, noise: float) -> list[int]:
    """The slot loop's rounds; the members of each."""
    rounds: list[int] = []

    def train(fold, members):
        rounds.append(len(members))
        ended = {}
        for t in members:
            value = fold_value(t.asked.params, t.number, fold, noise)
            t.outcomes[fold] = value
            if t.asked.report_fold(fold, value, last=fold == folds - 1):
                ended[t.number] = None
            elif fold == folds - 1:
                ended[t.number] = fold_value(t.asked.params, t.number, folds, 0.0)
        return ended

    run_slot_trials(study, trials, train, size=size, space=SPACE, seed=0)
    return rounds


def case(work: Path, size: int, folds: int, trials: int, noise: float) -> dict:
    """One (P, folds) case both ways, each on a fresh embedded study."""
    out: dict = {"population": size, "folds": folds, "trials": trials}
    for name, loop in (("lockstep", lockstep), ("slots", slots)):
        folder = work / f"{name}-{size}-{folds}"
        folder.mkdir(parents=True, exist_ok=True)
        study = open_study(None, folder, "slot_use", 0, pruner=trial_pruner(DEFAULT_PRUNER))
        rounds = loop(study, trials, size, folds, noise)
        states = [t.state.name for t in study.get_trials()]
        out[name] = {
            "rounds": len(rounds),
            "member_folds": sum(rounds),
            "slot_use": sum(rounds) / (len(rounds) * size),
            "pruned": states.count("PRUNED"),
            "complete": states.count("COMPLETE"),
            # The search's result: the best complete trial's skill (0 at the bowl's bottom).
            "best": max((t.value for t in study.get_trials() if t.state.name == "COMPLETE"), default=None),
        }
    out["rounds_ratio"] = out["lockstep"]["rounds"] / out["slots"]["rounds"]
    return out


def measure(args: argparse.Namespace, work: Path, record: dict) -> None:
    """Every (P, folds) case, printed and kept in `record['cases']`."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    record["cases"] = []
    print(
        "P  folds  trials  lockstep rounds (use, pruned, best)  slots rounds (use, pruned, best)  rounds ratio"
    )
    for size in args.populations:
        for folds in args.folds:
            c = case(work, size, folds, args.trials, args.noise)
            record["cases"].append(c)
            lo, sl = c["lockstep"], c["slots"]
            print(f"{size:<2} {folds:>5}  {args.trials:>6}  {lo['rounds']:>8} ({lo['slot_use']:.0%}, {lo['pruned']:>2}, "
                  f"{lo['best']:.3f})  {sl['rounds']:>12} ({sl['slot_use']:.0%}, {sl['pruned']:>2}, {sl['best']:.3f})"
                  f"  {c['rounds_ratio']:>12.2f}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    h.common_args(p, repeats=1, device="cpu")
    p.add_argument("--populations", nargs="+", type=int, default=[4, 8])
    p.add_argument("--folds", nargs="+", type=int, default=[3, 21])
    p.add_argument("--trials", type=int, default=64)
    p.add_argument("--noise", type=float, default=1.0, help="the fold noise's scale against the skill's")
    return h.run_benchmark("slot_use", p.parse_args(argv), measure, "cpu")


if __name__ == "__main__":
    sys.exit(main())
