"""bench/power.py: the data sets it plants, each seed's share of the feature oracle and folds that traded from
a run's own files, issue 34's targets per row and pooled over the noise, the merge of several files, and a
CPU run at a tiny size whose rows come from its runs' summary.json."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import power  # noqa: E402
from support.background_runs import background_process, one_thread  # noqa: E402
from support.power_calls import again_with_resume, no_process  # noqa: E402

from foxhunt.data import sample as sd  # noqa: E402


def _log_returns(bars) -> np.ndarray:
    return np.diff(np.log(bars.close))


def test_the_random_walk_is_gaussian_noise_of_the_samples_per_bar_volatility_and_nothing_else():
    bars = power.generate("random-walk", 5_000, seed=3)
    sigma = sd.SAMPLE_SIGMA * np.sqrt(1.0 + sd.SAMPLE_NEWS_RATE * sd.NEWS_JUMP_SIGMAS**2)
    assert power.random_walk_sigma() == pytest.approx(sigma)
    draws = np.random.default_rng(3).standard_normal(5_000) * sigma  # the generator's first draw
    assert _log_returns(bars) == pytest.approx(draws[1:], rel=1e-9, abs=1e-15)
    sample = power.generate("drift-1", 5_000, seed=3)
    assert bars.timestamp.tolist() == sample.timestamp.tolist()  # the same calendar
    assert _log_returns(sample).std() == pytest.approx(sigma, rel=0.2)  # the same volatility


def test_a_drift_data_set_plants_its_multiple_of_the_samples_drift_on_the_same_draws():
    off, half, full = (
        _log_returns(power.generate(d, 20_000, seed=1)) for d in ("signal-off", "drift-0.5", "drift-1")
    )
    planted = full - off
    assert np.abs(planted).max() > 0.5 * sd.SAMPLE_NEWS_DRIFT  # news happened and drifted
    assert half - off == pytest.approx(0.5 * planted, abs=1e-12)


def test_the_two_year_shape_is_two_calendar_years_of_the_generators_weekday_minutes():
    timestamp = power.generate("drift-1", power.TWO_YEAR_BARS, seed=0).timestamp
    first, last = (np.datetime64(int(t), "ns").astype("datetime64[m]") for t in (timestamp[0], timestamp[-1]))
    assert str(first) == "2024-01-01T00:00" and str(last) == "2025-12-31T23:59"


def test_a_second_call_with_the_same_work_folder_reuses_the_fxcache(tmp_path):
    _, first = power.prepare(tmp_path, "plan", "drift-0.25", 3_000, 0)
    _, again = power.prepare(tmp_path, "plan", "drift-0.25", 3_000, 0)
    _, other = power.prepare(tmp_path, "plan", "drift-0.25", 3_000, 1)  # other bars: built
    assert (first["cache_hit"], again["cache_hit"], other["cache_hit"]) == (False, True, False)
    assert again["rows"] == first["rows"] and len(again["timestamp"]) == first["rows"]


def test_a_variant_is_train_flags_and_dqn_settings():
    name, flags, dqn = power.parse_variant("strict=--window expanding dqn.select_min_t=1.5 dqn.n_step=5")
    assert (name, flags, dqn) == ("strict", ["--window", "expanding"], {"select_min_t": 1.5, "n_step": 5})
    assert power.parse_variant("pooled=dqn.select_pool=pooled,dqn.select_pool_t=2") == (
        "pooled",
        [],
        {"select_pool": "pooled", "select_pool_t": 2},
    )
    assert power.parse_variant("base=") == ("base", [], {})
    assert power.parse_variant("e=--window,expanding,dqn.n_step=3") == (
        "e",
        ["--window", "expanding"],
        {"n_step": 3},
    )


def _net(sharpe: float, low: float = -1.0, high: float = 1.0) -> dict:
    return {"net": {"sharpe": sharpe, "sharpe_ci_low": low, "sharpe_ci_high": high}}


def _run(tmp_path: Path, went_flat: dict[int, list[bool]], oracle: float = 8.0) -> tuple[dict, Path]:
    """A run's summary.json and its folds' report.json: seed 0 at the top, seed 1 under seed_1/."""
    for seed, flats in went_flat.items():
        base = tmp_path if seed == 0 else tmp_path / f"seed_{seed}"
        for fold, flat in enumerate(flats):
            (base / f"fold_{fold}").mkdir(parents=True)
            (base / f"fold_{fold}" / "report.json").write_text(json.dumps({"selection": {"went_flat": flat}}))
    figures = {"0": (6.0, 2.0, 9.0), "1": (2.0, -1.0, 5.0)}
    policies = {"model": _net(6.0), "flat": _net(0.0, 0.0, 0.0), "buy_and_hold": _net(0.3), "ridge_15": _net(oracle - 5.0),
                "mlp_60": _net(oracle, oracle - 4.0, oracle + 4.0), "ridge": _net(20.0)}  # fmt: skip
    summary = {"seed": 0, "folds": [{"fold": f} for f in range(len(went_flat[0]))],
               "stitched": {"policies": policies},
               "seed_spread": {"figures": {s: {"sharpe": v, "ci": [lo, hi], "exposure": 0.4, "turnover_per_year": 9.0}
                                           for s, (v, lo, hi) in figures.items()}}}  # fmt: skip
    return summary, tmp_path


def test_each_seeds_share_is_its_sharpe_over_the_feature_oracles_and_its_folds_come_from_its_own_reports(
    tmp_path,
):
    got = power.row_figures(*_run(tmp_path, {0: [True, False, False], 1: [True, True, False]}))
    assert got["feature_oracle"]["name"] == "mlp_60"  # the 1-bar ridge is no supervised model
    assert got["feature_oracle"]["label"].startswith("feature oracle (best of 4 on the validation windows")
    assert got["seeds"]["0"]["share_of_oracle"] == pytest.approx(6.0 / 8.0)
    assert got["seeds"]["1"]["share_of_oracle"] == pytest.approx(2.0 / 8.0)
    assert got["share"]["min"] == pytest.approx(0.25) and got["share"]["median"] == pytest.approx(0.5)
    assert (got["seeds"]["0"]["folds_traded"], got["seeds"]["1"]["folds_traded"]) == (2, 1)
    assert got["seeds"]["0"]["folds"] == 3
    assert got["seeds_above_flat"] == ["0"] and got["oracle_above_flat"]
    assert (got["min"], got["max"]) == (2.0, 6.0)
    assert (got["decisions_in_short"]["folds"], got["decisions_in_short"]["traded"]) == (6, 3)


def test_no_share_is_taken_of_an_oracle_without_an_edge(tmp_path):
    got = power.row_figures(*_run(tmp_path, {0: [True], 1: [True]}, oracle=-0.5))
    assert got["feature_oracle"]["sharpe"] == -0.5 and not got["oracle_above_flat"]
    assert got["seeds"]["0"]["share_of_oracle"] is None and got["share"] is None
    assert power.share(1.0, {"sharpe": 0.0}) is None


def _row(shape: str, data: str, sharpes: list[float], oracle: float = 10.0, above: int = 0, below: int = 0,
         oracle_low: float = 1.0, variant: str = "base", first: int = 0) -> dict:  # fmt: skip
    """A row's figures as `row_figures` gives them, made by hand (seeds `first`, `first` + 1, …)."""
    seeds = {str(first + i): {"sharpe": s, "ci": [s - 1.0, s + 1.0], "share_of_oracle": s / oracle, "exposure": 0.5,
                              "folds_traded": 1, "folds": 3} for i, s in enumerate(sharpes)}  # fmt: skip
    shares = [s / oracle for s in sharpes]
    spread = {
        "min": min(sharpes),
        "median": float(np.median(sharpes)),
        "max": max(sharpes),
        "n": len(sharpes),
    }
    return {"shape": shape, "data": data, "variant": variant, "seeds": seeds, "sharpe": spread,
            "feature_oracle": {"name": "mlp_60", "sharpe": oracle, "ci": [oracle_low, oracle + 5.0]}, "buy_and_hold": 0.3,
            "share": {"min": min(shares), "median": float(np.median(shares)), "max": max(shares), "n": len(shares)},
            "seeds_above_flat": [str(i) for i in range(above)], "seeds_below_flat": [str(i) for i in range(below)],
            "oracle_above_flat": oracle_low > 0.0}  # fmt: skip


