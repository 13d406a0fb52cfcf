"""The tool's power: the smallest planted edge foxhunt finds, and how often it trades noise (issue 34, item 3).

    python bench/power.py run [--shapes two-years plan] [--drifts 1 0.5 0.25 0.125] [--noise signal-off random-walk]
                              [--seeds 3] [--noise-seeds 10] [--variants base= "expanding=--window expanding"]
                              [--work DIR] [--resume] [--out FILE]
    python bench/power.py run --instruments 1 4 16 [--drifts 0.25] [--noise signal-off] [--seeds 3] …
    python bench/power.py merge A.json B.json … [--out FILE]
    CPU check: run --shapes two-years --drifts 1 --noise random-walk --seeds 2 --noise-seeds 2 --epochs 1
               --device cpu --two-years-bars 20000 --two-years-folds "--train-days 8 --val-days 3 --step-days 3"

run (H200): per shape and data set the generated sample bars (`generate_sample_bars`, generator seed
`--generator-seed`) become an fxcache ONCE (kept in `--work`, reused by a later call with the same work
folder), then ONE fresh `foxhunt train --seeds K` process per variant at the shipped defaults and `--epochs`.
Shapes: `two-years` is two calendar years of weekday minute bars (753,120) at the default folds; `plan` the
plan's 4.7M bars in its 3 expanding folds (bench/speed.py). Data: `drift-M` plants M × SAMPLE_NEWS_DRIFT
(1× = 0.3 bp a bar for 60 bars after a news bar); `signal-off` is the sample without drift (same noise,
news jumps and volume); `random-walk` is a Gaussian random walk of the sample's per-bar volatility
(news_rate 0, drift 0, sigma σ·√(1 + rate·jump²)) on the same calendar. A variant is `NAME=FLAGS`: extra
`foxhunt train` flags (spaces or commas between them), where `dqn.KEY=VALUE` sets one DQN setting (through
`--hyperopt-params`), e.g. `expanding=--window,expanding` or `gate15=dqn.select_min_t=1.5`; `base=` is none.
Naming only one of `--drifts` and `--noise` selects only it (the other none); naming neither, all of both;
a flag with nothing after it, none of that kind.
From summary.json and the folds' report.json: each seed's stitched net Sharpe with its interval, exposure,
turnover, folds that traded, its share of the feature oracle (seed Sharpe over the oracle's), flat's and
buy-and-hold's; over every seed's folds, what the kept policies earned out of sample, traded or not
(`decisions_in_short`: an edge the gate held back, or none). `--instruments K …`: the universe rows instead (issue 35; bench/power_universe.py): per
data set K generated instruments at two years, one `foxhunt train --fxcache … --seeds S` per K, the book's
figures and each instrument's (CPU check: the one above with `--instruments 1 2 --noise signal-off`).
`--resume` (with a `--work` that outlives the call, e.g. the git-ignored `runs/` on a warm device machine): a
row whose run a call's time limit cut (at the limit a run is sent SIGTERM and stops at its next epoch, its
completed folds kept) resumes after its last completed fold in the next call, and a finished one is read as
it is; the row's wall is then only this call's part. The targets (`targets` block, per row; `evaluate`) are
issue 34's. merge: several of these
JSONs (e.g. one per device call) into one table and one `targets` block; a row whose seeds were split over
calls (`--seeds 1 --first-seed S`, e.g. K = 16, one seed a call) becomes one row over all of them.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import harness as h
import power_universe as pu
from learner import ORACLE_LABEL, decisions_in_short, fold_decisions, run_figures, seed_sides
from power_data import (  # noqa: F401  (the data sets and variants: power.generate, power.parse_variant, …)
    NOISE,
    data_sets,
    drift_name,
    drift_of,
    fmt,
    generate,
    parse_variant,
    random_walk_sigma,
    run_tag,
    variant_flags,
    votes_cell,
)
from speed import PLAN_BARS, fold_flags, plan_folds

SHAPES = ("two-years", "plan")
DRIFTS = (1.0, 0.5, 0.25, 0.125)
TWO_YEAR_BARS = 523 * 1440  # weekdays of 2024-01-01 → 2026-01-01 (the generator's calendar) × minutes
# Issue 34's targets: the worst seed's share of the feature oracle, per (shape, drift)
SHARE_TARGETS = {("two-years", 1.0): 0.8, ("two-years", 0.5): 0.8, ("two-years", 0.25): 0.5,
                 ("plan", 1.0): 0.9, ("plan", 0.5): 0.9, ("plan", 0.25): 0.9}  # fmt: skip
FALSE_POSITIVE_RATE = 0.1  # noise: seeds above flat outside their interval, at most 1 in 10


def prepare(work: Path, shape: str, data: str, bars: int, seed: int) -> tuple[Path, dict]:
    """The data set's fxcache in `work`, built unless one from the same bars is there; (path, what it took)."""
    from foxhunt.data.features import compute_features
    from foxhunt.data.fxcache import fxcache_matches, read_fxcache, write_fxcache

    path = work / f"{shape}-{data}-g{seed}.arrow"
    started = time.perf_counter()
    generated = generate(data, bars, seed)
    hit = fxcache_matches(str(path), generated.content_hash) is not None
    if not hit:
        table = compute_features(generated)
        write_fxcache(str(path), table, source_uri=generated.source, source_hash=generated.content_hash)
    seconds = time.perf_counter() - started
    timestamp = read_fxcache(str(path)).timestamp
    info = {"shape": shape, "data": data, "generator_seed": seed, "bars": bars, "rows": len(timestamp),
            "cache_hit": hit, "generate_and_precompute_seconds": seconds, "fxcache": path.name}  # fmt: skip
    print(f"{shape} {data}: {bars:,} bars → {len(timestamp):,} rows, {'cached' if hit else 'built'} in "
          f"{seconds:.1f}s", flush=True)  # fmt: skip
    return path, {**info, "timestamp": timestamp}


