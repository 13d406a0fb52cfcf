"""A run over a universe: `foxhunt train --fxcache A --fxcache B ...` trains ONE trainer on all of them.

Every fxcache is read and the universe checked (`data.universe_inputs.read_universe`: duplicates, other
feature versions, no time in common, a missing or damaged file, each refused with one line naming the
file) and the folds planned by calendar date across the instruments (`data.universe.universe_folds`)
before any device memory is touched (with `--holdout-days`, on the rows before the held-out period:
`universe_holdout.plan_universe`); the memory estimate counts every instrument's rows. Then the
arrays go to the device once, concatenated, and one trainer walks every fold through the one walk over
folds (`walk.walk_folds`, whose step is a universe fold: `universe_walk.universe_step`). Each
instrument's out-of-sample positions are stitched over its folds and scored with its own execution costs:
``instruments/<name>/`` holds its folds, ``stitched.json`` and ``series.npz`` (timestamps, positions, net
returns), and the run's ``summary.json`` lists the instruments. `UniverseResult.series` hands the same
series out in plain numpy.

The book (`run/universe_book.py`): the instruments' stitched records combined with equal-risk weights
measured before the book's first out-of-sample bar (evaluate/book.py), scored beside its buy-and-hold,
flat and supervised models (combined the same way) with the paired comparisons, and its feature oracle;
summary.json's ``book`` and ``book.json``, and a console line after the instruments'. The pictures
(`run/universe_pictures.py`; none with `--pictures off`): ``book.png`` and each instrument's ``run.png`` ... in
its folder. Metrics (a Pushgateway given by `--pushgateway` or $FOXHUNT_PUSHGATEWAY): each fold's
and each stitched record's figures under ``instrument="<name>"``, the book's under ``instrument="book"``.

`--seeds K` trains K members side by side; the run's records are the first seed's, each instrument's
summary entry and the book list every seed's stitched net Sharpe and their spread. `--holdout-days D`
(`run/universe_holdout.py`): the last D days by calendar across the universe are seen by no fold; one
more universe fold trains before them and validates each instrument on them, each instrument's held-out
record (``instruments/<name>/holdout.json``) and the book's (``holdout.json``, summary.json's
``holdout``) written after the book. A search (`--trials`) is `search/universe_search.py`'s. An interrupted
universe run resumes (`run/universe_resume.py`): the same command again takes over the folds it completed
(recorded in ``manifest.json``) and trains the rest; a finished one is refused, `--overwrite` starts over.
A failure (the first seed's divergence among them; another seed's leaves that seed out of the spreads;
the `--out` lock taken over by another run while this one stalled, noticed where a stop is) or a stop
signal (SIGTERM, SIGINT: checked where an ordinary run checks, between epochs and folds) ends the run as
an ordinary run's does (`run/universe_failure.py`): exit 1, or 128 + the signal, with
summary.json "failed" or "interrupted", the error and the completed folds, which the same command takes
over.

Speed with K instruments: an epoch is ``ceil(learning rows / batch size)`` gradient steps, and the
learning rows are every instrument's, so K instruments make about K times the steps of one (and the
collection and the validation, which roll every instrument's rows, grow with K too). To hold an epoch at
one instrument's steps while learning from all K (each batch then draws from every instrument, so each
sees about 1/K of the samples it would alone), fix the steps with the DQN setting `steps_per_epoch`, e.g.
``--hyperopt-params params.json`` holding ``{"dqn": {"steps_per_epoch": N}}``, N about one instrument's
``ceil(learning rows of a fold / batch size)``; 0, the default, keeps ``ceil(rows / batch)``. A fixed N
is the same in every fold, where the default grows with an expanding window's rows.

`foxhunt pipeline --bars A --bars B ...` precomputes each instrument's fxcache under `--out` and then calls
`train_universe` (`universe_pipeline.pipeline_universe`).
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import partial

import numpy as np
import torch

from foxhunt import storage, strict_json
from foxhunt.config import MAJORITY, MIN_SEEDS_FOR_MAJORITY, RunConfig
from foxhunt.data.universe import UniverseFold
from foxhunt.data.universe_inputs import instrument_name, read_universe
from foxhunt.errors import UsageError
from foxhunt.evaluate.evaluation import MODEL, RunEvaluation
from foxhunt.evaluate.reports import phase_time_line, window_to_dict
from foxhunt.evaluate.seed_spread import seed_spread
from foxhunt.run import compile_cache
from foxhunt.run.fold import Progress, stitch_majority
from foxhunt.run.lifecycle import Heartbeat, holding_out
from foxhunt.run.n_step_choice import first_training_returns, with_chosen_n_step
from foxhunt.run.sinks.pushgateway import resolve_pushgateway, resolve_run_id
from foxhunt.run.sinks.telemetry import RunMetrics
from foxhunt.run.sinks.telemetry_reads import stitched_figures
from foxhunt.run.universe_book import stitched_series, write_book
from foxhunt.run.universe_failure import finished, universe_ending
from foxhunt.run.universe_holdout import plan_universe, run_universe_holdout
from foxhunt.run.universe_pictures import write_universe_pictures
from foxhunt.run.universe_resume import UniverseLedger, open_ledger, universe_hooks, universe_identity
from foxhunt.run.universe_walk import (
    InstrumentView,
    instrument_folder,
    instrument_outcomes,
    instrument_views,
    local_folds,
    member_evaluations,
    pooled_evidence,
    universe_execution,
    universe_fold_times,
    universe_step,
)
from foxhunt.run.walk import Walked, diverged_seeds, walk_folds
from foxhunt.train import DeviceData, DQNTrainer, resolve_device
from foxhunt.train.device_data import universe_to_device
from foxhunt.train.memory_estimate import check_device_memory

SUMMARY = "summary.json"
STITCHED = "stitched.json"
SERIES = "series.npz"


@dataclass(frozen=True)
class UniverseResult:
    """What a universe run hands out: its summary (as written) and, per instrument name, its stitched
    out-of-sample series: ``timestamp`` (int64 ns), ``positions`` (float64 −1/0/1), ``net_returns``
    (float64 log returns after its own costs), one entry per bar, and the baselines' (`stitched_series`)."""

    summary: dict
    series: dict[str, dict[str, np.ndarray]]


