"""Hyperparameter search over whole walk-forward runs (`foxhunt train --trials N`): the stage above the run.

The search's options (space file, study storage and name, objective, worker, population) are light
and live in `foxhunt.config.search`, so the CLI and the Argo client read them without Optuna;
`space` reads and checks search spaces (no Optuna). `study` (the Optuna study and its counting),
`trial_loop` (the one ask/tell loop: trials asked in batches of one or more, told one by one),
`storage` (SQLite in --out or a SQL server), `outputs` (study table, best settings, Deflated Sharpe
Ratio), `telemetry` (Prometheus), `driver` (the plan, and trials on one loaded dataset) and
`population` (a batch trained as the members of one population) import Optuna. `universe_search` and
`universe_trials`: a search over several instruments (`foxhunt train --fxcache A --fxcache B --trials N`),
each trial a universe run, its objective the book's; `universe_search_life` its stop, end and resume.
"""
