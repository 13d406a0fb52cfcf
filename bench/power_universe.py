"""The power table's universe rows (issue 35, item 4): K sample instruments at two years, one run per K.

`bench/power.py run --instruments 1 4 16 …` calls `prepare_universe` once per data set (the largest K's
instruments, each its own fxcache in `--work`, reused by a later call) and one fresh
`foxhunt train --fxcache A --fxcache B … --seeds S` per K over the first K of them. Instrument i is
`generate_universe`'s (instrument 0 is power.py's one-instrument sample, fx calendar, own seed each).
From the run's files: the BOOK's stitched net Sharpe with its interval, per seed where the seeds' spread is
there, flat's and buy-and-hold's, `book.feature_oracle` when the run writes one (else null), each seed's
share of it; and each instrument's stitched net Sharpe, seeds and feature oracle (its stitched.json's best
of the four supervised baselines). K = 1 is a plain one-fxcache run, its one instrument its book.
Targets (issue 35): 8 instruments at ¼× drift, every seed's book ≥ 80% of the book's oracle and above flat
outside its interval; signal off, no seed's book below flat outside its interval.
"""

from __future__ import annotations

import argparse
import json
import shlex
import time
from pathlib import Path

import harness as h
from learner import ORACLE_NAMES, run_figures
from power_data import data_sets, drift_of, fmt, planted_settings, run_tag, variant_flags, votes_cell

# Issue 35's target: the worst seed's book over the book's feature oracle, per (instruments, drift)
BOOK_SHARE_TARGETS = {(8, 0.25): 0.8}


def prepare_universe(
    work: Path, data: str, k: int, bars: int, seed: int, planted: dict
) -> tuple[list[Path], dict]:
    """`k` instruments of one data set as fxcaches under `work` (each built unless one from the same bars
    is there); (paths, what it took)."""
    from foxhunt.data.features import compute_features
    from foxhunt.data.fxcache import fxcache_matches, write_fxcache
    from foxhunt.data.sample_universe import generate_universe

    folder = work / f"universe-{data}-g{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    paths, built = [], 0
    for name, generated in generate_universe(k, bars, seed, **planted):
        path = folder / f"{name}.arrow"  # the file's stem is the instrument's name in the run
        if fxcache_matches(str(path), generated.content_hash) is None:
            table = compute_features(generated)
            write_fxcache(str(path), table, source_uri=generated.source, source_hash=generated.content_hash)
            built += 1
        paths.append(path)
    seconds = time.perf_counter() - started
    print(f"universe {data}: {k} instruments of {bars:,} bars, {built} built in {seconds:.1f}s", flush=True)
    info = {"data": data, "generator_seed": seed, "instruments": k, "bars": bars, "built": built,
            "generate_and_precompute_seconds": seconds, "folder": folder.name}  # fmt: skip
    return paths, info


def oracle_of(value) -> dict | None:
    """The book's feature oracle as {name, sharpe, ci}: from a number, or a dict holding `sharpe` (or its
    `net`'s, or `stitched_net_sharpe`); None when the run wrote none."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return {"name": None, "sharpe": float(value), "ci": None}
    net = value.get("net") if isinstance(value.get("net"), dict) else value
    sharpe = net.get("sharpe", value.get("stitched_net_sharpe"))
    ci = value.get("ci") or (
        [net["sharpe_ci_low"], net["sharpe_ci_high"]] if "sharpe_ci_low" in net else None
    )
    return None if sharpe is None else {"name": value.get("name"), "sharpe": float(sharpe), "ci": ci}


def shares(seeds: dict, oracle: dict | None) -> dict | None:
    """Each seed's Sharpe over the oracle's, with their spread; None without an oracle with an edge."""
    if not oracle or oracle["sharpe"] <= 0.0:
        return None
    each = {s: f["sharpe"] / oracle["sharpe"] for s, f in seeds.items()}
    return {"seeds": each, **h.spread(each.values())}


def _seed_figures(net: dict) -> dict:
    return {"sharpe": net["sharpe"], "ci": [net["sharpe_ci_low"], net["sharpe_ci_high"]],
            "exposure": net.get("exposure"), "turnover_per_year": net.get("turnover_per_year")}  # fmt: skip


def _side(seeds: dict) -> dict:
    return {"seeds_above_flat": [s for s, f in seeds.items() if f["ci"][0] > 0.0],
            "seeds_below_flat": [s for s, f in seeds.items() if f["ci"][1] < 0.0]}  # fmt: skip


def stitched_oracle(policies: dict) -> dict | None:
    """The best of the supervised baselines in a stitched window's policies (net), as {name, sharpe, ci}."""
    named = [n for n in ORACLE_NAMES if n in policies]
    if not named:
        return None
    best = max(named, key=lambda n: policies[n]["net"]["sharpe"])
    net = policies[best]["net"]
    return {"name": best, "sharpe": net["sharpe"], "ci": [net["sharpe_ci_low"], net["sharpe_ci_high"]]}