@pytest.mark.parametrize(
    ("shape", "drift", "worst", "met"),
    [("two-years", "drift-1", 7.9, False), ("two-years", "drift-1", 8.0, True), ("two-years", "drift-0.5", 7.9, False),
     ("two-years", "drift-0.25", 5.0, True), ("two-years", "drift-0.25", 4.9, False), ("plan", "drift-0.25", 9.0, True),
     ("plan", "drift-1", 8.9, False)],
)  # fmt: skip
def test_the_worst_seed_must_reach_the_shapes_share_of_the_oracle(shape, drift, worst, met):
    targets = power.row_targets(_row(shape, drift, [9.5, worst, 12.0], above=3))
    entry = targets[f"{shape}_{drift}_worst_seed_share_of_oracle"]
    assert (
        entry["measured"] == pytest.approx(worst / 10.0) and entry["met"] is met and entry["higher_is_better"]
    )


def test_an_eighth_of_the_drift_has_no_share_target_but_two_years_must_be_above_flat_where_the_oracle_is():
    targets = power.row_targets(_row("two-years", "drift-0.125", [1.0, 2.0, 3.0], above=2))
    assert list(targets) == ["two-years_drift-0.125_seeds_above_flat"]
    assert targets["two-years_drift-0.125_seeds_above_flat"]["measured"] == 2
    assert targets["two-years_drift-0.125_seeds_above_flat"]["met"] is False  # 2 of 3 seeds
    assert power.row_targets(_row("two-years", "drift-0.125", [1.0, 2.0, 3.0], oracle_low=-0.1)) == {}
    plan = power.row_targets(_row("plan", "drift-0.125", [1.0, 2.0, 3.0], above=0))
    assert plan == {}  # the plan's shape has only the share targets, down to a quarter


