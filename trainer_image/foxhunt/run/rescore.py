"""`foxhunt evaluate`: a saved run's folds scored on another fxcache, with the run's own report.

Which bars a fold trades: each saved fold's policy trades the bars of the new fxcache that fall in
that fold's own validation dates (its walk-forward window, from its first to its last bar), entered
from flat, so every bar is still out of sample for the model that trades it; the stitched record
joins those windows exactly as a run does. The ridge baseline is fitted on the new fxcache's bars in
the fold's training dates. On the run's own fxcache this reproduces the run's fold and stitched
figures exactly on the run's device (same bars, same costs, the bootstrap seeded with the run's seed;
to 1e-9 across devices, `evaluate.series`); on another
instrument over the same dates it is the same walk-forward on that instrument's bars. A fold whose
dates hold fewer than two bars of the new fxcache (validation or training) is skipped and named; an
fxcache with no bars in any fold's dates is refused (exit 2).

Trust: the run folder is checked against its manifest before a fold is scored (every fold file
present and matching its sha256, foxhunt.run.manifest), and an fxcache whose checksum differs from the
one the run trained on is refused unless `--allow-other-fxcache` (then a line says so). `--out` may
not lie inside `--run`, whose `run.png` it would replace.

Costs are the run's evaluation costs unless given. The result is printed as the run's table and,
with `--out`, written as `evaluation.json` (every window, the stitched record, what was scored) and
`run.png`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from foxhunt import out_names, storage, strict_json
from foxhunt.config import EvalConfig, config_keys
from foxhunt.data.folds import FoldRange
from foxhunt.errors import BadInput, ConfigError, UsageError
from foxhunt.evaluate.evaluation import RunEvaluation
from foxhunt.evaluate.reports import (
    FoldReport,
    RunSummary,
    evaluation_table,
    window_row,
    window_to_dict,
)
from foxhunt.run.manifest import MANIFEST_NAME, Manifest, read_manifest, verify_fold
from foxhunt.run.out_folder import same_or_inside

NS_PER_SECOND = 10**9
MIN_ROWS = 2  # the fewest bars a window (or a ridge fit) can be scored on


@dataclass
class SavedRunScore:
    """A saved run's folds scored on an fxcache: what was scored, how, and the evaluation."""

    run: str
    fxcache: str
    eval_config: EvalConfig
    seed: int
    evaluation: RunEvaluation
    skipped: list[str] = field(default_factory=list)  # folds not scored, each with why

    def to_dict(self) -> dict:
        """The JSON shape of `evaluation.json`."""
        return {
            "run": self.run,
            "fxcache": self.fxcache,
            "eval_config": {"cost": self.eval_config.cost, "spread": self.eval_config.spread},
            "seed": self.seed,
            "folds": [window_to_dict(w) for w in self.evaluation.folds],
            "stitched": window_to_dict(self.evaluation.stitched),
            "skipped": self.skipped,
        }

    def table(self) -> str:
        """The run's table for these windows, with the stitched row."""
        rows = [window_row(str(w.fold), w) for w in self.evaluation.folds]
        return evaluation_table([*rows, window_row("stitched", self.evaluation.stitched)])


def read_run_summary(run_uri: str) -> RunSummary:
    """The summary of a run folder; BadInput (exit 2) when the folder is not a foxhunt run, or when a
    field evaluate reads (seed, eval_config) is not what a run writes (naming the file and the key)."""
    uri = storage.join(run_uri, out_names.SUMMARY)
    try:
        raw = json.loads(storage.read_bytes(uri))
        if isinstance(raw, dict) and isinstance(raw.get("instruments"), list):  # a universe run's summary
            raise BadInput(
                f"{uri}: a run over several instruments: evaluate reads one instrument's run; train that "
                "instrument alone, or read its records under instruments/<name>/ and the book in book.json"
            )
        summary = RunSummary.from_dict(raw)
    except FileNotFoundError as exc:
        raise BadInput(f"{run_uri}: not a foxhunt run (no summary.json)") from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BadInput(f"{uri}: not a foxhunt run summary ({type(exc).__name__}: {exc})") from exc
    if not isinstance(summary.seed, int) or isinstance(summary.seed, bool) or summary.seed < 0:
        raise BadInput(f"{uri}: seed is {summary.seed!r}, not a seed a run writes (an integer ≥ 0)")
    run_eval_config(run_uri, summary.eval_config)
    return summary


