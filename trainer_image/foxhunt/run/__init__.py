"""The run stage: `pipeline` (train and pipeline, the commands' entry), `precompute` (bars → fxcache),
`walk_forward` (a run's folds on its loaded data, then the stitched record, seeds and holdout),
`walk` (the one walk over folds: a run, its seeds, a batch of trials, the held-out fold), `fold` (one
fold: reset → train → validate → save → report, and taking over a completed one), `lifecycle` (the
run's ways in and out), `manifest`, `lock`, `compile_cache`, `argo_outputs`, `rescore` (`foxhunt
evaluate`: a saved run scored on another fxcache), and `sinks`: where the run's telemetry and records
go (`sinks.telemetry` to Prometheus, `sinks.pushgateway`: its URL, the run id, a live run;
`sinks.mlflow_live`, `sinks.mlflow_sink`: the MLflow record). Several instruments in one run (several
--fxcache): `universe_run` (load, walk, records, summary), `universe_walk` (a universe fold as the walk's
step), `universe_book` (the instruments' records combined), `universe_holdout` (the held-out period) and
`universe_resume` (the manifest of an interrupted universe run, taken over by the same command).

The run never imports the search: a search hands the run its plan (`walk_forward.SearchPlan`)."""
