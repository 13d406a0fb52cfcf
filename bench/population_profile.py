"""Where a population's step time goes: top CUDA kernels of the lone trainer and of populations.

python bench/population_profile.py --sizes 1,4 --out $OUT/population_profile.json
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import torch
from population_gpu import build, synthetic_data
from step_profile import time_steps, top_kernels

from foxhunt.config import DQNConfig


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1,4")
    p.add_argument("--rows", type=int, default=4_000_000)
    p.add_argument("--bf16", action="store_true", help="also time every trainer with bf16 products")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    device = torch.device("cuda")
    data, fold = synthetic_data(args.rows, device, 0)
    report = {"tf32": torch.backends.cuda.matmul.allow_tf32, "runs": []}
    for bf16 in (False, True) if args.bf16 else (False,):
        base = replace(DQNConfig(), bf16=bf16)
        for size in [0, *[int(s) for s in args.sizes.split(",")]]:
            configs = [replace(base, lr=base.lr * (1 + i)) for i in range(max(size, 1))]
            trainer, _ = build(configs, size == 0, data, fold, False)
            run = {"trainer": "lone" if size == 0 else f"P={size}", "bf16": bf16}
            run["step_ms"] = 1e3 * time_steps(trainer, 300)
            run["kernels"] = top_kernels(trainer, 30, 25)
            report["runs"].append(run)
            print(f"{run['trainer']} bf16={bf16}: {run['step_ms']:.3f} ms/step", flush=True)
            for k in run["kernels"][:12]:
                print(
                    f"   {k['us_per_step']:8.1f} us  ×{k['calls_per_step']:.0f}  {k['kernel'][:100]}",
                    flush=True,
                )
            del trainer
            torch.cuda.empty_cache()
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
