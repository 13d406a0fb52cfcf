"""foxhunt: walk-forward reinforcement learning on minute bars, one persistent trainer per run.

One sub-package per stage, imports pointing down the flow only (tests/test_import_rules.py holds it):

    data      bars, sample bars, features, fxcache, folds            (bars → fxcache → fold ranges)
    train     the Double-DQN trainer for a population of P ≥ 1 members, its step, networks,
              greedy policy, diagnostics, settings, device data
    evaluate  records, statistics, baselines, reports, pictures, loading a fold's policy and
              scoring a saved run (`foxhunt evaluate`)
    run       the command's entry (`pipeline`), precompute, a run's walk-forward, the one fold loop,
              manifest, lock, lifecycle, run id, compile cache, telemetry, Argo outputs
    search    the study above the run (`--trials N`): one ask/tell loop for batches of P ≥ 1 trials,
              space, storage, outputs, telemetry

`config` (settings, the search's light options), `errors`, `out_names` (every `--out` name) and
`storage` sit below every stage; `cli` (entry point, `parser`, `commands`) sits above everything and
nothing imports it.

Words, one per idea:

- *member*: one model of a population trained side by side (P = 1 is an ordinary run);
- *trial*: one set of settings the search tries; with `--population P`, P trials train as the P
  members of one population;
- *fold*: one walk-forward window (training range, then validation range);
- *telemetry*: what goes to Prometheus (run/sinks/telemetry.py, search/telemetry.py);
- *figures* (or *scores*): trading results — Sharpe, returns, drawdowns — in reports and JSON;
- *record*: the bars a policy traded out of sample, with its positions and returns.
"""

__version__ = "0.1.0"
