"""The evaluation stage: out-of-sample records (`records`), their figures (`sharpe`, `evaluation`),
the baselines beside the model (`baselines`), a fold's and a run's scoring (`run_scores`), the typed
reports (`reports`), the stitched record in words (`stitched_report`), pictures (`plot`, a run's
`plot_run`) and loading a saved fold's policy (`fold_policy`); scoring a
saved run on another fxcache (the `foxhunt evaluate` command) is `foxhunt.run.rescore`."""
