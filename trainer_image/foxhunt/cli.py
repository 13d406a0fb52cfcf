"""The `foxhunt` command: precompute, train, pipeline, evaluate, workflows render, submit.

Exit codes: 0 success; 2 bad input or usage (one line, no traceback); 1 a failure during the run;
130 and 143 a run stopped by SIGINT and SIGTERM (it resumes when the same command runs again).
Building the parser imports nothing heavy: the training modules load when a command runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback

from foxhunt import __version__, redaction
from foxhunt.config import (
    FLAGS,
    PIPELINE_DQN,
    PIPELINE_EPOCHS,
    PIPELINE_FOLDS,
    SAMPLE_BARS,
    DQNConfig,
    RunConfig,
    expectation,
    field_at,
    flag_of,
    flag_value,
    override,
    run_config_from_flags,
    value_at,
)
from foxhunt.errors import (
    EXIT_FAILURE,
    EXIT_USAGE,
    BadInput,
    ConfigError,
    FoxhuntError,
    RunInterrupted,
    UsageError,
)
from foxhunt.extras import needs_note, require_extra

DEBUG_ENV = "FOXHUNT_DEBUG"  # set to 1 for the traceback of an unexpected error
_GROUPS = {"folds": "walk-forward folds", "eval": "evaluation (fixed per run, never searched)"}
_PYTHON_TYPES = {"int": int, "float": float, "str": str}


def _add_setting(p: argparse.ArgumentParser | argparse._ArgumentGroup, flag: str, default) -> None:
    """One flag of FLAGS: its type, choices and help from the config field it sets."""
    f = field_at(FLAGS[flag])
    kind = str(f.type).removesuffix(" | None")
    doc = f.metadata["doc"]
    shown = flag_value(default) or "none"
    if kind == "bool":
        p.add_argument(f"--{flag}", action="store_true", default=default, help=doc.replace("%", "%%"))
        return
    choices = f.metadata["choices"] or None
    allowed = "" if kind == "str" and not choices else f" Allowed: {expectation(f)}."
    p.add_argument(
        f"--{flag}",
        type=_PYTHON_TYPES[kind],
        default=default,
        choices=choices,
        help=f"{doc}{allowed} Default: {shown}.".replace("%", "%%"),
    )


def _add_training(p: argparse.ArgumentParser, defaults: RunConfig) -> None:
    p.add_argument(
        "--hyperopt-params",
        default=None,
        metavar="URI",
        help='JSON file (local or s3://) like {"dqn": {"lr": 3e-4, "batch_size": 8192}} '
        "overriding DQN settings",
    )
    groups = {section: p.add_argument_group(title) for section, title in _GROUPS.items()}
    for flag, path in FLAGS.items():
        section = path.partition(".")[0] if "." in path else ""
        _add_setting(groups.get(section, p), flag, value_at(defaults, path))
    _add_search(p.add_argument_group("search (with --trials N > 0)"))
    p.add_argument(
        "--mlflow-uri",
        nargs="?",
        const="",
        default=None,
        metavar="URI",
        help="also record the run (a search: the study, a nested run per trial) in this MLflow tracking "
        "store; alone: $MLFLOW_TRACKING_URI, else ./mlflow.db with artifacts in ./mlruns; a path or "
        f"file:PATH: a file store {needs_note('mlflow')}",
    )


def _add_search(g: argparse._ArgumentGroup) -> None:
    """The flags of a search; --study-storage is a URL (with a password, from a Secret) and never recorded."""
    from foxhunt.config.search import DEFAULT_OBJECTIVE, DEFAULT_PRUNER, OBJECTIVES, PRUNERS, WORKER_ENV

    g.add_argument(
        "--search-space",
        default=None,
        metavar="URI",
        help="YAML or JSON {dqn setting: distribution}, local or s3:// (default: a space of the "
        "shape-free settings lr, gamma, tau, eps_decay_fraction, huber_delta, weight_decay)",
    )
    g.add_argument(
        "--study-storage",
        default=None,
        metavar="URL",
        help="SQLAlchemy URL of a shared study, e.g. postgresql://user:pass@host/db (default: SQLite "
        f"in --out); the worker index comes from ${WORKER_ENV}",
    )
    g.add_argument(
        "--study-name",
        default=None,
        metavar="NAME",
        help="study to create or continue (default: the --out folder's name; with --study-storage, the run id)",
    )
    _add_named_choice(g, "--objective", OBJECTIVES, DEFAULT_OBJECTIVE, "what a trial maximises")
    g.add_argument(
        "--population",
        type=int,
        default=1,
        metavar="P",
        help="train P trials at a time side by side as one batched model (stacked weights, batched "
        "products): P trials' steps cost about one's kernel launches on a GPU (default: 1, one at a time)",
    )
    _add_named_choice(g, "--pruner", PRUNERS, DEFAULT_PRUNER, "how trials stop early")


def _add_named_choice(
    g: argparse._ArgumentGroup, flag: str, named: dict[str, str], default: str, what: str
) -> None:
    """A flag that takes one of `named`'s names; its help lists each with its description."""
    listed = "; ".join(f"{name}: {description}" for name, description in named.items())
    g.add_argument(flag, default=default, choices=tuple(named), help=f"{what}: {listed} (default: {default})")


