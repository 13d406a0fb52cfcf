"""speed.py universe: K instruments in one run against one instrument (issue 35's speed targets).

    python bench/speed.py universe [--instruments 8] [--bars 753120] [--epochs 50] [--repeats 3]
                                   [--steps-per-epoch 0|one|N] [--estimate-instruments 32]
                                   [--train-flags "…"]
    CPU check: universe --instruments 2 --bars 20000 --epochs 1 --repeats 1 --device cpu
               --train-flags "--train-days 8 --val-days 3 --step-days 3"

`--bars` defaults to two calendar years (753,120 weekday minutes, 752,820 rows: the issue's "700k bars" at
its 21 default folds; 700,000 bars make 19). `generate_universe(K, bars)` (the sample, fx calendar, each
instrument its own seed) becomes K fxcaches once (kept in `--work`); instrument 0 alone is the one-instrument
side. Then `--repeats` pairs of fresh cold processes, alternated (a drift in the machine's speed falls on
both): `foxhunt train --fxcache fx00` and `foxhunt train --fxcache fx00 … --fxcache fxK-1`, each on a fresh
pod (empty Inductor, Triton and CUDA caches), the same `--compile-cache` (default off: neither side loads a
compiled step; `auto` gives both the signed cache, the universe's beside its first fxcache), the default folds (21 at two years) unless
`--train-flags` says otherwise. The files are read into the page cache before each run (their residency is
recorded): the universe's load is its console line `loaded K instruments, R rows onto DEVICE in Xs` (from
reading the fxcaches to the arrays on the device: checks, fold plan, memory estimate and copy), the one
instrument's is summary.json's `data_load_seconds`.
Steps: by default an epoch is ceil(learning rows / batch) steps, so K instruments make about K times one's;
`--steps-per-epoch one` fixes every epoch of both sides at one instrument's mean over its folds of
ceil(learning rows / batch) (`--hyperopt-params` with the DQN setting `steps_per_epoch`), N fixes it at N.
The memory estimate for `--estimate-instruments` (32) is `train/memory_estimate.needed_bytes` with the
arguments the universe run passes it (every instrument's rows, the largest fold's training rows summed over
the instruments, the run's DQN settings, CUDA's chunk), from the K fxcaches' calendars cycled (every sample
instrument trades the same weekday minutes), computed here before any run allocates; it fits one H200 when it
is within the run's headroom (0.9) of 139 GiB.
Targets: the median universe wall ≤ 2.5× the median one-instrument wall; the median load ≤ 2 s; 32 fit.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
from pathlib import Path

import harness as h
from page_cache import resident_fraction

UNIVERSE_BARS = 523 * 1440  # two calendar years of weekday minutes (power.py's TWO_YEAR_BARS): 21 folds
H200_BYTES = 139 * 2**30
TARGETS = {"universe_wall_ratio": 2.5, "universe_load_seconds": 2.0}
LOADED = re.compile(r"loaded (\d+) instruments, ([0-9,]+) rows onto \S+ in ([0-9.]+)s")


def universe_fxcaches(work: Path, k: int, bars: int) -> list[Path]:
    """The K sample instruments' fxcaches under `work` (each built unless one from the same bars is there)."""
    from foxhunt.data.features import compute_features
    from foxhunt.data.fxcache import fxcache_matches, write_fxcache
    from foxhunt.data.sample_universe import generate_universe

    folder = work / f"universe-{bars}"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, generated in generate_universe(k, bars, 0):
        path = folder / f"{name}.arrow"  # the stem is the instrument's name in the run
        if fxcache_matches(str(path), generated.content_hash) is None:
            table = compute_features(generated)
            write_fxcache(str(path), table, source_uri=generated.source, source_hash=generated.content_hash)
        paths.append(path)
    return paths


def warm(paths: list[Path]) -> list[float | None]:
    """Read every file once so it sits in the page cache; each file's resident share after."""
    for path in paths:
        with open(path, "rb") as handle:
            while handle.read(1 << 24):
                pass
    return [resident_fraction(p) for p in paths]


