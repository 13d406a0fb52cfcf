"""A `foxhunt train` under cProfile, for where a run's wall time goes (a GPU session's `profile` step).

    python bench/profile_run.py OUT_DIR --bars FILE [--top 80] [-- more `foxhunt train` flags]
    python bench/profile_run.py OUT_DIR --fxcache A.arrow --fxcache B.arrow … [-- flags]   (a universe run)
    python bench/profile_run.py OUT_DIR --universe K [--universe-bars 60000] [-- flags]    (a sample universe)
    CPU universe: --universe 4 --universe-bars 60000 -- --device cpu --epochs 5
                  --train-days 8 --val-days 3 --step-days 3

`--bars` precomputes FILE into OUT_DIR's scratch; `--fxcache` (repeated) takes fxcaches as they are, several
making a universe run; `--universe K` writes K sample instruments of `--universe-bars` bars each
(data/sample_universe.generate_universe, seed 0, as speed.py universe makes them) as fxcaches into the scratch.
It runs the CLI's train in this process under cProfile (device work is asynchronous: a sync point such as
`.tolist()` carries the device time queued before it), and writes profile.txt (the top functions by
cumulative and by own time, and the callers of the epoch figures' replay and capture) and profile.json
(calls and seconds of the functions named in WATCH), and profile.prof (the raw stats, for `pstats`)."""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

WATCH = ("train_epoch", "epoch_figures", "figures_vector", "run", "_capture", "compute", "tolist",
         "fold_baselines", "run_pictures", "stitch_outcomes", "evaluate_fold", "greedy_positions",
         "choose_policies", "_build_trainer", "read_fxcache", "save_fold", "collect", "train_universe_fold",
         "_finish_instrument", "choose_pooled", "shadow", "fold_report", "read_universe", "write_book",
         "write_universe_pictures", "_stitch_instruments", "first_window_correlations")  # fmt: skip


def fxcaches(args: argparse.Namespace, work: Path) -> list[Path]:
    """The fxcaches the run trains on: `--bars` precomputed, `--fxcache` as given, or `--universe` written."""
    if args.fxcache:
        return [Path(f) for f in args.fxcache]
    if args.universe:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from speed_universe import universe_fxcaches

        return universe_fxcaches(work, args.universe, args.universe_bars)
    from foxhunt.run.precompute import precompute

    fxcache = work / "real.arrow"
    precompute([args.bars], str(fxcache), progress=lambda _: None)
    return [fxcache]


def time_figures(seconds: dict[str, list[float]]) -> None:
    """Wrap `MemberPolicies.figures_vector` to synchronise the device before and after each call and keep
    its seconds under "diagnose" or "tail only" (what the trainer queued before it is not counted)."""
    import torch

    from foxhunt.train.member_policy import MemberPolicies

    original = MemberPolicies.figures_vector

    def timed(self, due, diagnose, **kwargs):
        sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
        sync()
        started = time.perf_counter()
        out = original(self, due, diagnose, **kwargs)
        sync()
        seconds.setdefault("diagnose" if any(diagnose) else "tail only", []).append(
            time.perf_counter() - started
        )
        return out

    MemberPolicies.figures_vector = timed  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, profile the run in a scratch folder (removed after), write OUT's files; the run's exit."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="folder for profile.txt and profile.json")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--bars", help="a bars file (parquet or CSV)")
    source.add_argument("--fxcache", action="append", help="an fxcache (repeat: a universe run)")
    source.add_argument("--universe", type=int, help="K sample instruments (a universe run)")
    p.add_argument("--universe-bars", type=int, default=60_000, help="bars per sample instrument")
    p.add_argument("--top", type=int, default=80)
    p.add_argument("--time-figures", action="store_true",
                   help="also time each epoch's figures on the device (synchronised before and after): "
                   "the seconds per call with and without the diagnostics, in profile.json")  # fmt: skip
    args, extra = p.parse_known_args(argv)
    args.extra = [a for a in extra if a != "--"]  # more `foxhunt train` flags
    with tempfile.TemporaryDirectory(prefix="foxhunt-profile-") as work:
        return profile(args, Path(work))


def profile(args: argparse.Namespace, work: Path) -> int:
    """The CLI's train under cProfile in this process (a process of its own: the CLI takes it over, e.g. its
    garbage collector frozen), then profile.txt, profile.prof and profile.json in `args.out`."""
    from foxhunt.config.numerics import pin_cpu_numerics

    pin_cpu_numerics()
    from foxhunt.quick_exit import FULL_TEARDOWN_ENV

    # main returns (foxhunt.quick_exit would end the process in it): the profile is written after.
    os.environ[FULL_TEARDOWN_ENV] = "1"
    import foxhunt.cli

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sources = [flag for path in fxcaches(args, work) for flag in ("--fxcache", str(path))]
    sys.argv = ["foxhunt", "train", *sources, "--out", str(work / "run"), "--seed", "0",
                "--log-format", "text", *args.extra]  # fmt: skip
    figure_seconds: dict[str, list[float]] = {}
    if args.time_figures:
        time_figures(figure_seconds)
    profiler = cProfile.Profile()
    started = time.perf_counter()
    code = profiler.runcall(foxhunt.cli.main)
    wall = time.perf_counter() - started
    figures = {
        k: {"calls": len(v), "median": statistics.median(v), "total": sum(v)}
        for k, v in figure_seconds.items()
    }
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    text.write(f"# exit {code}, wall {wall:.2f}s\n")
    text.write(f"# figures_vector on the device, synchronised: {json.dumps(figures)}\n")
    stats.sort_stats("cumulative").print_stats(args.top)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.print_callers("_capture|epoch_figures|figures_vector")
    (out / "profile.txt").write_text(text.getvalue())
    profiler.dump_stats(out / "profile.prof")  # the raw stats, for pstats' callees of any function
    watched = {
        f"{Path(f).name}:{line}:{name}": {"calls": nc, "own": tt, "cumulative": ct}
        for (f, line, name), (_cc, nc, tt, ct, _callers) in stats.stats.items()  # type: ignore[attr-defined]
        if name in WATCH and "foxhunt" in f
    }
    record = {"exit": code, "wall": wall, "watched": watched, "figures_seconds": figures}
    (out / "profile.json").write_text(json.dumps(record, indent=1))
    print(f"profile: exit {code}, wall {wall:.2f}s; {out / 'profile.txt'}")
    return code


if __name__ == "__main__":
    sys.exit(main())