def book_figures(summary: dict) -> dict:
    """The book of a universe run's summary.json: its stitched net Sharpe and interval, each seed's (the
    seeds' spread, else the one), flat's, buy-and-hold's, the book's feature oracle and each seed's share."""
    book = summary["book"]
    policies = book["window"]["policies"]
    net = policies["model"]["net"]
    spread = book.get("seed_spread")
    seeds = spread["figures"] if spread else {str(summary.get("seed", 0)): _seed_figures(net)}
    oracle = oracle_of(book.get("feature_oracle"))
    return {"sharpe": net["sharpe"], "ci": [net["sharpe_ci_low"], net["sharpe_ci_high"]], "seeds": seeds,
            "flat": policies["flat"]["net"]["sharpe"], "buy_and_hold": policies["buy_and_hold"]["net"]["sharpe"],
            "feature_oracle": oracle, "share": shares(seeds, oracle), **_side(seeds),
            "majority": majority_share((spread or {}).get("majority"), oracle)}  # fmt: skip


def majority_share(majority: dict | None, oracle: dict | None) -> dict | None:
    """The seeds' majority (summary.json's, K ≥ 3) with its share of the oracle (None against no edge)."""
    if majority is None:
        return None
    edge = oracle is not None and oracle["sharpe"] > 0
    return {**majority, "share_of_oracle": majority["sharpe"] / oracle["sharpe"] if edge else None}


def single_book(summary: dict) -> dict:
    """K = 1: the one instrument's stitched record is the book (the plain run writes no book)."""
    figures = run_figures(summary)
    net = summary["stitched"]["policies"]["model"]["net"]
    oracle = figures["feature_oracle"]
    return {"sharpe": net["sharpe"], "ci": [net["sharpe_ci_low"], net["sharpe_ci_high"]],
            "seeds": figures["seeds"], "flat": figures["flat"], "buy_and_hold": figures["buy_and_hold"],
            "feature_oracle": oracle, "share": shares(figures["seeds"], oracle), **_side(figures["seeds"])}  # fmt: skip


def instrument_figures(summary: dict, out: Path) -> dict:
    """Each instrument of a universe run: its stitched net Sharpe, seeds, feature oracle and shares."""
    found = {}
    for entry in summary["instruments"]:
        stitched = out / "instruments" / entry["name"] / "stitched.json"
        oracle = stitched_oracle(json.loads(stitched.read_text())["policies"]) if stitched.exists() else None
        spread = entry.get("seed_spread")
        only = {str(summary.get("seed", 0)): {"sharpe": entry.get("stitched_net_sharpe")}}
        seeds = spread["figures"] if spread else only
        done = entry.get("stitched_net_sharpe") is not None
        found[entry["name"]] = {"sharpe": entry.get("stitched_net_sharpe"), "folds": len(entry["folds"]),
                                "seeds": seeds, "feature_oracle": oracle,
                                "share": shares(seeds, oracle) if done else None}  # fmt: skip
    return found


def universe_row_figures(summary: dict, out: Path, k: int) -> dict:
    """A universe row's figures: the book's and each instrument's."""
    if k == 1:
        return {"book": single_book(summary), "per_instrument": {}}
    return {"book": book_figures(summary), "per_instrument": instrument_figures(summary, out)}