def check_universe_settings(settings: RunConfig) -> None:
    """What a universe run does not do yet: UsageError (exit 2) naming the setting. A search (`--trials`) is
    `search/universe_search.py`'s, which `foxhunt train` calls instead."""
    if settings.trials > 0:
        raise UsageError(
            "--trials: not supported here with several instruments yet; a universe's search is "
            "foxhunt train --fxcache A --fxcache B ... --trials N"
        )
    compile_cache.check_setting(settings.compile_cache)


def load_series(out_uri: str) -> dict[str, dict[str, np.ndarray]]:
    """A finished universe run's per-instrument stitched series, read back from `out_uri` (the same arrays
    as `UniverseResult.series`): for a book combined after the run."""
    summary = json.loads(storage.read_bytes(storage.join(out_uri, SUMMARY)))
    out = {}
    for entry in summary["instruments"]:
        if entry["folds"]:
            uri = storage.join(instrument_folder(out_uri, entry["name"]), SERIES)
            with np.load(io.BytesIO(storage.read_bytes(uri))) as npz:
                out[entry["name"]] = {key: npz[key] for key in npz.files}
    return out


def _series_bytes(series: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **series)  # type: ignore[arg-type]  # numpy's stub types the first keyword only
    return buf.getvalue()


def train_universe(
    fxcache_uris: Sequence[str],
    out_uri: str,
    settings: RunConfig,
    progress: Progress = print,
    metrics: RunMetrics | None = None,
) -> UniverseResult:
    """Train one trainer on every fxcache of `fxcache_uris` and write each instrument's records and the
    book's (module docstring). Bad input is refused before anything is written. `metrics`: where the
    figures go (default: the run's Pushgateway, if one is configured), each instrument's under its name."""
    check_universe_settings(settings)
    try:
        device = resolve_device(settings.device)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    summary_uri = storage.join(out_uri, SUMMARY)
    if storage.exists(summary_uri) and not settings.overwrite and finished(summary_uri):
        raise UsageError(f"{out_uri}: holds a run already; give another --out or --overwrite")
    run_id = resolve_run_id(settings.run_id)
    if metrics is None:
        metrics = RunMetrics(
            run_id, pushgateway=resolve_pushgateway(settings.pushgateway),
            model=settings.model, device=str(device), metrics_port=settings.metrics_port,
        )  # fmt: skip
    try:
        with holding_out(out_uri, run_id, metrics) as heartbeat:  # no second run writes here meanwhile
            return _train_universe(fxcache_uris, out_uri, settings, device, progress, metrics, heartbeat)
    finally:
        metrics.close()