def shape_flags(shape: str, timestamp, args: argparse.Namespace) -> list[str]:
    """The fold flags of a shape: two years at the defaults (or `--two-years-folds`), the plan's folds."""
    return fold_flags(plan_folds(timestamp)) if shape == "plan" else shlex.split(args.two_years_folds)


def train(
    args: argparse.Namespace, work: Path, fxcache: Path, flags: list[str], spec: str, seeds: int
) -> dict:
    """One fresh `foxhunt train --seeds K` process (with `--resume`, the one an earlier call left, resumed or
    read); its run figures, or its error."""
    variant, extra, dqn = variant_flags(work, spec)
    tag = run_tag(f"{fxcache.stem}-{variant}", args.first_seed)
    out = work / f"run-{tag}"
    command = h.foxhunt(
        "train", "--fxcache", str(fxcache), "--out", str(out), "--epochs", str(args.epochs),
        "--seed", str(args.first_seed), "--seeds", str(seeds), "--device", args.device, "--log-format", "text",
        "--compile-cache", str(work / "compile-cache"), *flags, *extra,
    )  # fmt: skip
    if h.kept_run(out, args.resume):
        done = h.READ_AS_IT_WAS | h.summary_figures(json.loads((out / "summary.json").read_text()))
    else:
        pod = work / f"pod-{tag}"
        done = h.resumed_run(out, args.resume) | h.fresh_run(
            command, pod, args.run_timeout, out / "summary.json"
        )
    row = {"variant": variant, "flags": [*flags, *extra], "dqn": dqn, "seeds_asked": seeds, **done}
    if done["exit_code"] == 0 and (out / "summary.json").exists():
        row.update(row_figures(json.loads((out / "summary.json").read_text()), out))
    elif done.get("error_tail"):
        print(done["error_tail"][-1500:], flush=True)
    return row


def share(sharpe: float, oracle: dict | None) -> float | None:
    """A seed's share of the feature oracle: its Sharpe over the oracle's (none when the oracle has no edge)."""
    if not oracle or oracle["sharpe"] <= 0.0:
        return None
    return sharpe / oracle["sharpe"]


def row_figures(summary: dict, out: Path) -> dict:
    """A run's figures: per seed Sharpe, interval, exposure, share of the oracle, folds traded; the spreads."""
    figures = run_figures(summary)
    oracle = figures["feature_oracle"]
    if oracle:
        oracle["label"] = ORACLE_LABEL
    decisions = fold_decisions(summary, out)  # seed 0's reports in `out`, the others' in seed_S/
    for seed, f in figures["seeds"].items():
        f["share_of_oracle"] = share(f["sharpe"], oracle)
        kept = decisions.get(seed)
        f["folds_traded"] = None if kept is None else sum(d["traded"] for d in kept)
        f["folds"] = len(summary["folds"])
    return {**figures, **seed_summary(figures), "decisions_in_short": decisions_in_short(decisions)}


