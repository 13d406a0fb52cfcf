"""Where a run's telemetry and records go, beside its `--out` folder (part of the run stage):

- `telemetry` (run and per-fold metrics pushed to a Prometheus Pushgateway), `telemetry_figures`
  (the plain numbers it is told) and `telemetry_reads` (those numbers read off the run's reports);
- `pushgateway` (the Pushgateway's URL, the run id that keys its metrics, a live run with that id);
- `mlflow_sink` (`--mlflow-uri`: what the run left in `--out`, recorded once the command ends),
  `mlflow_live` (the MLflow record written while the run trains) and `mlflow_store` (the store
  checked before any work, and how long the record may wait on it)."""
