"""bench/speed.py: the plan's folds, the commands the CLI reads, the scoring agreement figure, and a CPU plan
run at a tiny size whose targets come from the medians of its fresh processes."""

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import speed  # noqa: E402
import speed_scoring  # noqa: E402
from support.background_runs import background_process, one_thread  # noqa: E402

from foxhunt.cli.commands import run_config  # noqa: E402
from foxhunt.cli.parser import build_parser  # noqa: E402
from foxhunt.config import FoldConfig  # noqa: E402
from foxhunt.data.bars import generate_sample_bars  # noqa: E402
from foxhunt.data.folds import generate_walk_forward_indices  # noqa: E402

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow


def _config_of(command: list[str]):
    assert command[1:4] == ["-m", "foxhunt", "train"]
    return run_config(build_parser().parse_args(command[3:]))


def test_the_plan_folds_have_the_plans_share_of_training_rows():
    timestamp = generate_sample_bars(470_000, seed=0).timestamp
    folds = generate_walk_forward_indices(timestamp, speed.plan_folds(timestamp))
    shares = [f.train_rows / len(timestamp) for f in folds]
    assert shares == pytest.approx([4.0 / 4.7, 4.19 / 4.7, 4.37 / 4.7], rel=0.005)


def test_the_train_command_carries_the_folds_and_diagnostics_every_only_when_asked():
    folds = FoldConfig(train_days=30.5, val_days=7.25, step_days=7.25, mode="expanding", max_folds=3)
    plain = speed.train_command(Path("fx.arrow"), Path("out"), 50, "cuda", *speed.fold_flags(folds))
    config = _config_of(plain)
    assert config.folds == folds and config.epochs == 50 and config.diagnostics_spacing() == 1
    assert "--diagnostics-every" not in plain  # so a commit from before the flag runs it too
    assert _config_of(speed.train_command(Path("f"), Path("o"), 5, "cpu", every=10)).diagnostics_every == 10
    assert _config_of(speed.train_command(Path("f"), Path("o"), 5, "cpu")).folds == FoldConfig()


def test_the_seeds_ratio_is_the_median_wall_of_k_seeds_over_one_seeds_of_the_runs_that_succeeded():
    one = [{"exit_code": 0, "wall_seconds": w} for w in (30.0, 34.0, 32.0)]
    many = [{"exit_code": 0, "wall_seconds": w} for w in (40.0, 41.0)] + [
        {"exit_code": 1, "wall_seconds": 1.0}
    ]
    got = speed.seeds_ratio(one, many, 3)
    assert got["measured"] == pytest.approx(40.5 / 32.0) and got["target"] == 1.3 and got["met"]
    assert speed.seeds_ratio(one, [{"exit_code": 1, "wall_seconds": 9.0}], 3)["measured"] is None


def test_a_call_cut_between_alternated_pairs_leaves_every_pair_that_ended_in_its_file(tmp_path):
    record, out, walls = {"host": {}, "targets": {}}, tmp_path / "seeds.json", iter([30.0, 40.0, 31.0, 41.0])

    def one() -> dict:
        wall = next(walls, None)
        if wall is None:
            raise KeyboardInterrupt  # the call's time limit, in the third pair
        return {"exit_code": 0, "wall_seconds": wall}

    with pytest.raises(KeyboardInterrupt):
        speed.alternated(3, one, one, lambda a, b: speed._keep(record, str(out), one_seed=a, seeds_3=b))
    kept = json.loads(out.read_text())["so_far"]
    assert [r["wall_seconds"] for r in kept["one_seed"]] == [30.0, 31.0]
    assert [r["wall_seconds"] for r in kept["seeds_3"]] == [40.0, 41.0]


@dataclass(frozen=True)
class Figures:
    sharpe: float
    low: float
    verdict: str


def test_the_largest_relative_difference_is_found_inside_nested_figures():
    want = {"model": Figures(2.0, -1.0, "above"), "flat": Figures(0.0, math.nan, "no")}
    got = {"model": Figures(2.0 * (1 + 3e-12), -1.0, "above"), "flat": Figures(1e-13, math.nan, "no")}
    assert math.isclose(speed_scoring.largest_difference(got, want), 3e-12, rel_tol=1e-3)
    assert (
        speed_scoring.largest_difference(Figures(1.0, 1.0, "above"), Figures(1.0, 1.0, "below")) == math.inf
    )


# `bench/speed.py plan` at a tiny size as a process of its own, queued in the background.
cpu_plan_run = background_process("cpu_plan_run", "bench-plan", lambda work: [
        sys.executable, str(BENCH / "speed.py"), "plan", "--bars", "20000", "--epochs", "1", "--repeats", "2",
        "--device", "cpu", "--modes", "cached", "--out", str(work / "plan.json")], lambda _: one_thread())  # fmt: skip


@pytest.mark.slow
def test_a_cpu_plan_run_times_fresh_processes_and_judges_the_medians(cpu_plan_run):
    done, work = cpu_plan_run
    out = work / "plan.json"
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(out.read_text())
    assert record["benchmark"] == "plan_shape" and record["commit"] and record["host"]["cpus"]
    assert all(r["exit_code"] == 0 and len(r["folds"]) == 3 for r in record["cached"]["runs"])
    walls = [r["wall_seconds"] for r in record["cached"]["runs"]]
    cached = record["targets"]["plan_cached_wall_seconds"]
    assert cached["measured"] == pytest.approx(sum(walls) / 2) and cached["target"] == 25.0
    assert cached["met"] is (cached["measured"] <= 25.0)
    assert "plan_first_wall_seconds" not in record["targets"]  # not run: not judged


def test_the_scoring_profile_names_the_ops_that_take_the_calls_host_time():
    import torch

    a = torch.randn(256, 256, dtype=torch.float64)
    forgotten = []
    profile = speed_scoring.op_profile(
        lambda: [a @ a for _ in range(20)], torch.device("cpu"), lambda: forgotten.append(1)
    )
    assert forgotten == [1]  # the draws forgotten first, as before each timed call
    assert profile["top_by_host"][0]["op"] == "aten::mm" and profile["top_by_host"][0]["calls"] == 20
    assert 0 < profile["ops_host_seconds"] <= profile["wall_seconds"] * 1.05
    assert profile["device_kernel_seconds"] == 0 and profile["top_by_device"] == []


def test_the_scoring_runs_under_the_matmul_precision_a_run_has():
    import torch

    before = torch.get_float32_matmul_precision()
    try:
        assert speed_scoring.run_matmul_precision(torch.device("cpu")) == before  # the host: untouched
        assert speed_scoring.run_matmul_precision(torch.device("cuda")) == "high"  # as DQNTrainer sets it
    finally:
        torch.set_float32_matmul_precision(before)
