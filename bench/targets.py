"""Every tracked figure against its target, in one JSON and one table, from the benchmarks' own JSON files.

    python bench/targets.py FILE.json … [--out targets.json] [--readme bench/README.md] [--print]
    python bench/targets.py --newest [--print]          (each row from the newest file in bench/results giving it)

One row per target of issue 36 (and the learner's, the data side's): the figure measured, the target, the
verdict, how it was taken and the file it came from. A file written by the harness carries a `targets` block
and is read from it; the files of the benchmarks retired in issue 33 (`perf_targets`, `population_gpu`,
`trials_gpu`, `real_shape` and `pipeline_cpu` of the older layout) are read as they were written. A row no file
gives is "not measured". `--out` writes one JSON: the rows, each with its file and commit; its own `commit`
when every row was measured at the same one. `--readme` replaces the table between the markers.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
BEGIN, END = "<!-- targets:begin -->", "<!-- targets:end -->"
# numbered repeats of one measurement (cold processes), read as one row of their median
REPEAT = re.compile(r"^(?P<stem>.+)-(?P<number>\d{1,2})\.json$")
# (key in a record's `targets` block, what it is, unit, the target where the older files give none)
ROWS = (
    (
        "plan_cached_wall_seconds",
        "the plan's shape, 3 folds × 50 epochs, signed compile cache present, wall",
        "s",
    ),
    ("plan_first_wall_seconds", "the same, first run ever (empty caches)", "s"),
    ("real_wall_seconds", "the real-data shape (21 default folds × 50 epochs), wall", "s"),
    ("seeds_wall_ratio", "`--seeds 3` at the plan's shape against one seed, wall", "×"),
    ("fold_scoring_warm_seconds", "one fold's validation and scoring, 185k bars (warm)", "s"),
    ("lone_step_seconds", "the lone trainer's step", "ms"),
    ("population_samples_per_second", "populations, aggregate gradient samples/s, best P", "samples/s"),
    ("trials_per_hour_ratio", "trials/h, `--population 8` against one at a time", "×"),
    ("search_64_trials_wall_seconds", "a 64-trial search, real-data shape, P = 8, wall", "s"),
    ("pipeline_wall_seconds", "default `foxhunt pipeline`, 2 CPU cores, wall", "s"),
    (
        "control_worst_seed_share_of_oracle",
        "positive control: the worst seed's share of the feature oracle",
        "×",
    ),
    (
        "control_seeds_above_flat_and_buy_and_hold",
        "positive control: seeds above flat and buy-and-hold",
        "seeds",
    ),
    ("noharm_sample-off_seeds_below_flat", "do no harm, signal off: seeds below flat", "seeds"),
    (
        "universe_wall_ratio",
        "8 instruments × two years, 21 folds × 50 epochs, against one instrument, wall",
        "×",
    ),
    ("universe_load_seconds", "the same: loading all 8, files in the page cache", "s"),
    ("universe_memory_estimate_instruments_gib", "the memory estimate for 32 instruments (one H200)", "GiB"),
    (
        "universe_k8_drift-0.25_worst_seed_book_share_of_oracle",
        "8 instruments at ¼× drift: the worst seed's book over the book's feature oracle",
        "×",
    ),
    ("universe_k8_drift-0.25_book_seeds_above_flat", "the same: seeds whose book lies above flat", "seeds"),
    (
        "universe_k8_signal-off_book_seeds_below_flat",
        "8 instruments, signal off: seeds whose book lies below flat",
        "seeds",
    ),
    ("plain_eurusd_seeds_below_flat", "real bars, EURUSD 2018–19, no overlay: seeds below flat", "seeds"),
    ("plain_yndx_seeds_below_flat", "real bars, YNDX 2015–16, no overlay: seeds below flat", "seeds"),
    (
        "overlay_eurusd_1x_share_of_oracle",
        "EURUSD with the sample's news overlaid at 1×: the median seed's share of the feature oracle",
        "×",
    ),
    ("overlay_yndx_1x_share_of_oracle", "YNDX, the same", "×"),
    ("features_bars_per_second", "precompute: features on one core", "bars/s"),
    ("fxcache_round_trip_seconds", "precompute: fxcache write + read, 4M rows", "s"),
)
LEGACY_TARGETS = {"plan_cached_wall_seconds": 25.0, "plan_first_wall_seconds": 35.0, "real_wall_seconds": 12.0,
                  "lone_step_seconds": 0.2e-3, "population_samples_per_second": 200e6,
                  "trials_per_hour_ratio": 1.5, "pipeline_wall_seconds": 30.0}  # fmt: skip


def _entry(key: str, measured: float | None, how: str) -> dict:
    """A targets-block entry for an older file's figure, against issue 36's target."""
    goal = LEGACY_TARGETS[key]
    higher = key in ("population_samples_per_second", "trials_per_hour_ratio")
    met = measured is not None and (measured >= goal if higher else measured <= goal)
    return {"measured": measured, "target": goal, "met": met, "higher_is_better": higher, "how": how}


def legacy(record: dict, name: str) -> dict:
    """The targets an older benchmark's JSON gives, read as it was written."""
    if name.startswith("perf_targets"):
        runs = [r for r in record.get("cold_runs", []) if r.get("status") == "succeeded"]
        first = (record.get("first_ever") or {}).get("wall_seconds")
        return {"plan_cached_wall_seconds": _entry("plan_cached_wall_seconds",
                                                   record["targets"]["run_seconds"]["measured"],
                                                   f"median of {len(runs)} cold processes"),
                "plan_first_wall_seconds": _entry("plan_first_wall_seconds", first, "one first-ever process")}  # fmt: skip
    if name.startswith("real_shape"):
        s = record["cold_runs"]["1"]["summary"]
        return {
            "real_wall_seconds": _entry(
                "real_wall_seconds", s["wall_seconds"], f"median of {s['runs']} cold processes"
            )
        }
    if name.startswith("population_gpu"):
        lone = next(t for t in record["trainers"] if t["kind"] == "lone")
        best = max(record["trainers"], key=lambda t: t["step"]["samples_per_second"])
        how = f"P = {best['size']} ({best['step']['speedup_vs_lone']:.2f}× the lone trainer)"
        return {"lone_step_seconds": _entry("lone_step_seconds", lone["step"]["seconds_per_step_median"], "warm median"),
                "population_samples_per_second": _entry("population_samples_per_second",
                                                        best["step"]["samples_per_second"], how)}  # fmt: skip
    if name.startswith("trials_gpu") and "8" in record.get("populations", {}):
        ratio = record["populations"]["8"]["trials_per_hour_vs_first"]
        pruner = record.get("shape", {}).get("pruner", "median")
        return {"trials_per_hour_ratio": _entry("trials_per_hour_ratio", ratio,
                                                f"one `foxhunt train --trials` process each way, pruner {pruner}")}  # fmt: skip
    if name.startswith("pipeline_cpu"):
        how = f"median of {record['repeats']} cold processes, `taskset -c {record['cores']}`"
        return {
            "pipeline_wall_seconds": _entry("pipeline_wall_seconds", record["medians"]["wall_seconds"], how)
        }
    return {}