def run_eval_config(
    run_uri: str, recorded: object, costs: Mapping[str, float | None] | None = None
) -> EvalConfig:
    """The run's evaluation settings (its summary's `eval_config`) with the `costs` the flags name.

    BadInput (exit 2) naming summary.json and the key for an unknown key or a bad value recorded
    there; a ConfigError naming the flag for a bad value of a flag."""
    where = storage.join(run_uri, out_names.SUMMARY)
    if not isinstance(recorded, dict):
        raise BadInput(f"{where}: eval_config is {type(recorded).__name__}, not an object")
    unknown = sorted(str(key) for key in set(recorded) - set(config_keys(EvalConfig)))
    if unknown:
        raise BadInput(
            f"{where}: eval_config has unknown key(s) {', '.join(unknown)}; "
            f"valid keys: {', '.join(config_keys(EvalConfig))}"
        )
    try:
        config = EvalConfig(**recorded)
    except ConfigError as exc:
        raise BadInput(f"{where}: eval_config.{exc.path} {exc.problem}") from None
    chosen: dict[str, Any] = {key: value for key, value in (costs or {}).items() if value is not None}
    try:
        return replace(config, **chosen)  # the run's execution model stays; only the named costs change
    except ConfigError as exc:
        raise ConfigError(exc.section, exc.path, f"(--eval-{exc.path}) {exc.problem}") from exc


def _seconds_ns(iso: str) -> int:
    return int(np.datetime64(iso.removesuffix("Z"), "s").astype("datetime64[ns]").astype(np.int64))


def _rows_between(timestamp: np.ndarray, first_ns: int, last_ns: int) -> tuple[int, int]:
    """End-exclusive rows of the bars from `first_ns` to `last_ns` inclusive."""
    return int(np.searchsorted(timestamp, first_ns, "left")), int(
        np.searchsorted(timestamp, last_ns, "right")
    )


def saved_fold_range(report: FoldReport, timestamp: np.ndarray) -> FoldRange:
    """The fold's training and validation dates as rows of `timestamp` (dates to the second, validation
    to the nanosecond when the report has its evaluation)."""
    d = report.dates
    train = _rows_between(
        timestamp, _seconds_ns(d.train_first_bar), _seconds_ns(d.train_last_bar) + NS_PER_SECOND - 1
    )
    if report.evaluation is not None:
        val = _rows_between(timestamp, report.evaluation.start_ns, report.evaluation.end_ns)
    else:
        val = _rows_between(
            timestamp, _seconds_ns(d.val_first_bar), _seconds_ns(d.val_last_bar) + NS_PER_SECOND - 1
        )
    return FoldRange(report.fold, *train, *val, report.difficulty_score)


def check_evaluate_out(run_uri: str, out_uri: str | None) -> None:
    """UsageError (exit 2) when `out_uri` is `run_uri` or lies inside it: evaluate writes `run.png`."""
    if out_uri and same_or_inside(out_uri, run_uri):
        raise UsageError(
            f"--out {out_uri}: inside --run {run_uri}, whose files evaluate would replace; use another --out"
        )


def verified_manifest(run_uri: str, summary: RunSummary) -> Manifest:
    """The run's manifest, with every fold of `summary` completed in it and its files intact; BadInput."""
    try:
        manifest = read_manifest(run_uri)
    except ValueError as exc:
        raise BadInput(f"{storage.join(run_uri, MANIFEST_NAME)}: {exc}") from exc
    if manifest is None:
        raise BadInput(f"{run_uri}: not a foxhunt run (no {MANIFEST_NAME})")
    for report in summary.folds:
        record = manifest.run.folds.get(report.fold)
        if record is None:
            raise BadInput(
                f"{run_uri}: fold {report.fold} is in summary.json but not completed in {MANIFEST_NAME}"
            )
        problem = verify_fold(run_uri, record)
        if problem:
            raise BadInput(f"{run_uri}: fold {report.fold}: {problem} ({MANIFEST_NAME})")
    return manifest


