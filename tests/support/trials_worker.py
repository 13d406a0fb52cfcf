"""A trial worker for the study tests: one process running the trial loop on a shared study.

    python tests/trials_worker.py STORAGE_URL STUDY N WORKER LOG [--folds F] [--fold-seconds S] [--hold FILE]

The objective is cheap and deterministic in the settings (`cheap_score`), with one sleep per fold.
Every objective call that ends appends one JSON line to LOG (worker, trial, params, pruned), an
account of the work independent of the study's storage. `--hold FILE`: in the first trial,
after reporting fold 0, create FILE and sleep until killed (a worker that dies mid-fold).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

SPACE = {
    "lr": {"type": "float", "low": 1e-5, "high": 1e-3, "log": True},
    "gamma": {"type": "float", "low": 0.8, "high": 0.99},
}


def cheap_score(params: dict) -> float:
    """Best at lr = 1e-4, gamma = 0.95; a smooth bowl, so TPE has something to find."""
    return -((math.log10(params["lr"]) + 4.0) ** 2) - 10.0 * (params["gamma"] - 0.95) ** 2


def one_at_a_time(objective):
    """The trial loop's objective for batches of one, from `objective(number, params, report_fold)`, which
    returns the trial's result or raises: a TrialPruned it raises prunes its trial."""
    import optuna

    def run(batch):
        results = {}
        for asked in batch:
            try:
                results[asked.number] = objective(asked.number, asked.params, asked.report_fold)
            except optuna.TrialPruned:
                asked.pruned = True
        return results

    return run


def _append(log: Path, record: dict) -> None:
    # One write of one short line with O_APPEND: lines of concurrent workers never interleave.
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
    finally:
        os.close(fd)


def main() -> None:
    from foxhunt.search.space import parse_search_space
    from foxhunt.search.study import open_study
    from foxhunt.search.trial_loop import run_trials

    p = argparse.ArgumentParser()
    for name in ("storage", "study", "n", "worker", "log"):
        p.add_argument(name)
    p.add_argument("--folds", type=int, default=3)
    p.add_argument("--fold-seconds", type=float, default=0.0)
    p.add_argument("--hold", type=Path, default=None)
    args = p.parse_args()
    worker = int(args.worker)
    holding = [args.hold]

    def objective(number: int, params: dict, report_fold) -> float:
        score = cheap_score(params)
        for fold in range(args.folds):
            time.sleep(args.fold_seconds)
            if report_fold(fold, score):
                _append(Path(args.log), {"worker": worker, "trial": number, "params": params, "pruned": True})
                return score
            if holding[0] is not None:
                holding[0].write_text(str(number))
                holding[0] = None
                time.sleep(3600)
        _append(Path(args.log), {"worker": worker, "trial": number, "params": params, "pruned": False})
        return score

    study = open_study(
        args.storage,
        Path(args.log).parent,
        args.study,
        seed=11,
        worker=worker,
        heartbeat_seconds=1,
        grace_seconds=2,
    )
    run_trials(
        study,
        int(args.n),
        one_at_a_time(objective),
        space=parse_search_space(SPACE, "test space"),
        seed=11,
        worker=worker,
        poll_seconds=0.5,
    )


if __name__ == "__main__":
    main()
