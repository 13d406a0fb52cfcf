"""The run stage: `pipeline` (train and pipeline, the commands' entry), `precompute` (bars → fxcache),
`walk_forward` (a run's folds on its loaded data, then the stitched record, seeds and holdout),
`walk` (the one walk over folds: a run, its seeds, a batch of trials, the held-out fold), `fold` (one
fold: reset → train → validate → save → report, and taking over a completed one), `lifecycle` (the
run's ways in and out), `manifest`, `lock`, `compile_cache`, `telemetry` (Prometheus), `pushgateway`
(its URL, the run id, a live run), `argo_outputs`, `rescore` (`foxhunt evaluate`: a saved run scored on
another fxcache).

The run never imports the search: a search hands the run its plan (`walk_forward.SearchPlan`)."""
