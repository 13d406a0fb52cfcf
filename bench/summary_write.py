"""The per-fold `summary.json` write, before (json.dumps(indent=2) of the whole to_dict) and after
(run/summary_file.SummaryText: the finished folds' text kept), at a run's real size.

Reads a real run's summary.json (`--summary`), repeats its folds up to `--folds` (renumbered), and times
the text a run makes after each fold as the folds accumulate: the median over `--repeats` of the write at
the last fold, and the sum over all folds. The file itself is not written (storage is not measured).

    python bench/summary_write.py --summary RUN/summary.json --folds 21 --out bench/results/summary_write.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

from provenance import cpu_model, git_commit, write_result

from foxhunt.evaluate.reports import RunSummary
from foxhunt.run.summary_file import SummaryText


def grown(summary: RunSummary, folds: int) -> RunSummary:
    """`summary` with its folds repeated (and renumbered) up to `folds`."""
    reports = [replace(summary.folds[i % len(summary.folds)], fold=i) for i in range(folds)]
    return replace(summary, folds=reports)


def old_text(summary: RunSummary) -> str:
    return json.dumps(summary.to_dict(), indent=2) + "\n"


def run_writes(summary: RunSummary, write) -> list[float]:
    """Seconds of each per-fold write as the run's folds accumulate."""
    partial = replace(summary, folds=[])
    seconds = []
    for report in summary.folds:
        partial.folds.append(report)
        started = time.perf_counter()
        write(partial)
        seconds.append(time.perf_counter() - started)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", required=True, help="a real run's summary.json")
    parser.add_argument("--folds", type=int, default=21)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    source = RunSummary.from_dict(json.loads(Path(args.summary).read_text()))
    summary = grown(source, args.folds)
    result: dict = {
        "commit": git_commit(),
        "device": cpu_model(),
        "folds": args.folds,
        "epochs_per_fold": len(summary.folds[0].epochs),
        "source_folds": len(source.folds),
        "bytes_indent2": len(old_text(summary)),
        "bytes_now": len(SummaryText().render(summary)),
        "same_dict": json.loads(SummaryText().render(summary)) == summary.to_dict(),
    }
    for name, make in (("indent2", lambda: old_text), ("now", lambda: SummaryText().render)):
        runs = [run_writes(summary, make()) for _ in range(args.repeats)]
        result[f"{name}_last_fold_ms"] = statistics.median(r[-1] for r in runs) * 1e3
        result[f"{name}_all_folds_ms"] = statistics.median(sum(r) for r in runs) * 1e3
    started = time.perf_counter()
    SummaryText().render(summary, fresh=True)  # the run's last write encodes every fold again
    result["now_final_fresh_ms"] = (time.perf_counter() - started) * 1e3
    for key, value in result.items():
        print(f"{key}: {value:.2f}" if isinstance(value, float) else f"{key}: {value}")
    write_result(args.out, result)


if __name__ == "__main__":
    main()
