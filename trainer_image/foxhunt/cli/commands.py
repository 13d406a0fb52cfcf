"""What each `foxhunt` sub-command does with its parsed flags: the run's settings from the flags (and a
`--hyperopt-params` file), the call into the run or the search, and the closing lines on the console.
The training modules are imported inside each command, so building the CLI imports nothing heavy."""

from __future__ import annotations

import argparse
import json
import os

from foxhunt import out_names
from foxhunt.config import PIPELINE_DQN, DQNConfig, RunConfig, override
from foxhunt.config.flags import FLAGS, flag_of, run_config_from_flags
from foxhunt.errors import BadInput, ConfigError, UsageError
from foxhunt.extras import require_extra


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
    if args.hyperopt_params and getattr(args, "out", None):
        # Before the file is read: an input inside --out is one a later --overwrite would remove.
        from foxhunt.run.out_folder import check_inputs_outside

        try:
            check_inputs_outside(args.out, [args.hyperopt_params])
        except UsageError as exc:
            raise UsageError(f"--hyperopt-params {exc}") from None
    dqn = _hyperopt_dqn(args.hyperopt_params, PIPELINE_DQN if args.command == "pipeline" else None)
    try:
        return run_config_from_flags(values, dqn=dqn)
    except ConfigError as exc:
        flag = flag_of(exc)
        if flag is None:
            raise
        raise ConfigError(exc.section, exc.path, f"(--{flag}) {exc.problem}") from exc


def overlay_options(args: argparse.Namespace):
    """The overlay `--overlay-drift` asks for (None without it); `--overlay-seed` alone is a UsageError."""
    from foxhunt.run.precompute import OverlayOptions

    if args.overlay_drift is None:
        if args.overlay_seed is not None:
            raise UsageError("--overlay-seed picks the news of an overlay: give --overlay-drift too")
        return None
    return OverlayOptions(args.overlay_drift, 0 if args.overlay_seed is None else args.overlay_seed)


def cmd_precompute(args: argparse.Namespace) -> int:
    from foxhunt.run.precompute import precompute

    precompute(
        args.bars,
        args.out,
        tz=args.tz,
        timestamp_unit=args.timestamp_unit,
        force=args.force,
        overlay=overlay_options(args),
    )
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
        raise UsageError(
            f"--trials needs the search's packages (the train extra: pip install '.[train]' in the "
            f"foxhunt checkout): {exc}"
        ) from exc
    return plan_search


def mlflow_uri(args: argparse.Namespace) -> str | None:
    """The MLflow store `--mlflow-uri` names (None without the flag); exit 2 without the mlflow extra."""
    if args.mlflow_uri is None:
        return None
    require_extra("mlflow", f"foxhunt {args.command} --mlflow-uri")
    from foxhunt.run.sinks.mlflow_sink import tracking_uri

    return tracking_uri(args.mlflow_uri)


def live_record(uri: str | None):
    """The MLflow run written while the run goes, for the store `uri` (None without `--mlflow-uri`)."""
    if uri is None:
        return None
    from foxhunt.run.sinks.mlflow_live import LiveRecord

    return LiveRecord(uri)


def _pictures(settings: RunConfig) -> str:
    """The pictures a run draws, for its `outputs:` line (none with --pictures off)."""
    if not settings.draws_pictures:
        return ""
    names = [
        out_names.RUN_PICTURE,
        out_names.POSITIONS_PICTURE,
        out_names.LEARNING_PICTURE,
        out_names.TIMINGS_PICTURE,
    ]
    if settings.seeds > 1:
        names.append(out_names.SEEDS_PICTURE)
    return ", ".join(names)


def cmd_train(args: argparse.Namespace) -> int:
    settings = run_config(args)
    if len(args.fxcache) > 1:
        return _train_universe(args, settings)
    search = search_options(args, settings)
    from foxhunt.run.pipeline import train
    from foxhunt.run.sinks.mlflow_sink import recorded_in_mlflow

    uri = mlflow_uri(args)
    live = live_record(uri)
    with recorded_in_mlflow(uri, args.out, settings.log_format, live):
        summary = train(
            args.fxcache[0],
            args.out,
            settings,
            search=search,
            plan_search=search_planner(settings),
            sink=live,
        )
    if search is not None:
        _study_lines(settings, summary, args.out)
        return 0
    files = ", ".join(f for f in ("summary.json, manifest.json", _pictures(settings), "fold_N/") if f)
    _closing_lines(settings, summary, args.out, files)
    return 0