def load_seconds(console: str) -> float | None:
    """The universe run's load from its console line `loaded K instruments, R rows onto D in Xs`."""
    found = LOADED.search(console)
    return float(found.group(3)) if found else None


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, None when either is missing or the denominator is not positive."""
    if numerator is None or denominator is None or denominator <= 0.0:
        return None
    return numerator / denominator


def wall_ratio(one_runs: list[dict], many_runs: list[dict], k: int) -> dict:
    """The median universe wall over the median one-instrument wall (succeeded runs only), against 2.5×."""
    one = h.spread(r["wall_seconds"] for r in h.succeeded(one_runs))["median"]
    many = h.spread(r["wall_seconds"] for r in h.succeeded(many_runs))["median"]
    pairs = min(len(h.succeeded(one_runs)), len(h.succeeded(many_runs)))
    return h.target(ratio(many, one), TARGETS["universe_wall_ratio"],
                    how=f"median wall of {k} instruments over one's, {pairs} cold process(es) each, fresh pods")  # fmt: skip


def run_settings(work: Path, flags: list[str]):
    """The RunConfig `foxhunt train` makes of `flags` (its own parser), for the folds and DQN settings."""
    from foxhunt.cli.commands import run_config
    from foxhunt.cli.parser import build_parser

    return run_config(
        build_parser().parse_args(["train", "--fxcache", "x", "--out", str(work / "x"), *flags])
    )


def one_instrument_steps(timestamp, settings) -> int:
    """One instrument's mean over its folds of ceil(learning rows / batch): its training rows less the tail
    held back for the selection (about: the trainer rounds the tail its own way)."""
    from foxhunt.data.folds import generate_walk_forward_indices

    dqn = settings.dqn
    steps = [math.ceil(round(f.train_rows * (1.0 - dqn.select_tail_share)) / dqn.batch_size)
             for f in generate_walk_forward_indices(timestamp, settings.folds)]  # fmt: skip
    return max(1, round(sum(steps) / len(steps)))


def memory_estimate(timestamps: list, k: int, n_features: int, settings) -> dict:
    """The universe run's memory estimate for `k` instruments (module docstring) and whether it fits one
    H200: within the run's headroom of 139 GiB."""
    import torch

    from foxhunt.data.universe import universe_folds
    from foxhunt.train.device_data import chunk_rows
    from foxhunt.train.memory_estimate import HEADROOM, needed_bytes

    stamps = [timestamps[i % len(timestamps)] for i in range(k)]
    folds = universe_folds(stamps, settings.folds)
    max_rows = max(sum(r.train_rows for r in f.ranges if r is not None) for f in folds)
    rows = sum(len(t) for t in stamps)
    shares = needed_bytes(rows, n_features, max_rows, settings.dqn, 1, chunk_rows(torch.device("cuda")))
    total = sum(shares.values())
    return {"instruments": k, "rows": rows, "max_train_rows": max_rows, "shares_bytes": shares,
            "bytes": total, "gib": total / 2**30, "fits_139_gib": total <= H200_BYTES,
            "fits_139_gib_with_headroom": total <= HEADROOM * H200_BYTES, "headroom": HEADROOM}  # fmt: skip


def _params(work: Path, args: argparse.Namespace, timestamp, flags: list[str]) -> tuple[list[str], int]:
    """The `--hyperopt-params` flags fixing steps_per_epoch (none for 0), and the steps."""
    if args.steps_per_epoch in ("0", ""):
        return [], 0
    steps = (one_instrument_steps(timestamp, run_settings(work, flags)) if args.steps_per_epoch == "one"
             else int(args.steps_per_epoch))  # fmt: skip
    params = work / "steps.json"
    params.write_text(json.dumps({"dqn": {"steps_per_epoch": steps}}))
    return ["--hyperopt-params", str(params)], steps


def one_run(args: argparse.Namespace, work: Path, caches: list[Path], flags: list[str], tag: str) -> dict:
    """One fresh cold `foxhunt train` over `caches`, the files in the page cache first."""
    out = work / f"run-{tag}"
    shutil.rmtree(out, ignore_errors=True)  # a fresh run, never a resume of an earlier call's
    command = h.foxhunt(
        "train", *[a for c in caches for a in ("--fxcache", str(c))], "--out", str(out), "--epochs",
        str(args.epochs), "--seed", "0", "--device", args.device, "--log-format", "text",
        "--compile-cache", args.compile_cache, *flags,
    )  # fmt: skip
    resident = warm(caches)
    single = len(caches) == 1  # a universe's summary.json has no phases for harness.summary_figures
    done = h.fresh_run(
        command, work / f"pod-{tag}", args.run_timeout, out / "summary.json" if single else None
    )
    done.update(instruments=len(caches), resident=resident)
    console = (work / f"pod-{tag}" / "console.log").read_text()
    if not single:
        done["data_load_seconds"] = load_seconds(console)
        if done["exit_code"] == 0:
            done.pop("error_tail", None)
    if done.get("error_tail"):
        print(done["error_tail"][-1500:], flush=True)
    return done