def joined_seeds(parts: list[dict], seeds_of) -> dict:
    """The seeds of a row's parts in one mapping; SystemExit when two parts ran the same seed."""
    joined: dict = {}
    for part in parts:
        for seed, figures in seeds_of(part).items():
            if seed in joined:
                where = (part.get("source") or {}).get("file", "a part")
                raise SystemExit(f"power merge: seed {seed} of one row is in two files (again in {where}): "
                                 "merge files that ran different seeds (--first-seed)")  # fmt: skip
            joined[seed] = figures
    return joined


def pool_universe_row(parts: list[dict]) -> dict:
    """Universe rows of one K and data set from several calls (`--first-seed`): one row over their seeds,
    the book's and each instrument's (their shares and sides taken again over all of them)."""
    done = [p for p in parts if p.get("book")]
    sources = [p.get("source") for p in done]
    if len(done) < len(parts):
        return {**parts[0], "book": None, "pooled_from": [p.get("source") for p in parts]}
    book = {**done[0]["book"], "seeds": joined_seeds(done, lambda p: p["book"]["seeds"]), "majority": None,
            "votes": [p["book"]["majority"] for p in done if p["book"].get("majority")]}  # fmt: skip
    book.update(share=shares(book["seeds"], book["feature_oracle"]), **_side(book["seeds"]))
    instruments = {}
    for name, first in done[0]["per_instrument"].items():
        seeds = joined_seeds(done, lambda p, name=name: p["per_instrument"][name]["seeds"])
        done_here = first["sharpe"] is not None
        instruments[name] = {**first, "seeds": seeds,
                             "share": shares(seeds, first["feature_oracle"]) if done_here else None}  # fmt: skip
    return {**done[0], "book": book, "per_instrument": instruments, "pooled_from": sources,
            "wall_seconds": sum(p.get("wall_seconds") or 0.0 for p in done)}  # fmt: skip


def universe_key(row: dict) -> str:
    """The row's key in the targets block: universe_k8_drift-0.25[_variant]."""
    tail = "" if row["variant"] == "base" else f"_{row['variant']}"
    return f"universe_k{row['instruments']}_{row['data']}{tail}"


def universe_targets(row: dict) -> dict:
    """Issue 35's targets of one universe row: on a drift with a target, the worst seed's book over the
    book's oracle and every seed's book above flat outside its interval; without drift, no seed's book
    below flat outside it. Unmeasured (None) when the run failed or wrote no oracle."""
    key, book = universe_key(row), row.get("book")
    n = len(book["seeds"]) if book else row.get("seeds_asked", 0)
    if row["drift"] is None:
        below = len(book["seeds_below_flat"]) if book else None
        return {f"{key}_book_seeds_below_flat": h.target(below, 0, how=f"seeds of {n} whose book lies below "
                                                         "flat outside its interval")}  # fmt: skip
    goal = BOOK_SHARE_TARGETS.get((row["instruments"], row["drift"]))
    if goal is None:
        return {}
    worst = book["share"]["min"] if book and book.get("share") else None
    above = len(book["seeds_above_flat"]) if book else None
    return {
        f"{key}_worst_seed_book_share_of_oracle": h.target(
            worst, goal, higher=True, how=f"the worst of {n} seeds' book stitched net Sharpe over the book's "
            "feature oracle (summary.json book.feature_oracle)"),
        f"{key}_book_seeds_above_flat": h.target(above, n, higher=True,
                                                 how=f"seeds of {n} whose book lies above flat outside its interval"),
    }  # fmt: skip