def _train_universe(
    fxcache_uris: Sequence[str],
    out_uri: str,
    settings: RunConfig,
    device: torch.device,
    progress: Progress,
    metrics: RunMetrics,
    heartbeat: Heartbeat,
) -> UniverseResult:
    """Read and check, then (the run started, its end told to `metrics`) load, walk, stitch, combine and
    write: `train_universe` once its settings are checked and its `--out` locked (`heartbeat`: the lock's)."""
    t0 = time.perf_counter()
    caches = read_universe(fxcache_uris)
    names = [instrument_name(c.uri, c.metadata) for c in caches]
    stamps, returns = [c.timestamp for c in caches], [c.targets[:, 0] for c in caches]
    folds, held = plan_universe(stamps, returns, names, settings.folds, progress)
    identity = universe_identity(caches, names, device.type, settings)
    ledger = open_ledger(out_uri, identity, settings, names, progress)  # refuses before any write
    first = first_training_returns([c.targets for c in caches], folds[0].ranges)
    settings, n_step_choice = with_chosen_n_step(settings, first, progress)  # the ledger keeps the 0 given
    planned = [*folds, held] if held is not None else folds
    max_rows = max(sum(r.train_rows for r in f.ranges if r is not None) for f in planned)
    total = sum(len(c) for c in caches)
    check_device_memory(device, total, caches[0].features.shape[1], max_rows, settings.dqn)
    metrics.run_started()  # refusals above are before the run: nothing pushed for them
    run = {"device": str(device), "data_load_seconds": None, "started": t0, "n_step_choice": n_step_choice}
    # Every way out from here ends as an ordinary run's: stopped, failed, or succeeded (universe_failure).
    rows = [len(c) for c in caches]
    with universe_ending(ledger, fxcache_uris, rows, run, len(folds), metrics, heartbeat) as check:
        data = universe_to_device(names, [(c.features, c.targets, c.timestamp) for c in caches], device)
        run["data_load_seconds"] = loaded = time.perf_counter() - t0
        metrics.data_loaded(loaded, total)
        metrics.folds_planned(len(folds))
        progress(
            f"loaded {len(caches)} instruments, {total:,} rows onto {device} in {loaded:.2f}s; {len(folds)} folds"
        )
        views = instrument_views(data, settings)
        seeds = [settings.seed + i for i in range(settings.seeds)]  # member i trains from seed + i
        trainer, walked = _walk(
            data, views, folds, max_rows, seeds, out_uri, settings, progress, metrics, ledger, check,
            compiled_beside=fxcache_uris[0],
        )  # fmt: skip
        history = {n: (c.timestamp, c.targets[:, 0]) for n, c in zip(names, caches, strict=True)}
        held_out = None if held is None else partial(
            run_universe_holdout, trainer, views, held, history=history, out_uri=out_uri, settings=settings,
            progress=progress, metrics=metrics, earlier=_held_out_voters(walked, settings),
            at_fold=ledger.at_fold, check=check,
        )  # fmt: skip
        ledger.holdout_fold = None if held is None else held.fold  # a failure or a stop in it names it
        result = universe_records(views, fxcache_uris, folds, walked, seeds, history, out_uri, settings, run,
                                  progress, metrics, held_out, pictures=settings.draws_pictures)  # fmt: skip
        progress(
            phase_time_line(
                result.summary["run_seconds"],
                loaded,
                universe_fold_times(walked.outcomes[0]),
                seeds=len(seeds) > 1,
            )
        )
        return result