def seed_summary(figures: dict) -> dict:
    """What a row says of its seeds together: their Sharpe's spread, their shares', which lie above or below
    flat (and above buy-and-hold) outside their interval; from each seed's figures, so pooled rows agree."""
    seeds, oracle = figures["seeds"], figures["feature_oracle"]
    sharpes = h.spread(f["sharpe"] for f in seeds.values())
    shares = [f["share_of_oracle"] for f in seeds.values()]
    return {"sharpe": sharpes, "min": sharpes["min"], "max": sharpes["max"],
            "share": h.spread(shares) if None not in shares else None,
            "seeds_above_flat": [s for s, f in seeds.items() if f["ci"][0] > 0.0],
            "oracle_above_flat": bool(oracle and oracle["ci"][0] > 0.0), **seed_sides(seeds, figures["buy_and_hold"])}  # fmt: skip


def pool_seeds(rows: list[dict], key, pool) -> list[dict]:
    """Rows of one data set and variant from several calls (`--first-seed`) as one row over all their seeds,
    in the order of their first part; `pool(parts)` joins a group."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((key(row), row.get("generator_seed")), []).append(row)
    return [parts[0] if len(parts) == 1 else pool(parts) for parts in groups.values()]


def pool_row(parts: list[dict]) -> dict:
    """One-instrument rows of the same data from several calls: one row over their seeds."""
    done = [p for p in parts if p.get("seeds")]
    if len(done) < len(parts):
        return {**parts[0], "seeds": None, "pooled_from": [p.get("source") for p in parts]}
    row = {
        **done[0],
        "seeds": pu.joined_seeds(done, lambda p: p["seeds"]),
        "wall_seconds": sum(p.get("wall_seconds") or 0.0 for p in done),
        "pooled_from": [p.get("source") for p in done],
        # Each call's seeds voted apart (`--first-seed`): no vote of them all, but every call's vote.
        "majority": None,
        "votes": [p["majority"] for p in done if p.get("majority")],
    }  # fmt: skip
    return {**row, **seed_summary(row)}


def _key(row: dict) -> str:
    return f"{row['shape']}_{row['data']}" + ("" if row["variant"] == "base" else f"_{row['variant']}")


def row_targets(row: dict) -> dict:
    """Issue 34's targets of one row: the worst seed's share of the oracle and every seed above flat
    (where the oracle is, two years) on a drift; no seed below flat and at most 1 in 10 above on noise."""
    key, seeds = _key(row), row.get("seeds")
    n = len(seeds) if seeds else row.get("seeds_asked", 0)
    if row["data"] in NOISE:
        below = len(row["seeds_below_flat"]) if seeds else None
        above = len(row["seeds_above_flat"]) / n if seeds else None
        return {f"{key}_seeds_below_flat": h.target(below, 0, how=f"seeds of {n} below flat outside their interval"),
                f"{key}_false_positive_rate": h.target(above, FALSE_POSITIVE_RATE,
                                                       how=f"seeds of {n} above flat outside their interval")}  # fmt: skip
    targets = {}
    goal = SHARE_TARGETS.get((row["shape"], drift_of(row["data"])))
    if goal is not None:
        worst = row["share"]["min"] if seeds and row.get("share") else None
        targets[f"{key}_worst_seed_share_of_oracle"] = h.target(
            worst,
            goal,
            higher=True,
            how=f"the worst of {n} seeds' stitched net Sharpe over the {ORACLE_LABEL}'s",
        )
    if row["shape"] == "two-years" and seeds and row["oracle_above_flat"]:
        targets[f"{key}_seeds_above_flat"] = h.target(
            len(row["seeds_above_flat"]), n, higher=True,
            how="seeds above flat outside their interval (the feature oracle's interval is above flat)",
        )  # fmt: skip
    return targets


def evaluate(rows: list[dict]) -> dict:
    """Every row's targets, and per variant the false-positive rate pooled over its noise rows."""
    targets: dict = {}
    pooled: dict[str, list[int]] = {}
    for row in rows:
        targets.update(row_targets(row))
        if row["data"] in NOISE and row.get("seeds"):
            counts = pooled.setdefault(row["variant"], [0, 0])
            counts[0] += len(row["seeds_above_flat"])
            counts[1] += len(row["seeds"])
    for variant, (above, n) in pooled.items():
        key = "noise_false_positive_rate" + ("" if variant == "base" else f"_{variant}")
        targets[key] = h.target(above / n, FALSE_POSITIVE_RATE,
                                how=f"{above} of {n} seeds over every noise row above flat outside their interval")  # fmt: skip
    return targets


