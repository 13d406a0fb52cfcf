"""The parser of every `foxhunt` sub-command: its flags, their types, choices, defaults and help, most of
them read from the config fields they set (`config.flags.FLAGS`). Imports nothing heavy."""

from __future__ import annotations

import argparse

from foxhunt import __version__
from foxhunt.cli.commands import cmd_evaluate, cmd_pipeline, cmd_precompute, cmd_train
from foxhunt.config import PIPELINE_EPOCHS, PIPELINE_FOLDS, SAMPLE_BARS, RunConfig
from foxhunt.config.flags import FLAGS, field_at, flag_value, value_at
from foxhunt.config.setting import expectation
from foxhunt.extras import needs_note

DESCRIPTION = "The `foxhunt` command: precompute, train, pipeline, evaluate, workflows render, submit."
EPILOG = (
    "A CPU run repeats bit for bit at any thread count: the command sets MKL_CBWR=AVX2,STRICT (MKL's "
    "reproducible mode) unless the environment sets MKL_CBWR (README, Reproducibility)."
)
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
        "store; alone: $MLFLOW_TRACKING_URI, else the local file store ./mlruns; sqlite:///PATH, a path or "
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


def _add_bar_reading(p: argparse.ArgumentParser) -> None:
    """How the bars' timestamps are read: the time zone of naive ones, the unit of integer ones."""
    p.add_argument("--tz", default=None, help="time zone of naive timestamps (default: UTC)")
    # The units of foxhunt.data.bars.TIMESTAMP_UNITS, written out: the parser imports no numpy.
    p.add_argument(
        "--timestamp-unit",
        default=None,
        choices=("s", "ms", "us", "ns"),
        help="what integer timestamps count since 1970-01-01 UTC (required when they are integers)",
    )


def _add_overlay(p: argparse.ArgumentParser) -> None:
    """--overlay-drift and --overlay-seed: a positive control on the user's own bars."""
    p.add_argument(
        "--overlay-drift",
        type=float,
        default=None,
        metavar="X",
        help="lay the sample's planted news over the --bars before precompute: news bars (1 in 250) with "
        "a 10-sigma jump and e^2 times the volume, then a drift for 60 bars at X times the sample's size "
        "relative to the bars' own noise (1 = the sample's signal-to-noise; 0 = the same news, nothing "
        "predictable): would foxhunt find an edge of this size in these bars, with these costs? "
        "(default: no overlay)",
    )
    p.add_argument(
        "--overlay-seed",
        type=int,
        default=None,
        metavar="N",
        help="which bars are news and their directions, with --overlay-drift (default: 0)",
    )


def _add_precompute(sub: argparse._SubParsersAction, train_note: str) -> None:
    """`foxhunt precompute`: bars → features → fxcache."""
    p = sub.add_parser(
        "precompute",
        help=f"bars → features → fxcache (a no-op when it exists for the same bars) {train_note}",
        description=train_note,
    )
    p.add_argument(
        "--bars", nargs="+", required=True, metavar="URI", help="CSV or Parquet bars, local or s3://"
    )
    p.add_argument("--out", required=True, metavar="URI", help="fxcache to write, local or s3://")
    _add_bar_reading(p)
    _add_overlay(p)
    p.add_argument("--force", action="store_true", help="recompute even when the fxcache already matches")
    p.set_defaults(func=cmd_precompute, extra="train")


def _add_train(sub: argparse._SubParsersAction, train_note: str) -> None:
    """`foxhunt train`: the one-pod run on an fxcache."""
    p = sub.add_parser(
        "train",
        help=f"the one-pod run: load once, every fold on one trainer, reports, metrics {train_note}",
        description=train_note,
    )
    p.add_argument(
        "--fxcache",
        required=True,
        action="append",
        metavar="URI",
        help="fxcache to train on, local or s3://; repeat it to train one policy on several instruments "
        "(a universe: records per instrument under --out/instruments/, the book in --out/book.json; an "
        'epoch then steps through every instrument\'s rows: --hyperopt-params with {"dqn": '
        '{"steps_per_epoch": N}} holds it at N steps)',
    )
    p.add_argument(
        "--out",
        required=True,
        metavar="URI",
        help="output folder, local or s3://; the same command again resumes an interrupted run there (one "
        "--fxcache or several); --overwrite starts over",
    )
    _add_training(p, RunConfig())
    p.set_defaults(func=cmd_train, extra="train")


def _add_pipeline(sub: argparse._SubParsersAction, train_note: str) -> None:
    """`foxhunt pipeline`: precompute and train locally, by default on generated sample bars."""
    p = sub.add_parser(
        "pipeline",
        help=f"precompute + train locally; with no --bars, on generated sample bars {train_note}",
        description=train_note,
    )
    p.add_argument(
        "--bars",
        nargs="+",
        action="append",
        default=None,
        metavar="URI",
        help="bars files of one instrument (default: generated sample); repeat --bars for several "
        "instruments, trained together (a universe)",
    )
    p.add_argument(
        "--out", default="foxhunt-out", metavar="URI", help="output folder (default: ./foxhunt-out)"
    )
    _add_bar_reading(p)
    _add_overlay(p)
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


def _add_evaluate(sub: argparse._SubParsersAction, train_note: str) -> None:
    """`foxhunt evaluate`: score a saved run's folds on an fxcache."""
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    parser = argparse.ArgumentParser(prog="foxhunt", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"foxhunt {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    # Commands that train or read bars need the `train` extra; each says so in its help.
    train_note = needs_note("train")
    for add in (_add_precompute, _add_train, _add_pipeline, _add_evaluate):
        add(sub, train_note)

    try:
        from foxhunt_workflows.commands import add_workflow_commands
    except ImportError:  # the trainer image may ship without the workflows package
        return parser
    add_workflow_commands(sub)
    return parser