def test_noise_may_not_go_below_flat_and_trades_at_most_one_seed_in_ten():
    one = power.row_targets(_row("plan", "random-walk", [0.0] * 10, above=1))
    assert one["plan_random-walk_false_positive_rate"]["measured"] == pytest.approx(0.1)
    assert (
        one["plan_random-walk_false_positive_rate"]["met"] and one["plan_random-walk_seeds_below_flat"]["met"]
    )
    two = power.row_targets(_row("two-years", "signal-off", [0.0] * 10, above=2, below=1, variant="loose"))
    assert two["two-years_signal-off_loose_false_positive_rate"]["met"] is False
    below = two["two-years_signal-off_loose_seeds_below_flat"]
    assert below["measured"] == 1 and below["met"] is False


def test_the_false_positive_rate_is_pooled_over_seeds_not_averaged_over_rows():
    rows = [_row("plan", "signal-off", [0.0] * 10, above=2), _row("plan", "random-walk", [0.0] * 20, above=1)]
    pooled = power.evaluate(rows)["noise_false_positive_rate"]
    assert pooled["measured"] == pytest.approx(3 / 30) and pooled["met"]  # the mean of rates, 0.125, is not


def test_a_failed_run_leaves_its_targets_unmeasured_and_unmet():
    failed = {"shape": "two-years", "data": "drift-0.5", "variant": "base", "seeds_asked": 3, "exit_code": 1}
    entry = power.row_targets(failed)["two-years_drift-0.5_worst_seed_share_of_oracle"]
    assert entry["measured"] is None and entry["met"] is False
    assert "run failed" in power.table([failed])[-1]


def _record(commit: str, rows: list[dict]) -> dict:
    return {"benchmark": "power", "commit": commit, "dirty": False, "date": f"2026-12-0{len(commit)}T00:00:00+00:00",
            "device": "NVIDIA H200", "device_type": "cuda", "torch": "2", "python": "3", "host": {"cpu": "x"},
            "rows": rows, "targets": {}}  # fmt: skip


def test_merge_joins_the_files_rows_and_judges_them_together(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_record("abc", [_row("plan", "signal-off", [0.0] * 10, above=2)])))
    b.write_text(json.dumps(_record("abc", [_row("plan", "random-walk", [0.0] * 20, above=1),
                                            _row("plan", "drift-1", [9.0, 9.5, 8.0])])))  # fmt: skip
    out = tmp_path / "merged.json"
    assert power.merge([a, b], str(out)) == 0
    merged = json.loads(out.read_text())
    assert [r["data"] for r in merged["rows"]] == ["signal-off", "random-walk", "drift-1"]
    assert [r["source"]["file"] for r in merged["rows"]] == ["a.json", "b.json", "b.json"]
    assert merged["commit"] == "abc" and merged["device"] == "NVIDIA H200"
    assert merged["targets"]["noise_false_positive_rate"]["measured"] == pytest.approx(3 / 30)
    assert merged["targets"]["plan_drift-1_worst_seed_share_of_oracle"]["measured"] == pytest.approx(0.8)
    b.write_text(json.dumps(_record("def0", [])))
    power.merge([a, b], str(out))
    assert json.loads(out.read_text())["commit"] == "mixed"