def _groups(paths: list[Path]) -> list[list[Path]]:
    """The paths in order, numbered repeats of one stem (`NAME-1.json`, `NAME-2.json` …) as one group at its last."""
    groups: dict[str, list[Path]] = {}
    for path in paths:
        repeat = REPEAT.match(path.name)
        key = repeat["stem"] if repeat else f"{path.name}\0{len(groups)}"
        groups.setdefault(key, []).append(path)
    return sorted(groups.values(), key=lambda group: max(paths.index(p) for p in group))


def _entries(path: Path) -> tuple[dict, dict]:
    """A file's row entries (its `targets` block, or an older file's as written) and its record."""
    record = json.loads(path.read_text())
    return (record.get("targets") if "host" in record else legacy(record, path.name)) or {}, record


def _median_entry(entries: list[dict]) -> dict:
    """One entry for repeats of a figure: the median measured, judged against the target again."""
    values = sorted(e["measured"] for e in entries)
    mid = len(values) // 2
    median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    first = entries[0]
    met = median >= first["target"] if first["higher_is_better"] else median <= first["target"]
    spread = ", ".join(f"{v:.4g}" for v in values)
    return {**first, "measured": median, "met": met,
            "how": f"{first['how']}; median of {len(values)} processes ({spread})"}  # fmt: skip