def _held_out_voters(walked: Walked, settings: RunConfig) -> dict[int, list]:
    """The members that train the held-out fold, each with its folds' pooled out-of-sample windows: the
    first; with `--result majority`, every member that walked every fold (their vote is the headline)."""
    voters = walked.voters() if settings.result == MAJORITY else [0]
    return {m: pooled_evidence(walked.outcomes[m]) for m in voters}


def universe_records(
    views: Sequence[InstrumentView],
    uris: Sequence[str],
    folds: Sequence[UniverseFold],
    walked: Walked,
    seeds: list[int],
    history: dict[str, tuple[np.ndarray, np.ndarray]],
    out_uri: str,
    settings: RunConfig,
    run: dict,
    progress: Progress,
    metrics: RunMetrics,
    held_out: Callable[[Mapping[str, RunEvaluation], Mapping[str, float]], dict] | None = None,
    pictures: bool = False,
) -> UniverseResult:
    """Each instrument's stitched record and the book's, written, printed and told to `metrics`; `held_out`
    (given the stitched evaluations and the book's weights: the held-out period's); with `pictures`, theirs
    (`universe_pictures`); then summary.json, with `run`'s device and load seconds and the seconds since
    `run["started"]` (`time.perf_counter`)."""
    left_out = diverged_seeds(walked, seeds)  # no stitched record: named in the spreads, not dropped
    if len(seeds) > 1 and left_out:
        named = ", ".join(f"seed {s} ({why})" for s, why in sorted(left_out.items()))
        progress(f"{len(left_out)} of {len(seeds)} seeds left out of the seeds' spreads: {named}")
    instruments, evaluations, results = _stitch_instruments(
        views, uris, folds, walked, seeds, left_out, out_uri, progress, settings.result == MAJORITY
    )
    for name, evaluation in results.items():
        metrics.stitched_scored(stitched_figures(evaluation.stitched), name)
    summary = {
        "status": "completed",
        "device": run["device"],
        "data_load_seconds": run["data_load_seconds"],
        "folds": len(folds),
        "instruments": instruments,
        "run_config": json.loads(strict_json.json_bytes(asdict(settings))),
    }
    if run.get("n_step_choice") is not None:
        summary["n_step_choice"] = run["n_step_choice"]
    series = {name: stitched_series(e) for name, e in results.items()}
    book = None
    if series:
        summary["book"], book = write_book(
            evaluations, history, seeds, left_out, settings, out_uri, progress, metrics
        )
    if pictures:
        write_universe_pictures(out_uri, views, walked, results, series, book, progress)
    if book is not None and held_out is not None:
        summary["holdout"] = held_out(results, summary["book"]["weights"])
    summary["run_seconds"] = time.perf_counter() - run["started"]  # all but this file's write
    storage.write_bytes(storage.join(out_uri, SUMMARY), strict_json.json_bytes(summary))
    return UniverseResult(summary, series)