def test_merge_pools_one_rows_seeds_run_in_several_calls_and_judges_the_worst_of_them_all(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_record("abc", [_row("two-years", "drift-1", [9.0])])))
    b.write_text(json.dumps(_record("abc", [_row("two-years", "drift-1", [9.5, 0.5], first=1)])))
    out = tmp_path / "merged.json"
    power.merge([a, b], str(out))
    merged = json.loads(out.read_text())
    (row,) = merged["rows"]
    assert list(row["seeds"]) == ["0", "1", "2"] and [p["file"] for p in row["pooled_from"]] == [
        "a.json",
        "b.json",
    ]
    assert (row["min"], row["median"], row["max"]) == (0.5, 9.0, 9.5)
    assert row["share"]["min"] == pytest.approx(0.05) and row["seeds_above_flat"] == ["0", "1"]
    assert merged["targets"]["two-years_drift-1_worst_seed_share_of_oracle"]["measured"] == pytest.approx(
        0.05
    )
    assert merged["targets"]["two-years_drift-1_seeds_above_flat"]["target"] == 3


def test_merge_refuses_a_seed_that_two_files_ran(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_record("abc", [_row("two-years", "drift-1", [9.0, 8.0])])))
    b.write_text(json.dumps(_record("abc", [_row("two-years", "drift-1", [9.5], first=1)])))
    with pytest.raises(SystemExit, match="seed 1 of one row is in two files .*b.json"):
        power.merge([a, b], str(tmp_path / "merged.json"))


def test_noise_rows_of_different_generator_seeds_stay_apart_in_a_merge(tmp_path):
    rows = [{**_row("plan", "random-walk", [0.0]), "generator_seed": g} for g in (0, 1)]
    assert power.pool_seeds(rows, power._key, power.pool_row) == rows


def test_a_one_seed_run_names_its_seed_by_the_runs_seed_so_calls_split_by_first_seed_join():
    from learner import run_figures

    model = {"net": {**_net(1.5, 0.5, 2.5)["net"], "exposure": 0.4, "turnover_per_year": 9.0}}
    policies = {"model": model, "flat": _net(0.0, 0.0, 0.0), "buy_and_hold": _net(0.3)}
    figures = run_figures({"seed": 2, "stitched": {"policies": policies}})
    assert list(figures["seeds"]) == ["2"] and figures["seeds"]["2"]["ci"] == [0.5, 2.5]


# `bench/power.py run` at a tiny size as a process of its own, queued in the background.
cpu_power_run = background_process("cpu_power_run", "bench-power", lambda folder: [
        sys.executable, str(BENCH / "power.py"), "run", "--shapes", "two-years", "--drifts", "1",
        "--noise", "random-walk", "--seeds", "2", "--noise-seeds", "2", "--epochs", "1", "--device", "cpu",
        "--two-years-bars", "20000", "--two-years-folds", "--train-days 8 --val-days 3 --step-days 3",
        "--work", str(folder / "work"), "--out", str(folder / "power.json")], lambda _: one_thread())  # fmt: skip


@pytest.mark.slow
def test_a_cpu_run_reads_each_rows_figures_from_its_runs_summary(cpu_power_run):
    done, folder = cpu_power_run
    out, work, code = folder / "power.json", folder / "work", done.returncode
    record = json.loads(out.read_text())
    assert record["benchmark"] == "power" and record["commit"] and record["date"] and record["device"]
    assert code == (1 if any(t["measured"] is None for t in record["targets"].values()) else 0)
    assert [(r["shape"], r["data"], len(r["seeds"])) for r in record["rows"]] == [
        ("two-years", "drift-1", 2), ("two-years", "random-walk", 2)]  # fmt: skip
    assert [d["bars"] for d in record["data_sets"]] == [20000, 20000]
    for row in record["rows"]:
        assert row["exit_code"] == 0 and row["flags"] == [
            "--train-days",
            "8",
            "--val-days",
            "3",
            "--step-days",
            "3",
        ]
        summary = json.loads((work / f"run-two-years-{row['data']}-g0-base" / "summary.json").read_text())
        oracle = max(
            summary["stitched"]["policies"][n]["net"]["sharpe"]
            for n in ("ridge_15", "ridge_60", "mlp_15", "mlp_60")
        )
        assert row["feature_oracle"]["sharpe"] == oracle
        for seed, figures in row["seeds"].items():
            assert figures["sharpe"] == summary["seed_spread"]["figures"][seed]["sharpe"]
            assert figures["share_of_oracle"] == (figures["sharpe"] / oracle if oracle > 0 else None)
            assert figures["folds"] == len(summary["folds"])
        flats = [f["selection"]["went_flat"] for f in summary["folds"]]
        assert row["seeds"]["0"]["folds_traded"] == flats.count(False)
    assert set(record["targets"]) == {"two-years_drift-1_worst_seed_share_of_oracle", "two-years_random-walk_seeds_below_flat",
                                      "two-years_random-walk_false_positive_rate", "noise_false_positive_rate"}  # fmt: skip


