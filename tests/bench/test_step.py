"""bench/step.py: a tiny CPU run writes every figure, the aggregate throughput and speedups are computed from
the repeats it records, the verdict is the best population's against 1.5×, and the targets are issue 36's."""

import argparse
import json
import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import step  # noqa: E402

from foxhunt.config import DQNConfig  # noqa: E402
from foxhunt.train.settings import check_population  # noqa: E402

TINY = ["population", "--device", "cpu", "--rows", "4000", "--batch", "256", "--hidden", "16"]
TINY += ["--sizes", "1,2", "--repeats", "2", "--replays", "2"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("population") / "population.json"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny products: threads only contend on a shared machine
    try:
        assert step.main([*TINY, "--out", str(out)]) == 0
    finally:
        torch.set_num_threads(threads)
    return json.loads(out.read_text())


def by_name(report: dict) -> dict:
    return {r["trainer"]: r for r in report["trainers"]}


def test_a_cpu_run_records_provenance_and_every_trainer(report):
    assert report["complete"] is True
    assert report["commit"] and report["device"] and report["torch"] == torch.__version__
    assert (
        report["date"][:4].isdigit()
        and report["device_type"] == "cpu"
        and report["benchmark"] == "population_gpu"
    )
    assert {"build_cold_seconds", "step", "epoch"} <= set(report["labels"])
    assert [(r["kind"], r["size"]) for r in report["trainers"]] == [
        ("lone", 1),
        ("population", 1),
        ("population", 2),
    ]
    assert report["shape"]["train_rows"] == 4000 and report["shape"]["batch_size"] == 256


def test_every_timing_and_throughput_is_positive_with_all_its_repeats(report):
    for r in report["trainers"]:
        for key in ("step", "collect", "epoch_with_diagnostics", "epoch_without_diagnostics"):
            assert len(r[key]["repeats_seconds"]) == 2
            assert all(s > 0 for s in r[key]["repeats_seconds"])
            assert r[key]["seconds_median"] > 0
        assert r["diagnostics"]["per_member_seconds_median"] > 0
        assert len(r["diagnostics"]["repeats_seconds"]) == 2  # every member at once, K repeats
        per_epoch = r["diagnostics"]["per_epoch_seconds"]
        assert per_epoch == statistics.median(r["diagnostics"]["repeats_seconds"])
        assert r["diagnostics"]["per_member_seconds_median"] == pytest.approx(
            per_epoch / r["size"], rel=1e-12
        )
        assert r["build"]["cold_seconds"] > 0 and r["build"]["warm_cache_seconds"] > 0
        assert r["step"]["samples_per_second"] > 0 and r["step"]["speedup_vs_lone"] > 0


def test_aggregate_samples_per_second_is_members_times_batch_times_steps_over_the_median(report):
    for r in report["trainers"]:
        step = r["step"]
        steps = step["replays"] * step["steps_per_replay"]
        want = r["size"] * 256 * steps / statistics.median(step["repeats_seconds"])
        assert step["samples_per_second"] == pytest.approx(want, rel=1e-12)
        epoch = r["epoch_with_diagnostics"]
        # The learnt head, as a run points the trainer: 3,000 of the 4,000 rows (a quarter held back as its tail).
        assert epoch["steps"] == math.ceil(3000 / 256)
        want = r["size"] * epoch["steps"] * 256 / statistics.median(epoch["repeats_seconds"])
        assert epoch["samples_per_second"] == pytest.approx(want, rel=1e-12)


def test_speedups_are_against_the_lone_trainer(report):
    trainers = by_name(report)
    lone, pair = trainers["lone"], trainers["P=2"]
    assert lone["step"]["speedup_vs_lone"] == 1.0
    want = pair["step"]["samples_per_second"] / lone["step"]["samples_per_second"]
    assert pair["step"]["speedup_vs_lone"] == pytest.approx(want, rel=1e-12)
    collect = 2 * lone["collect"]["seconds_median"] / pair["collect"]["seconds_median"]
    assert pair["collect"]["speedup_vs_lone"] == pytest.approx(collect, rel=1e-12)


def test_the_written_verdict_is_the_best_populations_speedup_against_the_target(report):
    populations = [r for r in report["trainers"] if r["kind"] == "population"]
    best = max(populations, key=lambda r: r["step"]["speedup_vs_lone"])
    verdict = report["verdict"]
    assert verdict["best_size"] == best["size"]
    assert verdict["speedup"] == best["step"]["speedup_vs_lone"]
    assert verdict["met"] is (verdict["speedup"] >= 1.5)


def measured(size: int, step_rate: float, collect: float, diagnostics: float, epoch_rate: float) -> dict:
    return {
        "size": size,
        "step": {"samples_per_second": step_rate},
        "collect": {"seconds_median": collect},
        "diagnostics": {"per_member_seconds_median": diagnostics},
        "epoch_with_diagnostics": {"samples_per_second": epoch_rate / 2},
        "epoch_without_diagnostics": {"samples_per_second": epoch_rate},
    }


def test_compare_gives_aggregate_ratios_and_the_share_of_the_step_gain_an_epoch_keeps():
    lone = measured(1, step_rate=100.0, collect=1.0, diagnostics=0.1, epoch_rate=50.0)
    pair = measured(2, step_rate=300.0, collect=1.5, diagnostics=0.2, epoch_rate=100.0)
    step.compare(lone, lone)
    step.compare(pair, lone)
    assert pair["step"]["speedup_vs_lone"] == pytest.approx(3.0)
    assert pair["collect"]["speedup_vs_lone"] == pytest.approx(2 * 1.0 / 1.5)  # two members' collections
    assert pair["diagnostics"]["per_member_vs_lone"] == pytest.approx(2.0)  # per member: not batched
    assert pair["epoch_with_diagnostics"]["speedup_vs_lone"] == pytest.approx(2.0)
    assert pair["epoch_without_diagnostics"]["speedup_vs_lone"] == pytest.approx(2.0)
    assert pair["step_gain_kept_in_epoch"] == pytest.approx((2.0 - 1) / (3.0 - 1))
    assert lone["step_gain_kept_in_epoch"] is None  # no gain to keep


def record(kind: str, size: int, speedup: float) -> dict:
    epoch = {"speedup_vs_lone": speedup / 2}
    return {
        "kind": kind,
        "size": size,
        "step": {"speedup_vs_lone": speedup},
        "epoch_with_diagnostics": epoch,
        "epoch_without_diagnostics": epoch,
    }


@pytest.mark.parametrize(
    ("speedups", "best", "met"),
    [
        ({1: 0.9, 2: 1.3, 4: 1.6, 8: 1.2}, 4, True),
        ({1: 0.8, 2: 1.49}, 2, False),
        ({1: 0.5, 2: 0.7}, 2, False),
    ],
)
def test_the_verdict_takes_the_fastest_population_never_the_lone_trainer(speedups, best, met):
    records = [record("lone", 1, 1.0), *(record("population", p, s) for p, s in speedups.items())]
    verdict = step.verdict(records)
    assert verdict["best_size"] == best
    assert verdict["speedup"] == speedups[best]
    assert verdict["met"] is met
    assert verdict["epoch_met"] is False  # half the step's gain is never 1.5× here


def test_the_target_is_met_at_exactly_one_and_a_half():
    assert step.verdict([record("population", 2, 1.5)])["met"] is True


def test_members_share_the_shape_and_differ_in_their_shape_free_settings():
    base = DQNConfig(batch_size=512, hidden=64)
    members = step.member_configs(base, 4)
    check_population(members)
    for name in ("lr", "gamma", "tau"):
        assert len({getattr(m, name) for m in members}) == 4
    assert all(replace(m, lr=base.lr, gamma=base.gamma, tau=base.tau) == base for m in members)
    assert step.member_configs(base, 1) == [base]


def test_sizes_are_comma_separated_positive_integers():
    assert step.sizes("1,2,4,8") == [1, 2, 4, 8]
    for bad in ("0,2", "two", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="expected"):
            step.sizes(bad)


def test_cuda_without_a_gpu_exits_2_naming_the_cpu_check(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert step.main(["lone", "--device", "cuda"]) == 2
    assert "--device cpu" in capsys.readouterr().err


def test_the_targets_are_the_lone_step_and_the_best_populations_samples_per_second(report):
    trainers = by_name(report)
    lone = report["targets"]["lone_step_seconds"]
    assert lone["measured"] == trainers["lone"]["step"]["seconds_per_step_median"]
    assert lone["target"] == 0.20e-3 and lone["met"] is (lone["measured"] <= 0.20e-3)
    best = max(trainers["P=1"]["step"]["samples_per_second"], trainers["P=2"]["step"]["samples_per_second"])
    population = report["targets"]["population_samples_per_second"]
    assert population["measured"] == best and population["higher_is_better"] is True
    assert population["met"] is (best >= 200e6)