def check_fxcache_is_the_runs(
    manifest: Manifest,
    fxcache_uri: str,
    checksum: str | None,
    allow_other: bool,
    progress: Callable[[str], None],
) -> None:
    """BadInput unless the fxcache's checksum is the run's, or `allow_other` (then one line says so)."""
    if checksum == manifest.fxcache_checksum:
        return
    if not allow_other:
        raise BadInput(
            f"{fxcache_uri}: its checksum {str(checksum)[:12]} is not that of the fxcache the run trained on "
            f"({str(manifest.fxcache_checksum)[:12]}, {manifest.fxcache}); pass --allow-other-fxcache to score "
            "the run on other bars"
        )
    progress(
        f"--allow-other-fxcache: scoring on {fxcache_uri} (checksum {str(checksum)[:12]}), not the run's "
        f"fxcache ({str(manifest.fxcache_checksum)[:12]})"
    )


def score_saved_run(
    run_uri: str,
    fxcache_uri: str,
    *,
    eval_config: EvalConfig | None = None,
    device: str = "cpu",
    progress: Callable[[str], None] = print,
    allow_other_fxcache: bool = False,
) -> SavedRunScore:
    """Score every saved fold of the run at `run_uri` on the fxcache at `fxcache_uri` (see the module doc)."""
    from foxhunt.data.fxcache import read_fxcache
    from foxhunt.evaluate.fold_policy import load_policy
    from foxhunt.evaluate.run_scores import run_scoring, stitched_evaluation
    from foxhunt.train import resolve_device, to_device

    summary = read_run_summary(run_uri)
    if not summary.folds:
        raise BadInput(f"{run_uri}: the run holds no completed fold to evaluate")
    manifest = verified_manifest(run_uri, summary)
    config = eval_config or run_eval_config(run_uri, summary.eval_config)
    cache = read_fxcache(fxcache_uri)
    check_fxcache_is_the_runs(
        manifest, fxcache_uri, cache.metadata.get("checksum"), allow_other_fxcache, progress
    )
    data = to_device(cache.features, cache.targets, cache.timestamp, resolve_device(device))
    folds, positions, skipped = [], {}, []
    for report in summary.folds:
        fold_range = saved_fold_range(report, cache.timestamp)
        if fold_range.val_rows < MIN_ROWS or fold_range.train_rows < MIN_ROWS:
            skipped.append(
                f"fold {report.fold}: {fold_range.val_rows} validation and {fold_range.train_rows} training "
                f"bars of {fxcache_uri} fall in its dates (at least {MIN_ROWS} of each needed)"
            )
            continue
        policy = load_policy(
            storage.join(run_uri, out_names.fold_folder(report.fold)), device=data.features.device
        )
        positions[report.fold] = policy.rollout(data.features[fold_range.val_slice].cpu().numpy())
        folds.append(fold_range)
        progress(
            f"fold {report.fold}: {fold_range.val_rows:,} bars of {fxcache_uri} from "
            f"{report.dates.val_first_bar} to {report.dates.val_last_bar}"
        )
    if not folds:
        first, last = summary.folds[0].dates.val_first_bar, summary.folds[-1].dates.val_last_bar
        raise BadInput(
            f"{fxcache_uri}: no bars in the validation dates of any fold of {run_uri} ({first} → {last})"
        )
    for line in skipped:
        progress(f"skipped {line}")
    scoring = run_scoring(config, summary.seed, data)
    evaluation = stitched_evaluation(data.features, data.targets, data.timestamp, folds, positions, scoring)
    return SavedRunScore(run_uri, fxcache_uri, config, summary.seed, evaluation, skipped)


def write_saved_run_score(score: SavedRunScore, out_uri: str) -> list[str]:
    """Write `evaluation.json` and (with matplotlib) `run.png` into `out_uri`."""
    from foxhunt.evaluate.plot_run import run_pictures

    written = {out_names.EVALUATION: strict_json.json_bytes(score.to_dict())}
    try:
        written.update(run_pictures(score.evaluation, [], f"{score.run} on {score.fxcache}"))
    except ImportError:
        pass  # JSON only where matplotlib is not installed
    for name, data in written.items():
        storage.write_bytes(storage.join(out_uri, name), data)
    return list(written)
