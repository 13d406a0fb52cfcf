"""The `foxhunt` command: precompute, train, pipeline, workflows render, submit.

Exit codes: 0 success; 2 bad input or usage (one line, no traceback); 1 a failure during the run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

from foxhunt import __version__
from foxhunt.config import DQNConfig, FoldConfig, override

DEFAULT_FOLDS = FoldConfig()


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="where to train (default: auto)")
    p.add_argument("--seed", type=int, default=0, help="run seed; each fold derives its own (default: 0)")
    p.add_argument("--pushgateway", default=None,
                   help="Pushgateway URL for per-fold metrics (default: $FOXHUNT_PUSHGATEWAY, else none)")
    p.add_argument("--run-id", default=None,
                   help="run id in the metrics' grouping key (default: $FOXHUNT_RUN_ID, the Argo workflow, or generated)")
    p.add_argument("--metrics-port", type=int, default=None, help="also serve live /metrics on this port")


def _add_training(p: argparse.ArgumentParser, *, epochs: int, folds: FoldConfig) -> None:
    p.add_argument("--model", default="dqn", choices=["dqn"], help="the model to train (default: dqn)")
    p.add_argument("--epochs", type=int, default=epochs, help=f"epochs per fold (default: {epochs})")
    p.add_argument("--trials", type=int, default=0,
                   help="hyperparameter-search trials; 0 trains once (N > 0 is not available yet)")
    p.add_argument("--hyperopt-params", type=Path, default=None,
                   help='JSON file like {"dqn": {"lr": 3e-4, "batch_size": 8192}} overriding DQN settings')
    g = p.add_argument_group("walk-forward folds")
    g.add_argument("--train-days", type=float, default=folds.train_days, help=f"default: {folds.train_days:g}")
    g.add_argument("--val-days", type=float, default=folds.val_days, help=f"default: {folds.val_days:g}")
    g.add_argument("--step-days", type=float, default=folds.step_days, help=f"default: {folds.step_days:g}")
    g.add_argument("--window", choices=["rolling", "expanding"], default=folds.mode, help=f"default: {folds.mode}")
    g.add_argument("--purge-bars", type=int, default=folds.purge_bars,
                   help=f"bars dropped between train and validation (default: {folds.purge_bars})")
    g.add_argument("--min-train-rows", type=int, default=folds.min_train_rows, help=f"default: {folds.min_train_rows}")
    g.add_argument("--max-folds", type=int, default=folds.max_folds, help="0 = all that fit (default: %(default)s)")
    _add_common(p)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    parser = argparse.ArgumentParser(prog="foxhunt", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"foxhunt {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("precompute", help="bars → features → fxcache (a no-op when it exists for the same bars)")
    p.add_argument("--bars", nargs="+", required=True, metavar="URI", help="CSV or Parquet bars, local or s3://")
    p.add_argument("--out", required=True, metavar="URI", help="fxcache to write, local or s3://")
    p.add_argument("--tz", default=None, help="time zone of naive timestamps (default: UTC)")
    p.add_argument("--force", action="store_true", help="recompute even when the fxcache already matches")
    p.set_defaults(func=cmd_precompute)

    p = sub.add_parser("train", help="the one-pod run: load once, every fold on one trainer, reports, metrics")
    p.add_argument("--fxcache", required=True, metavar="URI", help="fxcache to train on, local or s3://")
    p.add_argument("--out", required=True, metavar="URI", help="output folder, local or s3://")
    _add_training(p, epochs=50, folds=DEFAULT_FOLDS)
    p.set_defaults(func=cmd_train)

    from foxhunt.pipeline import PIPELINE_FOLDS

    p = sub.add_parser("pipeline", help="precompute + train locally; with no --bars, on generated sample bars")
    p.add_argument("--bars", nargs="+", default=None, metavar="URI", help="bars files (default: generated sample)")
    p.add_argument("--out", default="foxhunt-out", metavar="URI", help="output folder (default: ./foxhunt-out)")
    p.add_argument("--tz", default=None, help="time zone of naive timestamps (default: UTC)")
    p.add_argument("--sample-bars", type=int, default=200_000, help="rows of generated bars (default: 200000)")
    _add_training(p, epochs=3, folds=PIPELINE_FOLDS)
    p.set_defaults(func=cmd_pipeline)

    try:
        from foxhunt_workflows.commands import add_workflow_commands
    except ImportError:  # the trainer image may ship without the workflows package
        add_workflow_commands = None
    if add_workflow_commands is not None:
        add_workflow_commands(sub)
    return parser


def _settings(args: argparse.Namespace):
    from foxhunt.pipeline import TrainSettings

    dqn = DQNConfig()
    if args.hyperopt_params is not None:
        try:
            params = json.loads(args.hyperopt_params.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{args.hyperopt_params}: cannot read hyperparameters: {exc}") from exc
        if not isinstance(params, dict) or set(params) - {"dqn"}:
            raise ValueError(f'{args.hyperopt_params}: expected {{"dqn": {{...}}}}, found keys {sorted(params)}')
        dqn = override(dqn, params.get("dqn", {}), what=str(args.hyperopt_params))
    folds = replace(DEFAULT_FOLDS, train_days=args.train_days, val_days=args.val_days, step_days=args.step_days,
                    mode=args.window, purge_bars=args.purge_bars, min_train_rows=args.min_train_rows,
                    max_folds=args.max_folds)
    return TrainSettings(epochs=args.epochs, model=args.model, device=args.device, seed=args.seed,
                         trials=args.trials, folds=folds, dqn=dqn, pushgateway=args.pushgateway,
                         run_id=args.run_id, metrics_port=args.metrics_port)


def cmd_precompute(args: argparse.Namespace) -> int:
    from foxhunt.pipeline import precompute

    precompute(args.bars, args.out, tz=args.tz, force=args.force)
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from foxhunt.pipeline import fold_table, train

    settings = _settings(args)
    summary = train(args.fxcache, args.out, settings)
    print(fold_table(summary))
    print(f"outputs: {args.out} (summary.json, run.png, fold_N/)")
    return 0


def cmd_pipeline(args: argparse.Namespace) -> int:
    from foxhunt.pipeline import fold_table, pipeline

    settings = _settings(args)
    summary = pipeline(args.bars, args.out, settings, sample_bars=args.sample_bars, tz=args.tz)
    print(fold_table(summary))
    where = args.out if "://" in args.out else os.path.abspath(args.out)
    print(f"outputs: {where} (summary.json, run.png, features.fxcache, fold_N/weights.pt, norm stats, reports)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from foxhunt.bars import BarsError
    from foxhunt.fxcache import FxCacheError
    from foxhunt.pipeline import RunFailed

    try:
        return args.func(args)
    except (BarsError, FxCacheError, ValueError, FileNotFoundError) as exc:
        print(f"foxhunt {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except RunFailed as exc:
        print(f"foxhunt {args.command}: failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"foxhunt {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
