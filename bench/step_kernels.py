"""Where a training step's time goes, by population size: its kernels under the profiler, per step.

    python bench/step_kernels.py [--sizes 1,3,8] [--variants base= bf16=dqn.bf16=true]
    CPU check: --device cpu --rows 4000 --batch 256 --hidden 16 --sizes 1,2 --steps 3

Issue 36's figures say a population's step costs about its size times one member's (`--seeds 3`: an epoch
0.125 → 0.316 s at the plan's shape; P = 8: 54.3M gradient samples/s against the lone trainer's 28M), which a
step bound by launches would not. This says which: per P (the trainer `bench/step.py` builds, on its
synthetic fold), the captured step's wall per step (R replays between two synchronizes), then S steps
under `torch.profiler` twice, as the graph replays them and as the compiled parts run them without a graph;
then an epoch's tail scores of every member (a search's selection phase), C calls under the profiler.
Per step: the kernels launched, the device's busy time (their summed durations), the wall, and the top
kernels by time with their share; busy near the wall says the step is bound by its kernels' work (then
which kernels grow with P says where), busy far below it says launches and gaps. A variant (`NAME=dqn.KEY=VALUE,…`,
as `bench/power.py`'s) measures every size again with those DQN settings: a lever before and after.
`--chunk-rows N,…` measures only the tail scores, at each chunk of rows the device's forward passes take
(`device_data.chunk_rows`: the greedy maps' and collection's; 1,048,576 on CUDA ships): their wall per call
without the profiler, their kernels under it, and how many greedy-map entries differ from the shipped
chunk's (a product of another row count may round otherwise). The fp32 hidden activations of a chunk of a
million rows are a gigabyte each, far past the GPU's L2 cache; a small chunk keeps them there, for more
launches.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import harness as h
import step as bench_step
import torch
from power_data import parse_variant
from torch.profiler import ProfilerActivity, profile

from foxhunt.config import DQNConfig
from foxhunt.train.step import RECOMPILE_LIMIT, plain_step

TOP = 20  # kernels kept per mode and size, by time


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="the JSON (default bench/results/step_kernels-…json)")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--rows", type=int, default=4_000_000, help="training rows of the fold")
    p.add_argument("--batch", type=int, default=DQNConfig().batch_size)
    p.add_argument("--hidden", type=int, default=DQNConfig().hidden)
    p.add_argument("--sizes", type=bench_step.sizes, default=[1, 3, 8], help="population sizes")
    p.add_argument("--steps", type=int, default=50, help="S: steps under the profiler, per mode")
    p.add_argument("--figure-calls", type=int, default=10, help="epochs' tail scores under the profiler")
    p.add_argument("--replays", type=int, default=250, help="R: timed replays for the wall per step")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--variants", nargs="+", default=["base="], help="NAME=dqn.KEY=VALUE,…; base= the defaults"
    )
    p.add_argument("--chunk-rows", type=bench_step.sizes, default=[],
                   help="only the tail scores, at each of these chunks of rows (module docstring)")  # fmt: skip
    return p.parse_args(argv)


def kernel_table(events, steps: int, device: torch.device) -> dict:
    """Per step: the kernels (CUDA) or ops (CPU) the profiler saw, their summed time, the top ones by time."""
    times: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for event in events:
        if device.type == "cuda":
            if event.device_type != torch.autograd.DeviceType.CUDA:
                continue
            micros = float(getattr(event, "device_time", 0.0) or getattr(event, "cuda_time", 0.0) or 0.0)
        else:
            if event.cpu_parent is not None:  # top-level CPU ops only: children are inside them
                continue
            micros = event.cpu_time
        times[event.name] += micros
        counts[event.name] += 1
    busy = sum(times.values())
    top = sorted(times, key=times.__getitem__, reverse=True)[:TOP]
    return {
        "kernels_per_step": sum(counts.values()) / steps,
        "busy_us_per_step": busy / steps,
        "top": [
            {
                "name": name[:160],
                "per_step": counts[name] / steps,
                "us_per_step": times[name] / steps,
                "share": times[name] / busy if busy else 0.0,
            }
            for name in top
        ],  # fmt: skip
    }


def under_profiler(device: torch.device, work) -> tuple[list, float]:
    """`work()` under torch.profiler (the device's kernels too on CUDA): the events, and its wall seconds."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        wall = bench_step.timed(device, work)
    return list(prof.events()), wall


def profiled(trainer, steps: int, graphed: bool) -> tuple[dict, float]:
    """`steps` steps under the profiler (graph replays, or the compiled parts eagerly): their kernel table,
    and the wall per step they took under it."""
    device = trainer.device
    spg = trainer.config.steps_per_graph

    def work() -> None:
        if graphed:
            for _ in range(max(1, steps // spg)):
                trainer.step.run()
        else:
            with torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT):
                for _ in range(steps):
                    plain_step(trainer.step.parts)

    work()  # untimed: the eager path's first calls, the profiler's own start
    events, wall = under_profiler(device, work)
    done = max(1, steps // spg) * spg if graphed else steps
    return kernel_table(events, done, device), wall / done


def profiled_figures(trainer, calls: int) -> tuple[dict, float]:
    """`calls` epochs' tail scores of every member (`epoch_figures` without diagnostics: what a search's
    selection runs after each epoch; replayed from its CUDA graph after two calls) under the profiler: their
    kernel table per call, and the wall per call (one host read each)."""
    work = tail_score_calls(trainer, calls)
    work()  # untimed: the key's eager call and its capture
    events, wall = under_profiler(trainer.device, work)
    return kernel_table(events, calls, trainer.device), wall / calls


def tail_score_calls(trainer, calls: int):
    """A function that runs `calls` epochs' tail scores of every member (`epoch_figures`, no diagnostics)."""
    histories = dict.fromkeys(range(trainer.size))

    def work() -> None:
        for _ in range(calls):
            trainer.policies.epoch_figures(0, histories)

    return work


def measure_size(size: int, settings: dict, data, fold, args: argparse.Namespace) -> dict:
    """One trainer of `size` members (the lone one at 1) with the DQN `settings` over the defaults: the wall
    per step, then both profiled modes, then the members' tail scores of an epoch."""
    base = replace(DQNConfig(batch_size=args.batch, hidden=args.hidden), **settings)
    trainer, build_seconds = bench_step.build(
        bench_step.member_configs(base, size), size == 1, data, fold, diagnostics=False
    )
    trainer.collect(1.0)  # the replay filled, as an epoch's steps find it
    timing = bench_step.measure_steps(trainer, size, argparse.Namespace(**{**vars(args), "repeats": 3}))
    record = {"size": size, "dqn": settings, "build_seconds": build_seconds, "seconds_per_step": timing["seconds_per_step_median"],
              "samples_per_second": timing["samples_per_second"]}  # fmt: skip
    for mode, graphed in (("graph", True), ("eager_compiled", False)):
        table, wall = profiled(trainer, args.steps, graphed)
        record[mode] = {"profiled_wall_us_per_step": wall * 1e6, **table}
    table, wall = profiled_figures(trainer, args.figure_calls)
    record["tail_scores"] = {"profiled_wall_us_per_call": wall * 1e6, **table}
    del trainer
    bench_step.release(data.features.device)
    return record


def tail_maps(trainer) -> torch.Tensor:
    """Member 0's greedy maps over the fold's held-back tail, at the chunk `chunk_rows` gives now."""
    from foxhunt.train.device_data import chunk_rows
    from foxhunt.train.policy import greedy_maps

    window, features = trainer.policies.window, trainer.data.features
    part = window.parts[0]
    rows = features[part.learn_end : part.fold_range.train_end]
    net = trainer.policies.networks[0]
    return greedy_maps(
        net, rows, window.means[part.instrument], window.stds[part.instrument], chunk_rows(features.device)
    )


def tail_score_walls(trainer, calls: int) -> tuple[float, dict, float]:
    """An epoch's tail scores of every member: the wall per call over `calls` replays (after the key's eager
    call, its capture and a replay), then their kernel table and wall per call under the profiler."""
    tail_score_calls(trainer, 3)()
    wall = bench_step.timed(trainer.device, tail_score_calls(trainer, calls)) / calls
    table, profiled_wall = profiled_figures(trainer, calls)
    return wall, table, profiled_wall


def measure_chunk(size: int, chunk: int, data, fold, args: argparse.Namespace) -> dict:
    """A trainer of `size` members with the device's chunk of rows at `chunk`: the tail scores' wall per call
    (unprofiled, then their kernels under the profiler), and the maps' entries that differ from the shipped
    chunk's."""
    from foxhunt.train import device_data

    kind, shipped = data.features.device.type, device_data.chunk_rows(data.features.device)
    base = DQNConfig(batch_size=args.batch, hidden=args.hidden)
    trainer, build_seconds = bench_step.build(
        bench_step.member_configs(base, size), size == 1, data, fold, diagnostics=False
    )
    reference = tail_maps(trainer)
    device_data._CHUNK_ROWS[kind] = chunk
    try:
        differing = int((tail_maps(trainer) != reference).sum())
        wall, table, profiled_wall = tail_score_walls(trainer, args.figure_calls)
    finally:
        device_data._CHUNK_ROWS[kind] = shipped
    del trainer
    bench_step.release(data.features.device)
    return {"size": size, "chunk_rows": chunk, "build_seconds": build_seconds, "tail_rows": int(reference.shape[0]),
            "map_entries_differing": differing, "wall_us_per_call": wall * 1e6,
            "tail_scores": {"profiled_wall_us_per_call": profiled_wall * 1e6, **table}}  # fmt: skip


def chunk_line(r: dict) -> str:
    t = r["tail_scores"]
    return (
        f"chunk {r['chunk_rows']:>8,} P={r['size']:>3}: tail scores {r['wall_us_per_call'] / 1e3:.2f} ms a call "
        f"({r['tail_rows']:,} rows a member), {t['kernels_per_step']:.0f} kernels, busy "
        f"{t['busy_us_per_step']:.0f} µs of {t['profiled_wall_us_per_call']:.0f} profiled; "
        f"{r['map_entries_differing']} map entries differ from the shipped chunk's"
    )


def line(r: dict) -> str:
    g, e = r["graph"], r["eager_compiled"]
    return (
        f"{r['variant']} P={r['size']:>3}: {r['seconds_per_step'] * 1e3:.3f} ms/step, {r['samples_per_second'] / 1e6:.1f}M samples/s; "
        f"graph {g['kernels_per_step']:.0f} kernels, busy {g['busy_us_per_step']:.0f} µs of "
        f"{g['profiled_wall_us_per_step']:.0f}; eager {e['kernels_per_step']:.0f} kernels, busy "
        f"{e['busy_us_per_step']:.0f} µs of {e['profiled_wall_us_per_step']:.0f}; top: "
        + ", ".join(f"{k['name'][:40]} {k['us_per_step']:.0f}µs" for k in g["top"][:3])
        + f"; tail scores {r['tail_scores']['kernels_per_step']:.0f} kernels, busy "
        f"{r['tail_scores']['busy_us_per_step']:.0f} µs of {r['tail_scores']['profiled_wall_us_per_call']:.0f} a call"
    )


def run(args: argparse.Namespace, device: torch.device) -> Path:
    """Every variant and size in turn; the JSON after each."""
    data, fold = bench_step.synthetic_data(args.rows, device, args.seed)
    record = h.provenance("step_kernels", device.type)
    record["shape"] = {"train_rows": fold.train_rows, "batch_size": args.batch, "hidden": args.hidden,
                       "sizes": args.sizes, "steps": args.steps, "replays": args.replays}  # fmt: skip
    out = h.default_out(record) if args.out is None else Path(args.out)
    record["sizes"] = rows = []
    if args.chunk_rows:
        record["shape"]["chunk_rows"] = args.chunk_rows
        for chunk in args.chunk_rows:
            for size in args.sizes:
                rows.append(measure_chunk(size, chunk, data, fold, args))
                print(chunk_line(rows[-1]), flush=True)
                h.write(record, out)
        return out
    for spec in args.variants:
        variant, _, settings = parse_variant(spec)
        for size in args.sizes:
            rows.append({"variant": variant, **measure_size(size, settings, data, fold, args)})
            print(line(rows[-1]), flush=True)
            h.write(record, out)
    record["step_time_over_lone"] = over_lone(rows)
    record["median_kernels_per_step"] = statistics.median(r["graph"]["kernels_per_step"] for r in rows)
    h.write(record, out)
    return out


def over_lone(rows: list[dict]) -> dict:
    """Per variant and size, the step's time over the first variant's lone step (where it was measured)."""
    first = rows[0]["variant"]
    lone = next((r["seconds_per_step"] for r in rows if r["size"] == 1 and r["variant"] == first), None)
    if lone is None:
        return {}
    ratios = {f"{r['variant']} P={r['size']}": r["seconds_per_step"] / lone for r in rows}
    print(
        "step time over the lone step: " + ", ".join(f"{k} {v:.2f}×" for k, v in ratios.items()), flush=True
    )
    return ratios


def main(argv: list[str] | None = None) -> int:
    """Profile on the device asked for; 2 when it is not there."""
    return bench_step.on_device("step_kernels", parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
