"""bench/power_universe.py: the book's figures from a universe run's summary.json (its seeds, flat, its
feature oracle when written, else null), each seed's share of it, and issue 35's targets per row."""

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import power  # noqa: E402
import power_universe as pu  # noqa: E402
from support.background_runs import background_process, one_thread  # noqa: E402
from support.power_calls import again_with_resume, no_process  # noqa: E402


def _net(sharpe: float, low: float, high: float) -> dict:
    return {"sharpe": sharpe, "sharpe_ci_low": low, "sharpe_ci_high": high, "exposure": 0.5,
            "turnover_per_year": 10.0}  # fmt: skip


def _summary(seed_sharpes: dict[str, tuple[float, float, float]], oracle=None) -> dict:
    book = {
        "window": {
            "policies": {
                "model": {"net": _net(*seed_sharpes["0"])},
                "flat": {"net": _net(0.0, 0.0, 0.0)},
                "buy_and_hold": {"net": _net(0.3, -1.0, 1.6)},
            }
        },  # fmt: skip
        "seed_spread": {
            "figures": {s: {"sharpe": v[0], "ci": [v[1], v[2]]} for s, v in seed_sharpes.items()}
        },
    }
    if oracle is not None:
        book["feature_oracle"] = oracle
    return {"book": book, "instruments": []}


def test_the_books_figures_come_from_its_window_and_its_seeds_spread():
    figures = pu.book_figures(_summary({"0": (2.0, 0.5, 3.5), "1": (-1.0, -2.5, -0.1)}))
    assert figures["sharpe"] == 2.0 and figures["ci"] == [0.5, 3.5] and figures["buy_and_hold"] == 0.3
    assert figures["seeds_above_flat"] == ["0"] and figures["seeds_below_flat"] == ["1"]
    assert figures["feature_oracle"] is None and figures["share"] is None  # the run wrote none: null


@pytest.mark.parametrize(
    "written",
    [
        4.0,
        {"name": "ridge_15", "sharpe": 4.0, "ci": [1.0, 7.0]},
        {"net": _net(4.0, 1.0, 7.0)},
        {"stitched_net_sharpe": 4.0},
    ],  # fmt: skip
)
def test_the_books_oracle_is_read_in_any_of_its_shapes_and_each_seed_gets_its_share(written):
    figures = pu.book_figures(_summary({"0": (3.0, 1.0, 5.0), "1": (2.0, 0.2, 3.8)}, oracle=written))
    assert figures["feature_oracle"]["sharpe"] == 4.0
    assert figures["share"]["seeds"] == {"0": 0.75, "1": 0.5} and figures["share"]["min"] == 0.5


def test_the_books_majority_is_read_with_its_share_and_shown_in_the_table():
    summary = _summary({"0": (3.0, 1.0, 5.0), "1": (2.0, 0.2, 3.8), "2": (2.5, 0.5, 4.5)}, oracle=4.0)
    assert pu.book_figures(summary)["majority"] is None
    summary["book"]["seed_spread"]["majority"] = {"members": [0, 1, 2], "sharpe": 3.6, "ci": [1.5, 5.7]}
    figures = pu.book_figures(summary)
    assert figures["majority"]["share_of_oracle"] == pytest.approx(0.9)
    row = {"instruments": 4, "data": "drift-0.25", "variant": "base", "book": figures, "per_instrument": {}}
    assert pu.universe_table([row])[-1].endswith("| 3.60 (90%) |")


def test_an_oracle_without_an_edge_gives_no_share():
    assert pu.shares({"0": {"sharpe": 1.0}}, {"sharpe": 0.0}) is None
    assert pu.shares({"0": {"sharpe": 1.0}}, {"sharpe": -2.0}) is None


def _row(k: int, drift, seeds: dict, oracle=None, variant: str = "base") -> dict:
    return {"instruments": k, "data": "drift-0.25" if drift else "signal-off", "drift": drift, "variant": variant,
            "seeds_asked": 3, "book": pu.book_figures(_summary(seeds, oracle=oracle))}  # fmt: skip