def table(rows: list[dict]) -> list[str]:
    """The rows as issue 34's table: data, feature oracle, the seeds' stitched net Sharpe, share, folds."""
    lines = [f"| shape | data | variant | {ORACLE_LABEL} | DQN stitched net Sharpe, median [min, max] over seeds "
             "| share of the oracle, median (worst) | folds that trade, per seed | exposure, median "
             "| the seeds' majority: net Sharpe (share), one per call |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in rows:
        head = f"| {row['shape']} | {row['data']} | {row['variant']} |"
        if not row.get("seeds"):
            lines.append(f"{head} — | run failed (exit {row.get('exit_code')}) | — | — | — | — |")
            continue
        oracle = row["feature_oracle"]
        shown = f"{fmt(oracle['sharpe'])} ({oracle['name']})" if oracle else "—"
        s, sh = row["sharpe"], row.get("share")
        shares = f"{fmt(sh['median'], True)} ({fmt(sh['min'], True)})" if sh else "—"
        seeds = row["seeds"].values()
        total = max(f["folds"] for f in seeds)
        traded = ", ".join("?" if f["folds_traded"] is None else str(f["folds_traded"]) for f in seeds)
        exposure = h.spread(f["exposure"] for f in seeds)["median"]
        lines.append(f"{head} {shown} | {fmt(s['median'])} [{fmt(s['min'])}, {fmt(s['max'])}] | {shares} "
                     f"| {traded} of {total} | {fmt(exposure, True)} | {votes_cell(row)} |")  # fmt: skip
    return lines


def all_targets(rows: list[dict], universe_rows: list[dict]) -> dict:
    """Issue 34's targets of the one-instrument rows and issue 35's of the universe rows."""
    return {**evaluate(rows), **{k: t for row in universe_rows for k, t in pu.universe_targets(row).items()}}


def measure(args: argparse.Namespace, work: Path, record: dict) -> None:
    """Per shape and data set one fxcache, per variant one `foxhunt train --seeds K`; written as each ends.
    With `--instruments`, the universe rows instead (`measure_universe`)."""
    record.update(oracle_label=ORACLE_LABEL, data_sets=[], rows=[])
    if args.instruments:
        pu.measure_universe(args, work, record)
        return
    for shape in args.shapes:
        bars = args.two_years_bars if shape == "two-years" else args.plan_bars
        for data, generator_seed, seeds in data_sets(args):
            fxcache, info = prepare(work, shape, data, bars, generator_seed)
            flags = shape_flags(shape, info.pop("timestamp"), args)
            record["data_sets"].append(info)
            for spec in args.variants:
                row = {"shape": shape, "data": data, "drift": drift_of(data), "generator_seed": generator_seed,
                       **train(args, work, fxcache, flags, spec, seeds)}  # fmt: skip
                record["rows"].append(row)
                record["targets"] = evaluate(record["rows"])
                print(table([row])[-1], f"wall {row['wall_seconds']:.1f}s", flush=True)
                h.write(record, args.out)
    print("\n".join(table(record["rows"])), flush=True)


def merge(paths: list[Path], out: str | None) -> int:
    """Several power JSONs into one: their rows (each with its file, commit, device, date), one table, the
    targets over all rows; the record's commit and device where every file agrees, else 'mixed'."""
    records = [json.loads(p.read_text()) for p in paths]
    rows, universe = ([{**row, "source": {"file": p.name, **{k: r.get(k) for k in ("commit", "device", "date")}}}
                       for p, r in zip(paths, records, strict=True) for row in r.get(part, [])]
                      for part in ("rows", "universe_rows"))  # fmt: skip
    rows = pool_seeds(rows, _key, pool_row)
    universe = pool_seeds(universe, pu.universe_key, pu.pool_universe_row)
    agreed = {k: ({r.get(k) for r in records} | {None}) - {None} for k in ("commit", "device", "device_type")}
    record = {**{k: records[-1][k] for k in ("benchmark", "torch", "python", "host")},
              **{k: next(iter(v)) if len(v) == 1 else "mixed" for k, v in agreed.items()},
              "dirty": any(r.get("dirty") for r in records), "date": max(r["date"] for r in records),
              "merged_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "merged_from":
              [{"file": p.name, **{k: r.get(k) for k in ("commit", "device", "date")}} for p, r in zip(paths, records, strict=True)],
              "oracle_label": ORACLE_LABEL, "data_sets": [d for r in records for d in r.get("data_sets", [])],
              "rows": rows, "universe_rows": universe, "targets": all_targets(rows, universe)}  # fmt: skip
    print("\n".join(table(rows) + pu.universe_table(universe)), flush=True)
    h.write(record, out, label="merged")
    for key, t in record["targets"].items():
        print(f"{key}: {t['measured']} (target {t['target']:g}: {'met' if t['met'] else 'NOT met'})")
    return 1 if any(t["measured"] is None for t in record["targets"].values()) else 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    h.common_args(r, repeats=1)
    r.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=SHAPES)
    r.add_argument("--drifts", nargs="*", type=float, default=None,
                   help=f"multiples of the planted drift (default {list(DRIFTS)} unless only --noise is named)")  # fmt: skip
    r.add_argument("--noise", nargs="*", default=None, choices=NOISE,
                   help=f"noise sets (default {list(NOISE)} unless only --drifts is named)")  # fmt: skip
    r.add_argument("--seeds", type=int, default=3, help="training seeds of a drift's run (--seeds K)")
    r.add_argument("--noise-seeds", type=int, default=10, help="training seeds of a noise run")
    r.add_argument("--first-seed", type=int, default=0,
                   help="the runs' first training seed (--seed): a row's seeds split over calls, joined by merge")  # fmt: skip
    r.add_argument("--generator-seed", type=int, default=0, help="the drifts' generator seed")
    r.add_argument(
        "--noise-generator-seeds", nargs="+", type=int, default=[0], help="one noise data set each"
    )
    r.add_argument(
        "--variants", nargs="+", default=["base="], help="NAME=FLAGS; dqn.KEY=VALUE sets a setting"
    )
    r.add_argument("--instruments", nargs="*", type=int, default=[],
                   help="universe rows instead: K sample instruments at two years, one run per K (e.g. 1 4 16)")  # fmt: skip
    r.add_argument("--epochs", type=int, default=50)
    r.add_argument("--two-years-bars", type=int, default=TWO_YEAR_BARS)
    r.add_argument("--plan-bars", type=int, default=PLAN_BARS)
    r.add_argument("--two-years-folds", default="", help="fold flags of two-years (CPU check; default: none)")
    r.add_argument("--resume", action="store_true",
                   help="keep a row's run in --work: one a call's time limit cut resumes after its last "
                        "completed fold, a finished one is read as it is (default: every row a fresh run)")  # fmt: skip
    m = sub.add_parser("merge")
    m.add_argument("files", nargs="+", type=Path)
    m.add_argument("--out", default=None)
    return selection_defaults(p.parse_args(argv))


def selection_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """All drifts and noise sets when neither flag is named; only the named kind when one is (so a drift-only
    call does not run the noise sets after its drifts)."""
    if args.command != "run":
        return args
    if args.drifts is None and args.noise is None:
        args.drifts, args.noise = list(DRIFTS), list(NOISE)
    args.drifts = [] if args.drifts is None else args.drifts
    args.noise = [] if args.noise is None else args.noise
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the selection, or merge files; exit 1 when a target went unmeasured (a run failed)."""
    args = parse_args(argv)
    if args.command == "merge":
        return merge(args.files, args.out)
    return h.run_benchmark("power", args, measure, args.device)


if __name__ == "__main__":
    sys.exit(main())