def universe_table(rows: list[dict]) -> list[str]:
    """The universe rows: K, data, the book's oracle, the seeds' book Sharpe, share, the instruments'."""
    lines = ["| instruments | data | variant | book's feature oracle | book stitched net Sharpe per seed "
             "| share of the oracle, median (worst) | instruments' stitched net Sharpe, median [min, max] "
             "| the seeds' majority's book: net Sharpe (share), one per call |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in rows:
        head = f"| {row['instruments']} | {row['data']} | {row['variant']} |"
        book = row.get("book")
        if not book:
            lines.append(f"{head} — | run failed (exit {row.get('exit_code')}) | — | — | — |")
            continue
        oracle = book["feature_oracle"]
        seeds = ", ".join(
            f"{fmt(f['sharpe'])} [{fmt(f['ci'][0])}, {fmt(f['ci'][1])}]" for f in book["seeds"].values()
        )
        sh = book.get("share")
        share_text = f"{fmt(sh['median'], True)} ({fmt(sh['min'], True)})" if sh else "—"
        each = h.spread(f["sharpe"] for f in row["per_instrument"].values())
        inst = f"{fmt(each['median'])} [{fmt(each['min'])}, {fmt(each['max'])}]" if each["n"] else "—"
        lines.append(
            f"{head} {fmt(oracle['sharpe']) if oracle else 'null'} | {seeds} | {share_text} | {inst} | {votes_cell(book)} |"
        )
    return lines


def universe_command(
    args, work: Path, fxcaches: list[Path], flags: list[str], tag: str, seeds: int
) -> tuple[list[str], Path]:
    """One fresh `foxhunt train --fxcache … --seeds S` over the universe, at `--epochs`; (command, out)."""
    out = work / f"run-{tag}"
    caches = [a for path in fxcaches for a in ("--fxcache", str(path))]
    command = h.foxhunt(
        "train", *caches, "--out", str(out), "--epochs", str(args.epochs), "--seed", str(args.first_seed),
        "--seeds", str(seeds),
        "--device", args.device, "--log-format", "text", *flags,
    )  # fmt: skip
    return command, out


def universe_train(args: argparse.Namespace, work: Path, fxcaches: list[Path], spec: str, seeds: int) -> dict:
    """One fresh `foxhunt train --fxcache … --seeds S` over the first K instruments (with `--resume`, the one
    an earlier call left, resumed or read); the book's figures and each instrument's, or its error."""
    variant, extra, dqn = variant_flags(work, spec)
    k = len(fxcaches)
    tag = run_tag(f"k{k}-{fxcaches[0].parent.name}-{variant}", args.first_seed)
    flags = [*shlex.split(args.two_years_folds), *extra]
    command, out = universe_command(args, work, fxcaches, flags, tag, seeds)
    if h.kept_run(out, args.resume):
        done = dict(h.READ_AS_IT_WAS)  # its figures are read from its files below
    else:
        done = h.resumed_run(out, args.resume) | h.fresh_run(command, work / f"pod-{tag}", args.run_timeout)
    row = {"instruments": k, "variant": variant, "flags": flags, "dqn": dqn, "seeds_asked": seeds, **done}
    summary = out / "summary.json"
    if done["exit_code"] == 0 and summary.exists():
        row.pop(
            "error_tail", None
        )  # no summary handed to fresh_run: its tail is the console, kept in the pod
        figures = json.loads(summary.read_text())
        row.update({key: figures.get(key) for key in ("run_seconds", "data_load_seconds")})
        row.update(universe_row_figures(figures, out, k))
    elif done.get("error_tail"):
        print(done["error_tail"][-1500:], flush=True)
    return row


def measure_universe(args: argparse.Namespace, work: Path, record: dict) -> None:
    """Per data set the largest K's instruments (one fxcache each), per K and variant one universe run of
    the first K at two years; written as each ends."""
    record.update(universe_rows=[], universe_data_sets=[])
    for data, generator_seed, seeds in data_sets(args):
        fxcaches, info = prepare_universe(work, data, max(args.instruments), args.two_years_bars,
                                             generator_seed, planted_settings(data))  # fmt: skip
        record["universe_data_sets"].append(info)
        for k in args.instruments:
            for spec in args.variants:
                row = {"data": data, "drift": drift_of(data), "generator_seed": generator_seed,
                       **universe_train(args, work, fxcaches[:k], spec, seeds)}  # fmt: skip
                record["universe_rows"].append(row)
                record["targets"] = {
                    k: t for r in record["universe_rows"] for k, t in universe_targets(r).items()
                }
                print(universe_table([row])[-1], f"wall {row['wall_seconds']:.1f}s", flush=True)
                h.write(record, args.out)
    print("\n".join(universe_table(record["universe_rows"])), flush=True)