def _walk(
    data: DeviceData,
    views: Sequence[InstrumentView],
    folds: Sequence[UniverseFold],
    max_rows: int,
    seeds: list[int],
    out_uri: str,
    settings: RunConfig,
    progress: Progress,
    metrics: RunMetrics,
    ledger: UniverseLedger,
    check: Callable[[], None],
    *,
    compiled_beside: str,
) -> tuple[DQNTrainer, Walked]:
    """One trainer over the universe's folds, through the one walk over folds (`walk.walk_folds`) with a
    universe fold as its step, the folds `ledger` holds taken over and each trained one recorded in it
    (`universe_resume.universe_hooks`), `check` at the folds' and epochs' boundaries. The trainer (the
    held-out fold trains on it next) and the walk. The compiled step is kept beside the fxcache
    `compiled_beside` (the first), keyed by the universe's rows."""
    trainer = compile_cache.build_with_cache(
        lambda: DQNTrainer(
            data,
            settings.dqn if len(seeds) == 1 else [settings.dqn] * len(seeds),
            max_train_rows=max_rows,
            seed=settings.seed,
            member_seeds=seeds,
            eval_cost=settings.eval.cost,
            eval_spread=settings.eval.spread,
            execution=universe_execution(views),
        ),
        compile_cache.for_run(
            settings.compile_cache, compiled_beside, settings.dqn, data, max_rows, len(seeds), progress
        ),
        progress,
    )  # fmt: skip
    ledger.start()
    return trainer, walk_folds(
        trainer,
        folds,
        {m: out_uri for m in range(len(seeds))},
        settings.epochs,
        None,
        hooks=universe_hooks(ledger, views, metrics, progress, check),
        step=universe_step(trainer, views, out_uri, settings, progress, check=check),
    )


def _stitch_instruments(
    views: Sequence[InstrumentView],
    uris: Sequence[str],
    folds: Sequence[UniverseFold],
    walked: Walked,
    seeds: list[int],
    left_out: dict[int, str],
    out_uri: str,
    progress: Progress,
    majority: bool = False,
) -> tuple[list[dict], dict[int, dict[str, RunEvaluation]], dict[str, RunEvaluation]]:
    """Each instrument's stitched record over the folds it took part in (the first seed's; with `majority`,
    the vote of the seeds that hold every instrument's, where three or more do), written under its folder;
    its summary entry (with several seeds, their spread, naming the seeds `left_out` of it: seed → why);
    per member, its stitched evaluation of each instrument it walked to the end; per instrument, the
    record written (the run's result)."""
    evaluations = member_evaluations(views, folds, walked, len(seeds))
    voters = [m for m, ev in evaluations.items() if ev.keys() == evaluations[0].keys()]
    vote = majority and len(voters) >= MIN_SEEDS_FOR_MAJORITY
    instruments, results = [], {}
    for i, (view, uri) in enumerate(zip(views, uris, strict=True)):
        outcomes = instrument_outcomes(walked, 0, i)
        entry: dict = {
            "name": view.name,
            "fxcache": uri,
            "rows": len(view.data.timestamp),
            "folds": sorted(outcomes),
        }
        if outcomes:
            evaluation = results[view.name] = (
                stitch_majority(view.data, local_folds(folds, i),
                                [instrument_outcomes(walked, m, i) for m in voters], view.scoring, view.memo)
                if vote else evaluations[0][view.name]
            )  # fmt: skip
            folder = instrument_folder(out_uri, view.name)
            stitched = strict_json.json_bytes(window_to_dict(evaluation.stitched))
            storage.write_bytes(storage.join(folder, STITCHED), stitched)
            storage.write_bytes(storage.join(folder, SERIES), _series_bytes(stitched_series(evaluation)))
            net = evaluation.stitched.policies[MODEL].net
            entry["stitched_net_sharpe"] = net.sharpe
            whose = f" (majority of {len(voters)} seeds)" if vote else ""
            progress(f"{view.name}: stitched net Sharpe {net.sharpe:.2f}{whose} over {len(outcomes)} folds")
            if len(seeds) > 1:
                nets = {seeds[m]: ev[view.name].stitched.policies[MODEL].net for m, ev in evaluations.items()
                        if view.name in ev}  # fmt: skip
                entry["seed_spread"] = seed_spread(nets, {s: left_out[s] for s in seeds if s not in nets})
        instruments.append(entry)
    return instruments, evaluations, results
