"""Hyperparameter search over whole walk-forward runs: the search space, the Optuna study, its outputs.

`space` reads and checks search spaces and imports nothing heavy, so a run can check its
`--search-space` before any work; `study` (the Optuna study and the trial loop), `outputs`
(study table, best settings, Deflated Sharpe Ratio) and `metrics` (Prometheus) import Optuna.
"""