def test_eight_instruments_at_a_quarter_drift_need_every_seeds_book_at_80_percent_and_above_flat():
    good = pu.universe_targets(
        _row(8, 0.25, {"0": (3.4, 0.4, 6.0), "1": (3.3, 0.2, 6.0), "2": (3.6, 1.0, 6.0)}, 4.0)
    )
    assert good["universe_k8_drift-0.25_worst_seed_book_share_of_oracle"]["measured"] == pytest.approx(
        3.3 / 4
    )
    assert good["universe_k8_drift-0.25_worst_seed_book_share_of_oracle"]["met"]
    assert good["universe_k8_drift-0.25_book_seeds_above_flat"]["met"]
    # one seed short of 80% (the median is not the worst), and its interval reaches below flat
    bad = pu.universe_targets(
        _row(8, 0.25, {"0": (3.4, 0.4, 6.0), "1": (3.1, -0.2, 6.0), "2": (3.6, 1.0, 6.0)}, 4.0)
    )
    assert not bad["universe_k8_drift-0.25_worst_seed_book_share_of_oracle"]["met"]
    above = bad["universe_k8_drift-0.25_book_seeds_above_flat"]
    assert (above["measured"], above["target"], above["met"]) == (2, 3, False)


def test_without_the_books_oracle_the_share_target_is_unmeasured():
    targets = pu.universe_targets(_row(8, 0.25, {"0": (3.0, 1.0, 5.0)}))
    entry = targets["universe_k8_drift-0.25_worst_seed_book_share_of_oracle"]
    assert entry["measured"] is None and not entry["met"]


def test_signal_off_counts_the_seeds_whose_book_lies_below_flat_and_other_drifts_have_no_target():
    off = pu.universe_targets(_row(4, None, {"0": (-0.5, -1.0, 0.1), "1": (-2.0, -3.0, -0.4)}))
    assert off["universe_k4_signal-off_book_seeds_below_flat"]["measured"] == 1
    assert not off["universe_k4_signal-off_book_seeds_below_flat"]["met"]
    assert pu.universe_targets(_row(4, 0.25, {"0": (3.0, 1.0, 5.0)}, 4.0)) == {}
    failed = {"instruments": 8, "data": "signal-off", "drift": None, "variant": "fixed", "seeds_asked": 3}
    entry = pu.universe_targets(failed)["universe_k8_signal-off_fixed_book_seeds_below_flat"]
    assert entry["measured"] is None and not entry["met"]


def test_each_instruments_oracle_is_the_best_supervised_baseline_of_its_stitched_record(tmp_path):
    folder = tmp_path / "instruments" / "fx01"
    folder.mkdir(parents=True)
    policies = {n: {"net": _net(s, s - 1, s + 1)} for n, s in
                (("model", 9.0), ("ridge_15", 1.0), ("mlp_60", 2.5), ("buy_and_hold", 7.0))}  # fmt: skip
    (folder / "stitched.json").write_text(json.dumps({"policies": policies}))
    entry = {"name": "fx01", "folds": [0, 1], "stitched_net_sharpe": 1.25,
             "seed_spread": {"figures": {"0": {"sharpe": 1.25}, "1": {"sharpe": 0.5}}}}  # fmt: skip
    found = pu.instrument_figures({"instruments": [entry]}, tmp_path)["fx01"]
    assert found["feature_oracle"] == {"name": "mlp_60", "sharpe": 2.5, "ci": [1.5, 3.5]}
    assert found["share"]["seeds"] == {"0": 0.5, "1": 0.2}


# `bench/power.py run --instruments` at a tiny size as a process of its own, queued in the background.
cpu_universe_power_run = background_process("cpu_universe_power_run", "bench-power-universe", lambda folder: [
        sys.executable, str(BENCH / "power.py"), "run", "--instruments", "1", "2", "--drifts",
        "--noise", "signal-off", "--noise-seeds", "2", "--epochs", "1", "--device", "cpu",
        "--two-years-bars", "20000", "--two-years-folds", "--train-days 8 --val-days 3 --step-days 3",
        "--work", str(folder / "work"), "--out", str(folder / "power.json")], lambda _: one_thread())  # fmt: skip