def train_flags(args: argparse.Namespace) -> list[str]:
    """`--train-flags` as tokens (`harness.flag_tokens`: commas as spaces, for gpu_run.sh's UNIVERSE_ARGS)."""
    return h.flag_tokens(args.train_flags)


def universe(args: argparse.Namespace, work: Path, record: dict) -> None:
    """K instruments against one: alternated cold runs, the load, the 32-instrument memory estimate."""
    from foxhunt.data.fxcache import read_fxcache
    from foxhunt.data.universe import universe_folds

    caches = universe_fxcaches(work, args.instruments, args.bars)
    first = read_fxcache(str(caches[0]))
    stamps = [first.timestamp, *(read_fxcache(str(c)).timestamp for c in caches[1:])]
    steps_flags, steps = _params(work, args, first.timestamp, train_flags(args))
    flags = [*train_flags(args), *steps_flags]
    settings = run_settings(work, flags)
    estimate = memory_estimate(stamps, args.estimate_instruments, first.features.shape[1], settings)
    print(f"memory estimate, {args.estimate_instruments} instruments: {estimate['gib']:.1f} GiB "
          f"(fits one H200 with headroom: {estimate['fits_139_gib_with_headroom']})", flush=True)  # fmt: skip
    record.update(shape={"instruments": args.instruments, "bars": args.bars, "rows": [len(t) for t in stamps],
                         "folds": len(universe_folds(stamps[:1], settings.folds)),
                         "steps_per_epoch": steps or "ceil(learning rows / batch)", "flags": flags},
                  memory_estimate=estimate, one=[], universe=[])  # fmt: skip
    targets = record["targets"]
    targets["universe_memory_estimate_instruments_gib"] = h.target(
        estimate["gib"], estimate["headroom"] * H200_BYTES / 2**30,
        how=f"memory_estimate.needed_bytes for {args.estimate_instruments} instruments of {args.bars:,} bars "
        "against 0.9 × 139 GiB (the run's headroom on an idle H200)")  # fmt: skip
    for i in range(args.repeats):  # alternated, so a drift in the machine's speed falls on both
        for side, chosen in (("one", caches[:1]), ("universe", caches)):
            run = one_run(args, work, chosen, flags, f"{side}-{i}")
            record[side].append(run)
            print(f"{side} {i + 1}/{args.repeats}: exit {run['exit_code']}, wall {run['wall_seconds']:.1f}s, "
                  f"load {run.get('data_load_seconds')}", flush=True)  # fmt: skip
        record["medians"] = {
            s: h.medians(record[s], ("wall_seconds", "data_load_seconds")) for s in ("one", "universe")
        }
        targets["universe_wall_ratio"] = wall_ratio(record["one"], record["universe"], args.instruments)
        load = record["medians"]["universe"]["data_load_seconds"]
        targets["universe_load_seconds"] = h.target(
            load["median"], TARGETS["universe_load_seconds"],
            how=f"median of {load['n']} runs' load of {args.instruments} instruments, files in the page cache")  # fmt: skip
        h.write(record, args.out)


def add_args(p: argparse.ArgumentParser) -> None:
    """The universe benchmark's flags."""
    p.add_argument("--instruments", type=int, default=8, help="K instruments of the universe side")
    p.add_argument("--bars", type=int, default=UNIVERSE_BARS, help="generated bars per instrument")
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--steps-per-epoch", default="0", help="0: ceil(rows / batch); one: one instrument's; N")
    p.add_argument("--estimate-instruments", type=int, default=32, help="instruments of the memory estimate")
    p.add_argument("--compile-cache", default="off", help="both sides' --compile-cache")
    p.add_argument("--train-flags", default="", help="more `foxhunt train` flags for both sides, one string")
