"""Hyperparameter search over whole walk-forward runs (`foxhunt train --trials N`).

`search` (the options: space file, study storage and name, objective, worker) and `space` (reading
and checking search spaces) import nothing heavy, so a run checks its search before any work;
`study` (the Optuna study and the trial loop), `study_storage` (SQLite in --out or a SQL server),
`outputs` (study table, best settings, Deflated Sharpe Ratio), `metrics` (Prometheus), `driver`
(trials on one loaded dataset, one trainer per shape), `study_batches` (trials asked and told in
batches) and `population` (a batch trained side by side as one batched model) import Optuna.
"""
