"""The run stage: `pipeline` (precompute and train, the commands' entry), `fold_loop` (the one loop
for each fold: reset → train → validate → save → report), `lifecycle` (the run's ways in and out),
`manifest`, `lock`, `compile_cache`, `telemetry` (Prometheus, the run id), `argo_outputs`.

The run never imports the search: a search hands the run its plan (`pipeline.SearchPlan`)."""