def _train_universe(args: argparse.Namespace, settings: RunConfig) -> int:
    """`foxhunt train` with several --fxcache: one trainer on the universe (run/universe_run.py), or with
    --trials a search whose objective is the book's (search/universe_search.py)."""
    search = search_options(args, settings)  # the search flags without --trials are refused here too
    if search is not None:
        search_planner(settings)  # the search's packages, or exit 2
        from foxhunt.search.universe_search import search_universe, universe_study_lines

        search_universe(args.fxcache, args.out, settings, search)
        for line in universe_study_lines(args.out, settings.draws_pictures):
            print(line, flush=True)
        return 0
    from foxhunt.run.universe_run import train_universe

    result = train_universe(args.fxcache, args.out, settings)
    _universe_outputs(args.out, result.summary, settings.draws_pictures)
    return 0


def _universe_outputs(out: str, summary: dict, drawn: bool = True) -> None:
    """A universe run's `outputs:` line (holdout.json with --holdout-days): the book's picture at the top,
    each instrument's in its folder (`drawn`: not with --pictures off)."""
    names = ", ".join(i["name"] for i in summary["instruments"])
    held = ", holdout.json" if "holdout" in summary else ""
    if not drawn:
        print(f"outputs: {out}: summary.json, book.json{held}, instruments/<name>/ for {names}", flush=True)
        return
    book = f", {out_names.BOOK_PICTURE}" if "book" in summary else ""
    each = ", ".join(
        (
            out_names.RUN_PICTURE,
            out_names.POSITIONS_PICTURE,
            out_names.LEARNING_PICTURE,
            out_names.TIMINGS_PICTURE,
        )
    )
    print(
        f"outputs: {out}: summary.json, book.json{book}{held}, instruments/<name>/ ({each}) for {names}",
        flush=True,
    )


def _pipeline_universe(args: argparse.Namespace, settings: RunConfig) -> int:
    """`foxhunt pipeline` with several --bars: each precomputed, then one trainer on all."""
    from foxhunt.run.universe_pipeline import pipeline_universe

    if overlay_options(args) is not None:
        raise UsageError("--overlay-drift: not supported with several --bars yet")
    result = pipeline_universe(args.bars, args.out, settings, tz=args.tz, timestamp_unit=args.timestamp_unit)
    _universe_outputs(args.out, result.summary, settings.draws_pictures)
    return 0


def cmd_pipeline(args: argparse.Namespace) -> int:
    settings = run_config(args)
    if args.bars is not None and len(args.bars) > 1:
        return _pipeline_universe(args, settings)
    args.bars = None if args.bars is None else args.bars[0]  # one instrument: its files
    search = search_options(args, settings)
    from foxhunt import storage
    from foxhunt.run.pipeline import pipeline
    from foxhunt.run.sinks.mlflow_sink import recorded_in_mlflow

    overlay = overlay_options(args)
    uri = mlflow_uri(args)
    live = live_record(uri)
    with recorded_in_mlflow(uri, args.out, settings.log_format, live):
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
            sink=live,
            overlay=overlay,
        )
    where = args.out if storage.local_path(args.out) is None else os.path.abspath(args.out)
    if search is not None:
        _study_lines(settings, summary, where)
        return 0
    files = f"summary.json, {_pictures(settings)}, features.fxcache, fold_N/weights.pt, norm stats, reports"
    _closing_lines(settings, summary, where, files)
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from foxhunt.evaluate.stitched_report import stitched_report
    from foxhunt.run.rescore import (
        check_evaluate_out,
        read_run_summary,
        run_eval_config,
        score_saved_run,
        write_saved_run_score,
    )

    check_evaluate_out(args.run, args.out)
    eval_config = None
    if args.eval_cost is not None or args.eval_spread is not None:
        chosen = {"cost": args.eval_cost, "spread": args.eval_spread}
        eval_config = run_eval_config(args.run, read_run_summary(args.run).eval_config, chosen)
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


def _closing_lines(settings: RunConfig, summary, where: str, files: str) -> None:
    """The fold table, where the time went and where the outputs are, on the run's console (text, or JSON lines)."""
    from foxhunt import out_names
    from foxhunt.evaluate.reports import fold_table, time_line
    from foxhunt.run.lifecycle import console

    if summary.holdout is not None:  # the headline's files, named where a reader looks for outputs
        picture = f", {out_names.HOLDOUT_PICTURE}" if settings.draws_pictures else ""
        files += f", {out_names.HOLDOUT_REPORT} (the headline){picture}, {out_names.HOLDOUT_DIR}/"
    emit = console(settings.log_format, summary.run_id)
    for line in [*fold_table(summary).splitlines(), time_line(summary), f"outputs: {where} ({files})"]:
        emit(line)


def _study_lines(settings: RunConfig, summary, out: str) -> None:
    """The study table and where the search's outputs are, on the run's console."""
    from foxhunt.run.lifecycle import console
    from foxhunt.search.outputs import study_lines

    emit = console(settings.log_format, summary.run_id)
    for line in study_lines(out, settings.draws_pictures):
        emit(line)