def gathered(paths: list[Path]) -> dict[str, dict]:
    """Per row key, the entry of the last file (or numbered repeats) given that has it, with its source."""
    found: dict[str, dict] = {}
    for group in _groups(paths):
        read = [_entries(path) for path in group]
        record = read[-1][1]
        numbers = ",".join(REPEAT.match(path.name)["number"] for path in group) if len(group) > 1 else ""
        name = f"{REPEAT.match(group[0].name)['stem']}-{{{numbers}}}.json" if numbers else group[0].name
        source = {"file": name, "commit": record.get("commit"), "device": record.get("device"),
                  "date": record.get("date")}  # fmt: skip
        for key in {key for entries, _ in read for key in entries}:
            given = [entries[key] for entries, _ in read if entries.get(key, {}).get("measured") is not None]
            entry = _median_entry(given) if len(given) > 1 else read[-1][0][key]
            found[key] = {**entry, **source}
    return found


def _figure(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit in ("samples/s", "bars/s"):
        return f"{value / 1e6:.1f}M"
    if unit == "GiB":
        return f"{value:.1f} GiB"
    if unit == "ms":
        return f"{value * 1e3:.3g} ms"
    if unit in ("×", "seeds"):
        return f"{value:.2f}×" if unit == "×" else f"{value:g}"
    return f"{value:.3g} s"


def table(found: dict[str, dict]) -> str:
    """The markdown table: every row, its figure and verdict, or "not measured"."""
    lines = ["| figure | measured | target | verdict | how, file |", "| --- | --- | --- | --- | --- |"]
    for key, what, unit in ROWS:
        entry = found.get(key)
        if entry is None:
            lines.append(f"| {what} | not measured | | — | |")
            continue
        target = ("≥ " if entry["higher_is_better"] else "≤ ") + _figure(entry["target"], unit)
        verdict = "met" if entry["met"] else "**not met**"
        how = f"{entry['how']}; {entry['device']}, `{entry['file']}`"
        lines.append(f"| {what} | {_figure(entry['measured'], unit)} | {target} | {verdict} | {how} |")
    return "\n".join(lines)


def combined(found: dict[str, dict]) -> dict:
    """One JSON of every row; its `commit` is the rows' one commit, or None when they were measured at several."""
    commits = sorted({e["commit"] for e in found.values()})
    return {"benchmark": "targets", "commit": commits[0] if len(commits) == 1 else None, "commits": commits,
            "targets": found}  # fmt: skip


def render(readme: str, block: str) -> str:
    """`readme` with the text between the markers replaced by `block`."""
    if BEGIN not in readme or END not in readme:
        raise SystemExit(f"the markers {BEGIN} … {END} are missing")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{block}\n{END}{tail}"


def newest_files(folder: Path = RESULTS) -> list[Path]:
    """Every dated JSON in `folder` but a before-and-after pair's before side and a run at a setting other than
    the shipped default (`-at-` in its name), oldest first: each row then comes from the newest file giving it."""
    dated = []
    for path in folder.glob("*.json"):
        record = json.loads(path.read_text())
        if record.get("date") and "-before" not in path.name and "-at-" not in path.name:
            dated.append((str(record["date"]), path.name, path))
    return [path for _, _, path in sorted(dated)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*", type=Path, help="benchmark JSON files; a later one wins a row")
    p.add_argument(
        "--newest", action="store_true", help="each row from the newest file in bench/results that gives it"
    )
    p.add_argument("--out", type=Path, default=None, help="the one targets JSON to write")
    p.add_argument("--readme", type=Path, default=None, help="a README whose marked table to replace")
    p.add_argument("--print", action="store_true", help="show the table")
    args = p.parse_args(argv)
    found = gathered([*(newest_files() if args.newest else []), *args.files])
    block = table(found)
    if args.print or not (args.out or args.readme):
        print(block)
    if args.out:
        report = combined(found)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.out}" + ("" if report["commit"] else f" (rows measured at {report['commits']})"))
    if args.readme:
        args.readme.write_text(render(args.readme.read_text(), block))
        print(f"wrote the targets table into {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
