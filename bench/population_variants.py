"""Which batched product a population's step should use: step ms of the lone trainer and of populations
for each way of writing `stacked_q` (fp32 with TF32, and bf16), at the benchmark's shape.

    python bench/population_variants.py --sizes 4,8 --out $OUT/population_variants.json
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import torch
from population_gpu import build, synthetic_data
from step_profile import time_steps

import foxhunt.train.dqn as population_module  # the trainer looks up `stacked_q` there
from foxhunt.config import DQNConfig


def baddbmm_bias(params, states):
    return population_module.stacked_q(params, states)


def bmm_then_bias(params, states):
    w1, b1, w2, b2, w3, b3 = params
    h = (torch.bmm(states, w1.transpose(1, 2)) + b1.unsqueeze(1)).relu()
    h = (torch.bmm(h, w2.transpose(1, 2)) + b2.unsqueeze(1)).relu()
    return torch.bmm(h, w3.transpose(1, 2)) + b3.unsqueeze(1)


def bmm_contiguous_transposed(params, states):
    w1, b1, w2, b2, w3, b3 = params
    h = (torch.bmm(states, w1.transpose(1, 2).contiguous()) + b1.unsqueeze(1)).relu()
    h = (torch.bmm(h, w2.transpose(1, 2).contiguous()) + b2.unsqueeze(1)).relu()
    return torch.bmm(h, w3.transpose(1, 2).contiguous()) + b3.unsqueeze(1)


VARIANTS = {"baddbmm": baddbmm_bias, "bmm+bias": bmm_then_bias, "bmm+bias,wT": bmm_contiguous_transposed}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="4,8")
    p.add_argument("--rows", type=int, default=4_000_000)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    data, fold = synthetic_data(args.rows, torch.device("cuda"), 0)
    shipped = population_module.stacked_q
    runs = []
    for bf16 in (False, True):
        base = replace(DQNConfig(), bf16=bf16)
        trainer, _ = build([base], True, data, fold, False)
        runs.append({"trainer": "lone", "bf16": bf16, "step_ms": 1e3 * time_steps(trainer, 300)})
        print(runs[-1], flush=True)
        del trainer
        for name, forward in VARIANTS.items():
            population_module.stacked_q = shipped if name == "baddbmm" else forward
            for size in [int(s) for s in args.sizes.split(",")]:
                configs = [replace(base, lr=base.lr * (1 + i)) for i in range(size)]
                trainer, _ = build(configs, False, data, fold, False)
                step_ms = 1e3 * time_steps(trainer, 300)
                lone_ms = next(r["step_ms"] for r in runs if r["trainer"] == "lone" and r["bf16"] == bf16)
                runs.append(
                    {"trainer": f"P={size}", "variant": name, "bf16": bf16, "step_ms": step_ms,
                     "aggregate_vs_lone": size * lone_ms / step_ms}
                )  # fmt: skip
                print(runs[-1], flush=True)
                del trainer
        population_module.stacked_q = shipped
    Path(args.out).write_text(json.dumps({"runs": runs}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