@pytest.mark.slow
def test_a_second_call_with_resume_reads_the_finished_rows_as_they_are_and_runs_nothing(
    cpu_power_run, tmp_path, monkeypatch
):
    done, folder = cpu_power_run
    first = json.loads((folder / "power.json").read_text())
    monkeypatch.setattr(power.h, "fresh_run", no_process)
    power.main(again_with_resume(done, folder, tmp_path / "again.json"))
    again = json.loads((tmp_path / "again.json").read_text())
    assert [r["read_as_it_was"] for r in again["rows"]] == [True, True]
    for before, after in zip(first["rows"], again["rows"], strict=True):
        assert after["seeds"] == before["seeds"] and after["feature_oracle"] == before["feature_oracle"]


def test_the_table_row_gives_the_oracle_the_seeds_median_and_range_the_share_and_the_folds_that_trade():
    line = power.table([_row("plan", "drift-1", [9.0, 9.5, 8.0])])[-1]
    assert (
        line
        == "| plan | drift-1 | base | 10.00 (mlp_60) | 9.00 [8.00, 9.50] | 90% (80%) | 1, 1, 1 of 3 | 50% | — |"
    )


def test_the_table_row_gives_the_seeds_majority_and_its_share_of_the_oracle():
    row = {**_row("plan", "drift-1", [9.0, 9.5, 8.0]), "majority": {"sharpe": 9.7, "share_of_oracle": 0.97}}
    assert power.table([row])[-1].endswith("| 50% | 9.70 (97%) |")


def test_a_row_pooled_from_several_calls_keeps_each_calls_vote_and_no_vote_of_them_all():
    # Catches: the first call's majority (of its own seeds only) shown as the pooled row's, or a call's lost.
    vote = lambda sharpe: {"sharpe": sharpe, "share_of_oracle": sharpe / 10.0}  # noqa: E731
    first = {**_row("plan", "drift-1", [9.0, 9.5, 8.0]), "majority": vote(9.7)}
    second = {**_row("plan", "drift-1", [9.5, 0.5, 9.0], first=3), "majority": vote(9.2)}
    pooled = power.pool_row([first, second])
    assert pooled["majority"] is None and list(pooled["seeds"]) == ["0", "1", "2", "3", "4", "5"]
    assert [v["sharpe"] for v in pooled["votes"]] == [9.7, 9.2]
    assert power.table([pooled])[-1].endswith("| 9.70 (97%), 9.20 (92%) |")


@pytest.mark.parametrize(
    ("flags", "drifts", "noise"),
    [([], [1.0, 0.5, 0.25, 0.125], ["signal-off", "random-walk"]), (["--drifts", "0.25"], [0.25], []),
     (["--noise", "signal-off"], [], ["signal-off"]), (["--drifts", "--noise", "random-walk"], [], ["random-walk"]),
     (["--drifts", "1", "--noise"], [1.0], [])],
)  # fmt: skip
def test_naming_only_drifts_or_only_noise_selects_only_that_kind(flags, drifts, noise):
    # Catches: a drift-only call that runs every noise set after its drifts (and overruns its device call).
    args = power.parse_args(["run", *flags])
    assert (args.drifts, args.noise) == (drifts, noise)
    assert [name for name, _, _ in power.data_sets(args)] == [power.drift_name(d) for d in drifts] + noise


def test_runs_of_another_first_seed_keep_their_own_folder_in_one_work_folder():
    # Catches: a --resume call for seeds 3-5 reading the run that seeds 0-2 left under the same name.
    assert power.run_tag("plan-drift-1-base", 0) == "plan-drift-1-base"  # earlier work folders still resume
    assert power.run_tag("plan-drift-1-base", 3) != power.run_tag("plan-drift-1-base", 0)
    assert power.run_tag("plan-drift-1-base", 3) != power.run_tag("plan-drift-1-base", 6)
