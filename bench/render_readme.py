"""Write the "Latest figures against the targets" block of bench/README.md from a perf_targets.py JSON.

    python bench/render_readme.py bench/results/perf_targets-h200-DATE-COMMIT.json [--readme bench/README.md]
    python bench/render_readme.py RESULT.json --print      (show the block, change nothing)

The block sits between two markers under the section's heading; everything else in the README is
kept as it is. The figures are never typed by hand: a new GPU run, then this script.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

BEGIN, END = "<!-- perf-targets:begin -->", "<!-- perf-targets:end -->"
HEADING = "## Latest figures against the targets"
README = Path(__file__).resolve().parent / "README.md"
LABELS = {
    "epoch_seconds": "epoch ≤ {target:g} s at ≈4M training rows",
    "run_seconds": "cold `foxhunt train`, 3 folds × {epochs} epochs, ≤ {target:g} s wall",
    "transition_seconds": "every fold transition ≤ {ms:g} ms, the first included",
    "load_seconds": "fxcache → device ≤ {target:g} s, file not in the page cache",
}


def _seconds(value: float | None) -> str:
    if value is None:
        return "not measured"
    return f"{value * 1e3:.1f} ms" if value < 0.1 else f"{value:.3g} s"


def _median_of(runs: list[dict], key: str) -> float | None:
    values = sorted(r[key] for r in runs if r.get(key) is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _share(fraction: float | None) -> str:
    return "unknown share" if fraction is None else f"{fraction:.0%}"


def _compile_cache(runs: list[dict]) -> str:
    """Whether the cold runs found the compiled step beside the fxcache."""
    lines = [r["compile_cache"] for r in runs]
    if not any(lines):
        return "no compile cache (CPU, or compile off)"
    loaded = all(any(line.startswith("compile cache: loaded") for line in run) for run in lines)
    return (
        "compile cache loaded from beside the fxcache" if loaded else "compile cache NOT loaded in every run"
    )


def _details(report: dict) -> dict[str, str]:
    """What stands beside each measured figure: its parts and where it came from."""
    cold = [r for r in report.get("cold_runs", []) if r.get("status") == "succeeded"]
    details = dict.fromkeys(LABELS, "")
    if cold:
        per_fold = " / ".join(_seconds(f["epoch_seconds_median"]) for f in cold[0]["folds"])
        rows = max(f["train_rows"] for f in cold[0]["folds"])
        details["epoch_seconds"] = (
            f"median epoch of the biggest fold ({rows:,} rows); per fold {per_fold}; "
            f"all folds {_seconds(_median_of(cold, 'epoch_seconds_all_folds'))}"
        )
        details["run_seconds"] = (
            f"median of {len(cold)} cold processes; run_seconds {_seconds(_median_of(cold, 'run_seconds'))}, "
            f"trainer build {_seconds(_median_of(cold, 'build_seconds'))}; {_compile_cache(cold)}"
        )
        first = [f["transition_seconds"] for r in cold for f in r["folds"] if f["fold"] == 0]
        details["transition_seconds"] = f"worst fold, median over runs; first fold {_seconds(first[0])}"
    load = report.get("load", {})
    if load.get("cold"):
        c = load["cold"][0]
        details["load_seconds"] = (
            f"{load['bytes'] / 2**20:.0f} MiB on {load['filesystem']}; evicted by {c['method']} "
            f"({_share(c['resident_after'])} still resident); alone: read + validate {_seconds(c['read_seconds'])}, "
            f"upload {_seconds(c['upload_seconds'])}; page-cached: {_seconds(load['warm']['seconds'])}"
        )
    return details


def _variants(report: dict) -> list[str]:
    matrix = report.get("variants")
    if not matrix:
        return []
    lines = [
        "",
        f"Step switches one at a time (biggest fold, {matrix['fold_train_rows']:,} rows, medians; "
        f"the base: the shipped defaults at batch {matrix['base']['batch_size']}):",
        "",
        "| variant | epoch | step | collect | build (compile + capture) | last loss |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, v in matrix["variants"].items():
        if "epoch_seconds" not in v:
            lines.append(f"| {name} | {v.get('error') or v.get('skipped')} | | | | |")
            continue
        lines.append(
            f"| {name} | {_seconds(v['epoch_seconds'])} | {v['step_seconds'] * 1e6:.0f} µs | "
            f"{_seconds(v['collect_seconds'])} | {_seconds(v['build_seconds'])} | {v['last_loss']:.4g} |"
        )
    lines += ["", f"Choice: {matrix['choice']} ({matrix['why']})."]
    return lines


def render(report: dict, source: str) -> str:
    """The README block for one perf_targets.py result."""
    shape, settings = report["shape"], report.get("settings", {})
    folds = ", ".join(f"{f['train_rows']:,}" for f in shape["folds"])
    dqn = (
        "the shipped defaults" if settings.get("shipped_defaults") else f"`{json.dumps(settings.get('dqn'))}`"
    )
    lines = [
        f"Generated by `bench/render_readme.py` from `{source}`; do not edit by hand.",
        f"{report['device']}, torch {report['torch']}, commit `{report['commit']}`, {report['date']}; "
        f"cold: {str(report['cold']).lower()} (each `foxhunt train` a fresh process with empty node-local "
        "compile caches, the fxcache evicted from the page cache).",
        f"{shape['bars']:,} generated bars ({shape['rows']:,} rows); {len(shape['folds'])} expanding folds with "
        f"{folds} training rows; batch {shape['batch_size']}; epochs per fold {shape['epochs']}; DQN settings: {dqn}.",
        "",
        "| target | measured | verdict | how |",
        "| --- | --- | --- | --- |",
    ]
    details = _details(report)
    for name, t in report["targets"].items():
        label = LABELS[name].format(target=t["target"], ms=t["target"] * 1e3, epochs=shape["epochs"])
        verdict = "met" if t["met"] else "**not met**"
        lines.append(
            f"| {label} | {_seconds(t['measured'])} | {verdict} | {details[name] or t.get('how', '')} |"
        )
    first = report.get("first_ever", {})
    if first.get("wall_seconds") is not None:
        lines += [
            "",
            f"First-ever run (no compile cache anywhere): {_seconds(first['wall_seconds'])} wall"
            + (
                f", run_seconds {_seconds(first.get('run_seconds'))}, trainer build {_seconds(first.get('build_seconds'))}."
                if first.get("status") == "succeeded"
                else f", exit {first.get('exit_code')}."
            ),
        ]
    startup = report.get("startup", {}).get("sequential")
    if isinstance(startup, dict):
        overlap = report["startup"].get("overlap_gain_seconds")
        lines.append(
            f"Fresh-process fixed costs: import torch {_seconds(startup['import_torch'])}, import foxhunt "
            f"{_seconds(startup['import_foxhunt'])}, CUDA start-up {_seconds(startup['cuda_init'])}"
            + (
                ""
                if overlap is None
                else f"; a thread overlaps {_seconds(max(overlap, 0.0))} of it with hashing"
            )
            + "."
        )
    return "\n".join(lines + _variants(report))


def replace_block(readme: str, block: str) -> str:
    """`readme` with the text between the markers replaced (markers added under the heading if absent)."""
    wrapped = f"{BEGIN}\n{block}\n{END}"
    if BEGIN in readme and END in readme:
        head, rest = readme.split(BEGIN, 1)
        return head + wrapped + rest.split(END, 1)[1]
    if HEADING not in readme:
        raise ValueError(f"no {HEADING!r} section to put the figures under")
    head, rest = readme.split(HEADING, 1)
    return f"{head}{HEADING}\n\n{wrapped}\n{rest}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("result", help="a perf_targets.py JSON")
    parser.add_argument("--readme", default=str(README))
    parser.add_argument("--print", action="store_true", dest="show", help="print the block only")
    args = parser.parse_args(argv)
    result = Path(args.result)
    readme = Path(args.readme)
    try:
        source = str(result.resolve().relative_to(readme.resolve().parent))
    except ValueError:
        source = result.name
    block = render(json.loads(result.read_text()), source)
    if args.show:
        print(block)
        return 0
    readme.write_text(replace_block(readme.read_text(), block))
    print(f"updated {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