@pytest.mark.slow
def test_a_cpu_universe_run_reads_the_books_figures_and_each_instruments_from_its_files(
    cpu_universe_power_run,
):
    done, folder = cpu_universe_power_run
    out, work = folder / "power.json", folder / "work"
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(out.read_text())
    rows = record["universe_rows"]
    assert [(r["instruments"], r["data"], r["exit_code"], len(r["book"]["seeds"])) for r in rows] == [
        (1, "signal-off", 0, 2), (2, "signal-off", 0, 2)]  # fmt: skip
    assert sorted(rows[1]["per_instrument"]) == ["fx00", "fx01"] and rows[0]["per_instrument"] == {}
    assert sorted(p.name for p in (work / "universe-signal-off-g0").glob("*.arrow")) == [
        "fx00.arrow",
        "fx01.arrow",
    ]
    assert set(record["targets"]) == {"universe_k1_signal-off_book_seeds_below_flat",
                                      "universe_k2_signal-off_book_seeds_below_flat"}  # fmt: skip


@pytest.mark.slow
def test_a_second_universe_call_with_resume_reads_the_finished_rows_and_runs_nothing(
    cpu_universe_power_run, tmp_path, monkeypatch
):
    done, folder = cpu_universe_power_run
    first = json.loads((folder / "power.json").read_text())["universe_rows"]
    monkeypatch.setattr(power.h, "fresh_run", no_process)
    power.main(again_with_resume(done, folder, tmp_path / "again.json"))
    again = json.loads((tmp_path / "again.json").read_text())["universe_rows"]
    assert [r["read_as_it_was"] for r in again] == [True, True]
    assert [r["book"] for r in again] == [r["book"] for r in first]


def test_a_universe_rows_seeds_from_several_calls_join_and_their_shares_and_sides_are_taken_again():
    def part(seeds: dict, file: str) -> dict:
        row = _row(8, 0.25, {"0": (3.4, 0.4, 6.0)}, 4.0)
        row["book"]["seeds"] = {s: {"sharpe": v[0], "ci": [v[1], v[2]]} for s, v in seeds.items()}
        row["per_instrument"] = {"fx00": {"sharpe": 1.0, "feature_oracle": {"sharpe": 2.0},
                                          "seeds": {s: {"sharpe": v[0] / 2} for s, v in seeds.items()}}}  # fmt: skip
        return {**row, "source": {"file": file}, "wall_seconds": 100.0}

    first = part({"0": (3.4, 0.4, 6.0)}, "a.json")
    rest = part({"1": (2.0, -0.2, 4.0), "2": (3.6, 1.0, 6.0)}, "b.json")
    joined = pu.pool_universe_row([first, rest])
    book = joined["book"]
    assert list(book["seeds"]) == ["0", "1", "2"] and book["seeds_above_flat"] == ["0", "2"]
    assert book["share"]["min"] == pytest.approx(0.5) and joined["wall_seconds"] == 200.0
    assert joined["per_instrument"]["fx00"]["share"]["seeds"] == {"0": 0.85, "1": 0.5, "2": 0.9}
    targets = pu.universe_targets(joined)
    assert targets["universe_k8_drift-0.25_book_seeds_above_flat"]["measured"] == 2
    assert targets["universe_k8_drift-0.25_book_seeds_above_flat"]["target"] == 3


def test_a_universe_row_pooled_from_several_calls_keeps_each_calls_book_vote():
    # Catches: one call's vote shown as the pooled row's vote of all its seeds, or a call's vote lost.
    parts = []
    for first, sharpe in ((0, 3.6), (3, 2.8)):
        row = _row(8, 0.25, {"0": (3.4, 0.4, 6.0)}, 4.0)
        row["book"]["seeds"] = {str(first): {"sharpe": 3.4, "ci": [0.4, 6.0]}}
        row["book"]["majority"] = {"sharpe": sharpe, "share_of_oracle": sharpe / 4.0}
        parts.append({**row, "per_instrument": {}, "source": {"file": f"{first}.json"}})
    book = pu.pool_universe_row(parts)["book"]
    assert book["majority"] is None and [v["sharpe"] for v in book["votes"]] == [3.6, 2.8]
    row = {"instruments": 8, "data": "drift-0.25", "variant": "base", "book": book, "per_instrument": {}}
    assert pu.universe_table([row])[-1].endswith("| 3.60 (90%), 2.80 (70%) |")


def test_the_first_seed_goes_to_the_universe_runs_command(tmp_path):
    from argparse import Namespace

    args = Namespace(epochs=1, first_seed=3, device="cpu")
    command, _ = pu.universe_command(args, tmp_path, [tmp_path / "a", tmp_path / "b"], [], "k2", 1)
    assert command[command.index("--seed") + 1] == "3" and command[command.index("--seeds") + 1] == "1"
