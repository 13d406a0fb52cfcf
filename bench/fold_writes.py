"""A round's fold files (issue 36): each member's weights, norm stats, positions and report written in turn, or
on the walk's writer threads while the next member is scored (`storage.writes_in_background`), all on disk
by the round's end either way.

    python bench/fold_writes.py [--rounds 144] [--members 8] [--member-ms 7.2] [--mode turn|background] [--out FILE]
    CPU check: --rounds 2 --members 2 --member-ms 1

Each member fold writes the files a search's fold writes (`fold.save_fold`: the weights of the default 256-wide
net, the norm stats, the validation positions of a 30,000-bar window; then a 30 kB report), into a temporary
folder on this machine's disk. A member's validation and scoring is stood in for by a wait of `--member-ms`
(the primed 64-trial search on an H100 at 8ce4d9c: 8.33 s over 1,152 member folds, 7.2 ms each), during which
the GIL is free, as it is while the host waits on the device. The default 144 rounds of 8 are that search's.
One mode a process: run each three times, alternated, for a median.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

import harness as h


def measure(rounds: int, members: int, member_seconds: float, background: bool) -> dict:
    """Seconds of `rounds` rounds of `members` member folds, each its fold files written, then its wait."""
    import contextlib

    import numpy as np
    import torch

    from foxhunt import storage
    from foxhunt.data.features import FEATURE_NAMES
    from foxhunt.run.fold import save_fold
    from foxhunt.train.networks import build_qnet

    weights = {k: v.clone() for k, v in build_qnet(len(FEATURE_NAMES), 256).state_dict().items()}
    norm = {"mean": [0.0] * len(FEATURE_NAMES), "std": [1.0] * len(FEATURE_NAMES)}
    positions = np.random.default_rng(0).integers(-1, 2, 30_000).astype(np.float32)
    report = b"{" + b" " * 30_000 + b"}"
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="foxhunt-fold-writes-", dir=".") as out:
        started = time.perf_counter()
        for fold in range(rounds):
            with storage.writes_in_background() if background else contextlib.nullcontext():
                for member in range(members):
                    folder = f"{out}/member_{member}"
                    save_fold(weights, norm, fold, positions, folder)
                    storage.write_bytes_soon(f"{folder}/fold_{fold}/report.json", report)
                    time.sleep(member_seconds)
        wall = time.perf_counter() - started
    waits = rounds * members * member_seconds
    return {"wall_seconds": wall, "waits_seconds": waits, "beyond_waits_seconds": wall - waits,
            "files": rounds * members * 4}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=144)
    p.add_argument("--members", type=int, default=8)
    p.add_argument(
        "--member-ms", type=float, default=7.2, help="a member's validation, stood in for by a wait"
    )
    p.add_argument("--mode", choices=("turn", "background"), default="background")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    record = h.provenance("fold_writes")
    record["settings"] = {"rounds": args.rounds, "members": args.members, "member_ms": args.member_ms,
                          "mode": args.mode}  # fmt: skip
    record["figures"] = figures = measure(
        args.rounds, args.members, args.member_ms / 1e3, background=args.mode == "background"
    )
    print(f"{args.mode}: {figures['files']} files in {figures['wall_seconds']:.2f}s, "
          f"{figures['beyond_waits_seconds']:.2f}s beyond the members' waits")  # fmt: skip
    h.write(record, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
