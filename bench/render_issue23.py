"""Write issue 23's table ("Speed of the whole run") into bench/README.md from the benchmarks' JSON files.

    python bench/render_issue23.py --perf results/perf_targets-….json --real results/real_shape-….json \
        --scoring results/fold_scoring-….json --population results/population_gpu-….json \
        --trials results/trials_gpu-….json --pipeline results/pipeline_cpu-….json [--print]

One row per target of the issue: the figure the issue measured, the newest measured figure, the target,
the verdict and the file it came from. A file not given leaves its rows "not measured". The block sits
between two markers; the rest of the README is kept. Figures are never typed by hand.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

BEGIN, END = "<!-- issue23:begin -->", "<!-- issue23:end -->"
README = Path(__file__).resolve().parent / "README.md"
# (key, what, the figure, target, unit, higher is better)
ROWS = (
    (
        "plan_wall",
        "the plan's shape, 3 folds × 50 epochs, wall, compile cache present",
        53.6,
        25.0,
        "s",
        False,
    ),
    ("plan_first", "the same, first run ever (empty caches)", 65.9, 40.0, "s", False),
    ("real_wall", "the real-data shape (EURUSD, 21 default folds × 50 epochs), wall", 55.8, 12.0, "s", False),
    ("fold_validation", "validation + scoring of one fold, 185k validation bars", 1.1, 0.1, "s", False),
    ("epoch", "epoch at 4.37M training rows", 0.148, 0.10, "s", False),
    ("population", "population aggregate gradient samples/s, best P", 85.4e6, 200e6, "samples/s", True),
    ("trials_ratio", "trials/h, `--population 8` against one at a time, median pruner", 0.95, 1.5, "×", True),
    ("pipeline_cpu", "`foxhunt pipeline` on 2 CPU cores, wall", None, 30.0, "s", False),
)


def _load(path: str | None) -> tuple[dict | None, str]:
    return (json.loads(Path(path).read_text()), Path(path).name) if path else (None, "")


def measured(files: dict[str, str | None]) -> dict[str, tuple[float, str, str]]:
    """Per row key: (figure, how it was taken, source file), from whichever files are given."""
    out: dict[str, tuple[float, str, str]] = {}
    perf, name = _load(files.get("perf"))
    if perf:
        out["plan_wall"] = (
            perf["targets"]["run_seconds"]["measured"],
            _cold_runs(perf.get("cold_runs", [])),
            name,
        )
        out["epoch"] = (
            perf["targets"]["epoch_seconds"]["measured"],
            "median epoch of the biggest fold",
            name,
        )
        first = perf.get("first_ever") or {}
        if first.get("wall_seconds") is not None:
            out["plan_first"] = (first["wall_seconds"], "one first-ever process", name)
    real, name = _load(files.get("real"))
    if real:
        summary = real["cold_runs"]["1"]["summary"]
        out["real_wall"] = (summary["wall_seconds"], f"median of {summary['runs']} cold processes", name)
        out["fold_validation_real"] = (
            summary["validate_seconds_median"],
            "median fold of the real shape",
            name,
        )
    scoring, name = _load(files.get("scoring"))
    if scoring:
        fold = scoring["seconds"]["fold"]
        out["fold_validation"] = (
            fold["warm_seconds"],
            f"warm median; cold {fold['cold_seconds']:.3g} s",
            name,
        )
    population, name = _load(files.get("population"))
    if population:
        best = max(population["trainers"], key=lambda t: t["step"]["samples_per_second"])
        how = f"P = {best['size']} ({best['step']['speedup_vs_lone']:.2f}× the lone trainer's P × samples)"
        out["population"] = (best["step"]["samples_per_second"], how, name)
    trials, name = _load(files.get("trials"))
    if trials and "8" in trials.get("populations", {}):
        ratio = trials["populations"]["8"]["trials_per_hour_vs_first"]
        out["trials_ratio"] = (ratio, "one `foxhunt train --trials 20` process each way", name)
    pipeline, name = _load(files.get("pipeline"))
    if pipeline:
        how = f"median of {pipeline['repeats']} cold processes, `taskset -c 0,1`"
        out["pipeline_cpu"] = (pipeline["medians"]["wall_seconds"], how, name)
    return out


def _cold_runs(runs: list[dict]) -> str:
    done = [r for r in runs if r.get("status") == "succeeded"]
    return f"median of {len(done)} cold processes"


def _figure(value: float | None, unit: str) -> str:
    if value is None:
        return "unmeasured"
    if unit == "samples/s":
        return f"{value / 1e6:.1f}M"
    if unit == "×":
        return f"{value:.2f}×"
    return f"{value:.3g} s"


def table(found: dict[str, tuple[float, str, str]]) -> str:
    """The markdown block: the issue's rows, each with its newest figure and verdict."""
    lines = [
        "| figure | issue's | measured | target | verdict | how, file |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for key, what, before, target, unit, higher in ROWS:
        if key not in found:
            lines.append(
                f"| {what} | {_figure(before, unit)} | not measured | {_figure(target, unit)} | — | |"
            )
            continue
        value, how, source = found[key]
        met = value >= target if higher else value <= target
        verdict = "met" if met else "**not met**"
        row = f"| {what} | {_figure(before, unit)} | {_figure(value, unit)} | {_figure(target, unit)} | {verdict} "
        lines.append(row + f"| {how}; `{source}` |")
    if "fold_validation_real" in found:
        value, how, source = found["fold_validation_real"]
        lines.append(
            f"\nOne fold's validation at the real-data shape ({how}): {_figure(value, 's')} (`{source}`)."
        )
    return "\n".join(lines)


def render(readme: str, block: str) -> str:
    """`readme` with the text between the markers replaced by `block`."""
    if BEGIN not in readme or END not in readme:
        raise SystemExit(f"{README}: the markers {BEGIN} … {END} are missing")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{block}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("perf", "real", "scoring", "population", "trials", "pipeline"):
        p.add_argument(f"--{name}", default=None, help=f"the {name} benchmark's JSON")
    p.add_argument("--readme", default=str(README))
    p.add_argument("--print", action="store_true", help="show the block, change nothing")
    args = p.parse_args(argv)
    files = {k: getattr(args, k) for k in ("perf", "real", "scoring", "population", "trials", "pipeline")}
    block = table(measured(files))
    if args.print:
        print(block)
        return 0
    path = Path(args.readme)
    path.write_text(render(path.read_text(), block))
    print(f"wrote the issue 23 table into {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