def _add_timestamp_unit(p: argparse.ArgumentParser) -> None:
    # The units of foxhunt.data.bars.TIMESTAMP_UNITS, written out: the parser imports no numpy.
    p.add_argument(
        "--timestamp-unit",
        default=None,
        choices=("s", "ms", "us", "ns"),
        help="what integer timestamps count since 1970-01-01 UTC (required when they are integers)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    parser = argparse.ArgumentParser(prog="foxhunt", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"foxhunt {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    # Commands that train or read bars need the `train` extra; each says so in its help.
    train_note = needs_note("train")
    p = sub.add_parser(
        "precompute",
        help=f"bars → features → fxcache (a no-op when it exists for the same bars) {train_note}",
        description=train_note,
    )
    p.add_argument(
        "--bars", nargs="+", required=True, metavar="URI", help="CSV or Parquet bars, local or s3://"
    )
    p.add_argument("--out", required=True, metavar="URI", help="fxcache to write, local or s3://")
    p.add_argument("--tz", default=None, help="time zone of naive timestamps (default: UTC)")
    _add_timestamp_unit(p)
    p.add_argument("--force", action="store_true", help="recompute even when the fxcache already matches")
    p.set_defaults(func=cmd_precompute, extra="train")

    p = sub.add_parser(
        "train",
        help=f"the one-pod run: load once, every fold on one trainer, reports, metrics {train_note}",
        description=train_note,
    )
    p.add_argument("--fxcache", required=True, metavar="URI", help="fxcache to train on, local or s3://")
    p.add_argument(
        "--out",
        required=True,
        metavar="URI",
        help="output folder, local or s3://; the same command again resumes the run there",
    )
    _add_training(p, RunConfig())
    p.set_defaults(func=cmd_train, extra="train")

    p = sub.add_parser(
        "pipeline",
        help=f"precompute + train locally; with no --bars, on generated sample bars {train_note}",
        description=train_note,
    )
    p.add_argument(
        "--bars", nargs="+", default=None, metavar="URI", help="bars files (default: generated sample)"
    )
    p.add_argument(
        "--out", default="foxhunt-out", metavar="URI", help="output folder (default: ./foxhunt-out)"
    )
    p.add_argument("--tz", default=None, help="time zone of naive timestamps (default: UTC)")
    _add_timestamp_unit(p)
    p.add_argument(
        "--sample-bars",
        type=int,
        default=SAMPLE_BARS,
        help=f"rows of generated bars (default: {SAMPLE_BARS})",
    )
    p.add_argument(
        "--sample-signal",
        choices=("on", "off"),
        default="on",
        help="generated bars with the planted news drift (on), or with nothing predictable (off, for "
        "'does no harm' runs); default: on",
    )
    _add_training(p, RunConfig(epochs=PIPELINE_EPOCHS, folds=PIPELINE_FOLDS))
    p.set_defaults(func=cmd_pipeline, extra="train")

    p = sub.add_parser(
        "evaluate",
        help="score a saved run's folds on an fxcache (each fold on the bars of its own validation dates) "
        f"{train_note}",
        description=train_note,
    )
    p.add_argument("--run", required=True, metavar="URI", help="a run's --out folder, local or s3://")
    p.add_argument("--fxcache", required=True, metavar="URI", help="fxcache to score on, local or s3://")
    p.add_argument(
        "--out", default=None, metavar="URI", help="folder for evaluation.json and run.png (default: none)"
    )
    p.add_argument(
        "--eval-cost", type=float, default=None, help="cost per unit of change (default: the run's)"
    )
    p.add_argument("--eval-spread", type=float, default=None, help="bid-ask spread (default: the run's)")
    p.add_argument("--device", default="cpu", choices=("auto", "cpu", "cuda"), help="default: cpu")
    p.add_argument(
        "--allow-other-fxcache",
        action="store_true",
        help="score on an fxcache other than the one the run trained on (refused by default)",
    )
    p.set_defaults(func=cmd_evaluate, extra="train")

    try:
        from foxhunt_workflows.commands import add_workflow_commands
    except ImportError:  # the trainer image may ship without the workflows package
        return parser
    add_workflow_commands(sub)
    return parser


def _hyperopt_dqn(uri: str | None, without_file: DQNConfig | None = None) -> DQNConfig:
    """DQN settings: `train`'s defaults with a `--hyperopt-params` file applied (the same file means the
    same settings in every command), else `without_file` when given; every problem is BadInput naming
    the file."""
    dqn = DQNConfig()
    if uri is None:
        return dqn if without_file is None else without_file
    from foxhunt import storage

    storage.check_input(uri)
    try:
        params = json.loads(storage.read_bytes(uri))
    except (OSError, ValueError) as exc:
        raise BadInput(f"{uri}: cannot read hyperparameters: {exc}") from exc
    if not isinstance(params, dict) or set(params) - {"dqn"} or not isinstance(params.get("dqn", {}), dict):
        keys = sorted(params) if isinstance(params, dict) else type(params).__name__
        raise BadInput(
            f'{uri}: expected {{"dqn": {{...}}}}, found {keys}; evaluation costs are flags '
            "(--eval-cost, --eval-spread), never hyperparameters"
        )
    return override(dqn, params.get("dqn", {}), what=uri)


def run_config(args: argparse.Namespace) -> RunConfig:
    """The RunConfig that the parsed flags describe; a bad value is a UsageError naming its flag."""
    values = {flag: getattr(args, flag.replace("-", "_")) for flag in FLAGS}
    dqn = _hyperopt_dqn(args.hyperopt_params, PIPELINE_DQN if args.command == "pipeline" else None)
    try:
        return run_config_from_flags(values, dqn=dqn)
    except ConfigError as exc:
        flag = flag_of(exc)
        if flag is None:
            raise
        raise ConfigError(exc.section, exc.path, f"(--{flag}) {exc.problem}") from exc


def cmd_precompute(args: argparse.Namespace) -> int:
    from foxhunt.run.pipeline import precompute

    precompute(args.bars, args.out, tz=args.tz, timestamp_unit=args.timestamp_unit, force=args.force)
    return 0


def search_options(args: argparse.Namespace, settings: RunConfig):
    """The search the flags ask for (None with --trials 0, where the search flags are refused)."""
    from foxhunt.config.search import search_options as options

    return options(
        settings.trials,
        search_space=args.search_space,
        study_storage=args.study_storage,
        study_name=args.study_name,
        objective=args.objective,
        population=args.population,
        pruner=args.pruner,
    )


def search_planner(settings: RunConfig):
    """The search's planner for `--trials N > 0` (None otherwise): the CLI joins the search to the run."""
    if settings.trials == 0:
        return None
    try:
        from foxhunt.search.driver import plan_search  # Optuna: imported by a search only
    except ImportError as exc:
        raise UsageError(f"--trials needs the search's packages (foxhunt[train]): {exc}") from exc
    return plan_search


def mlflow_uri(args: argparse.Namespace) -> str | None:
    """The MLflow store `--mlflow-uri` names (None without the flag); exit 2 without the mlflow extra."""
    if args.mlflow_uri is None:
        return None
    require_extra("mlflow", f"foxhunt {args.command} --mlflow-uri")
    from foxhunt.run.mlflow_sink import tracking_uri

    return tracking_uri(args.mlflow_uri)


def cmd_train(args: argparse.Namespace) -> int:
    settings = run_config(args)
    search = search_options(args, settings)
    from foxhunt.run.mlflow_sink import recorded_in_mlflow
    from foxhunt.run.pipeline import train

    with recorded_in_mlflow(mlflow_uri(args), args.out, settings.log_format):
        summary = train(args.fxcache, args.out, settings, search=search, plan_search=search_planner(settings))
    if search is not None:
        _study_lines(settings, summary, args.out)
        return 0
    _closing_lines(settings, summary, f"outputs: {args.out} (summary.json, manifest.json, run.png, fold_N/)")
    return 0


def cmd_pipeline(args: argparse.Namespace) -> int:
    settings = run_config(args)
    search = search_options(args, settings)
    from foxhunt import storage
    from foxhunt.run.mlflow_sink import recorded_in_mlflow
    from foxhunt.run.pipeline import pipeline

    with recorded_in_mlflow(mlflow_uri(args), args.out, settings.log_format):
        summary = pipeline(
            args.bars,
            args.out,
            settings,
            sample_bars=args.sample_bars,
            sample_signal=args.sample_signal == "on",
            tz=args.tz,
            timestamp_unit=args.timestamp_unit,
            search=search,
            plan_search=search_planner(settings),
        )
    where = args.out if storage.local_path(args.out) is None else os.path.abspath(args.out)
    if search is not None:
        _study_lines(settings, summary, where)
        return 0
    outputs = (
        f"outputs: {where} (summary.json, run.png, features.fxcache, fold_N/weights.pt, norm stats, reports)"
    )
    _closing_lines(settings, summary, outputs)
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from foxhunt.config import EvalConfig
    from foxhunt.evaluate.run_scores import stitched_report
    from foxhunt.run.rescore import (
        check_evaluate_out,
        read_run_summary,
        score_saved_run,
        write_saved_run_score,
    )

    check_evaluate_out(args.run, args.out)
    eval_config = None
    if args.eval_cost is not None or args.eval_spread is not None:
        run_costs = read_run_summary(args.run).eval_config
        chosen = {"cost": args.eval_cost, "spread": args.eval_spread}
        try:
            # The run's execution model stays; only the costs named here change.
            eval_config = EvalConfig(**{**run_costs, **{k: v for k, v in chosen.items() if v is not None}})
        except ConfigError as exc:
            raise ConfigError(exc.section, exc.path, f"(--eval-{exc.path}) {exc.problem}") from exc
    score = score_saved_run(
        args.run,
        args.fxcache,
        eval_config=eval_config,
        device=args.device,
        allow_other_fxcache=args.allow_other_fxcache,
    )
    lines = [
        *score.table().splitlines(),
        *stitched_report(score.evaluation.stitched, len(score.evaluation.folds)),
    ]
    if args.out:
        written = write_saved_run_score(score, args.out)
        lines.append(f"outputs: {args.out} ({', '.join(written)})")
    for line in lines:
        print(line, flush=True)
    return 0


def _closing_lines(settings: RunConfig, summary, outputs: str) -> None:
    """The fold table and where the outputs are, on the run's console (text, or JSON lines)."""
    from foxhunt.evaluate.reports import fold_table
    from foxhunt.run.lifecycle import console

    emit = console(settings.log_format, summary.run_id)
    for line in [*fold_table(summary).splitlines(), outputs]:
        emit(line)


def _study_lines(settings: RunConfig, summary, out: str) -> None:
    """The study table and where the search's outputs are, on the run's console."""
    from foxhunt.run.lifecycle import console
    from foxhunt.search.outputs import study_lines

    emit = console(settings.log_format, summary.run_id)
    for line in study_lines(out):
        emit(line)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script: every error ends as one line on stderr and an exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    name = f"foxhunt {args.command}"
    # Every URL that can carry a password (flags and environment) is known before any line is printed.
    redaction.forget()  # this command's secrets only: an earlier command's must not mask this one's words
    redaction.register_environment()
    redaction.register(value for value in vars(args).values() if isinstance(value, str) and "://" in value)
    redaction.install_log_filter()
    try:
        if getattr(args, "extra", None):
            require_extra(args.extra, name)
        return args.func(args)
    except RunInterrupted as exc:
        print(f"{name}: interrupted: {redaction.scrub_text(exc)}", file=sys.stderr)
        return exc.exit_code
    except FoxhuntError as exc:
        kind = "error" if exc.exit_code == EXIT_USAGE else "failed"
        print(f"{name}: {kind}: {redaction.scrub_text(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc()
        print(
            f"{name}: unexpected error: {type(exc).__name__}: {redaction.scrub_text(exc)} "
            f"(set {DEBUG_ENV}=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
