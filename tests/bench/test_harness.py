"""bench/harness.py: targets met in the right direction, medians never best-of, failed runs left out,
provenance from git or FOXHUNT_GIT_COMMIT, a fresh process timed and its summary.json read."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import harness as h  # noqa: E402
import page_cache  # noqa: E402


def test_a_seconds_target_is_met_at_or_under_it_and_a_throughput_at_or_over_it():
    assert h.target(25.0, 25.0)["met"] and not h.target(25.1, 25.0)["met"]
    assert h.target(1.5, 1.5, higher=True)["met"] and not h.target(1.49, 1.5, higher=True)["met"]
    assert h.target(0.5, 1.5, higher=True) == {
        "measured": 0.5, "target": 1.5, "met": False, "higher_is_better": True, "how": ""
    }  # fmt: skip


def test_a_figure_not_measured_never_meets_its_target():
    assert h.target(None, 25.0)["met"] is False and h.target(None, 1.5, higher=True)["met"] is False


def test_the_spread_is_the_median_of_the_values_that_exist_not_the_best():
    assert h.spread([30.0, 20.0, None, 40.0, 25.0]) == {"n": 4, "median": 27.5, "min": 20.0, "max": 40.0}
    assert h.spread([None]) == {"n": 0, "median": None, "min": None, "max": None}


def test_a_failed_run_never_counts_in_the_medians():
    runs = [{"exit_code": 0, "wall_seconds": 30.0}, {"exit_code": 0, "wall_seconds": 32.0},
            {"exit_code": 1, "wall_seconds": 1.0}, {"exit_code": 0, "status": "failed", "wall_seconds": 2.0}]  # fmt: skip
    assert h.medians(runs, ["wall_seconds"])["wall_seconds"] == {
        "n": 2,
        "median": 31.0,
        "min": 30.0,
        "max": 32.0,
    }


def test_the_commit_set_in_the_environment_is_used_and_its_dirtiness_is_unknown(monkeypatch):
    monkeypatch.setenv("FOXHUNT_GIT_COMMIT", "0123456789abcdef")
    assert h.git_commit() == ("0123456789abcdef", None)


def test_the_commit_is_heads_and_an_uncommitted_change_flags_the_tree_dirty(monkeypatch, tmp_path):
    monkeypatch.delenv("FOXHUNT_GIT_COMMIT", raising=False)
    monkeypatch.setattr(h, "ROOT", tmp_path)
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x.invalid",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x.invalid", "PATH": "/usr/bin:/bin"}  # fmt: skip
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", "-C", str(tmp_path), *args], env=env, check=True)
    head = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout
    assert h.git_commit() == (head.strip(), False)
    (tmp_path / "new.py").write_text("x = 1\n")
    assert h.git_commit() == (head.strip(), True)


def test_the_default_name_says_benchmark_device_day_commit_and_dirtiness():
    record = {"benchmark": "plan_shape", "commit": "0123456789abcdef", "dirty": True, "device": "NVIDIA H200",
              "device_type": "cuda", "date": "2026-12-04T10:00:00+00:00"}  # fmt: skip
    assert h.default_out(record).name == "plan_shape-h200-2026-12-04-0123456-dirty.json"
    record.update(dirty=None, device_type="cpu")
    assert h.default_out(record, "on").name == "plan_shape-on-cpu-2026-12-04-0123456.json"
    assert h.default_out(record).parent == h.RESULTS


def _fold(fold: int, rows: int, epoch_seconds: list[float], fold_seconds: float) -> dict:
    phases = dict.fromkeys(
        ("reset", "normalize", "collect", "train", "select", "validate", "checkpoint"), 0.25
    )
    epochs = [{"collect_seconds": s / 2, "train_seconds": s / 2, "val_sharpe": 0.0} for s in epoch_seconds]
    return {"fold": fold, "train_start": 0, "train_end": rows, "epochs": epochs, "phases": phases,
            "fold_seconds": fold_seconds}  # fmt: skip


def test_a_fresh_process_is_timed_and_its_summary_read(tmp_path):
    summary = {"status": "succeeded", "run_seconds": 9.0, "data_load_seconds": 0.5,
               "folds": [_fold(0, 100, [0.1, 0.3, 0.2], 3.0), _fold(1, 200, [0.4, 0.6, 0.5], 4.0)]}  # fmt: skip
    written = tmp_path / "summary.json"
    script = f"import json, time; time.sleep(0.2); open({str(written)!r}, 'w').write({json.dumps(summary)!r})"
    record = h.fresh_run([sys.executable, "-c", script], tmp_path / "pod", 60, summary=written)
    assert record["exit_code"] == 0 and record["wall_seconds"] >= 0.2
    assert record["epoch_seconds_biggest_fold"] == pytest.approx(0.5)  # the median epoch of the 200-row fold
    assert record["outside_folds_seconds"] == pytest.approx(2.0)
    assert record["untimed_seconds_total"] == pytest.approx((3.0 - 1.75) + (4.0 - 1.75))
    assert (tmp_path / "pod" / "console.log").exists()


def test_a_process_at_its_limit_is_asked_to_stop_before_it_is_killed(tmp_path):
    # A run answers SIGTERM by stopping at its next boundary with its folds kept: a later call resumes it.
    script = ("import signal, sys, time\n"
              "signal.signal(signal.SIGTERM, lambda *_: (print('asked to stop', flush=True), sys.exit(143)))\n"
              "time.sleep(30)")  # fmt: skip
    record = h.fresh_run([sys.executable, "-c", script], tmp_path / "pod", 3, summary=tmp_path / "s.json")
    assert record["exit_code"] == "timeout" and "asked to stop" in record["error_tail"]
    assert record["wall_seconds"] < 10


def test_a_process_that_ignores_the_stop_is_killed_when_the_grace_is_up(tmp_path):
    script = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(30)"
    record = h.fresh_run([sys.executable, "-c", script], tmp_path / "pod", 3)
    assert record["exit_code"] == "timeout" and record["wall_seconds"] < 10


def test_a_process_that_finishes_well_after_the_stop_signal_counts_as_a_whole_run(tmp_path):
    # It finishes its work when asked to stop (a run in its last step) and exits 0 inside the grace.
    script = ("import signal, time\nasked = []\nsignal.signal(signal.SIGTERM, lambda *_: asked.append(1))\n"
              "while not asked:\n    time.sleep(0.02)")  # fmt: skip
    record = h.fresh_run([sys.executable, "-c", script], tmp_path / "pod", 5)
    assert record["exit_code"] == 0 and 4 < record["wall_seconds"] < 6


def test_without_resume_a_rows_earlier_run_is_removed_for_a_fresh_one(tmp_path):
    out = tmp_path / "run"
    (out / "fold_0").mkdir(parents=True)
    (out / "manifest.json").write_text("{}")
    assert not h.kept_run(out, resume=False) and not out.exists()
    assert h.resumed_run(out, resume=False) == {}


@pytest.mark.parametrize("status, finished", [("succeeded", True), ("completed", True),
                                              ("interrupted", False), ("failed", False), (None, False)])  # fmt: skip
def test_with_resume_only_a_finished_run_is_read_as_it_is_and_any_other_is_kept_for_the_command(
    tmp_path, status, finished
):
    out = tmp_path / "run"
    out.mkdir()
    (out / "manifest.json").write_text("{}")
    if status:
        (out / "summary.json").write_text(json.dumps({"status": status}))
    assert h.kept_run(out, resume=True) is finished and (out / "manifest.json").exists()
    assert h.resumed_run(out, resume=True) == {"resumed": True}


def test_a_process_that_fails_keeps_its_error_and_no_figures(tmp_path):
    script = "import sys; print('boom', file=sys.stderr); sys.exit(3)"
    record = h.fresh_run([sys.executable, "-c", script], tmp_path / "pod", 60, summary=tmp_path / "s.json")
    assert record["exit_code"] == 3 and "boom" in record["error_tail"] and "run_seconds" not in record


def test_a_folds_untimed_seconds_are_outside_its_phases_and_a_zero_sharpe_is_a_diagnosed_epoch():
    fold = _fold(0, 100, [0.1, 0.2], 4.25)
    fold["epochs"][0]["val_sharpe"] = None
    figures = h.fold_figures(fold)
    assert figures["diagnosed_epochs"] == 1 and figures["untimed_seconds"] == pytest.approx(2.5)
    assert figures["transition_seconds"] == 0.5


def test_a_file_just_read_is_resident_and_evict_reports_what_mincore_sees(tmp_path, monkeypatch):
    monkeypatch.setattr(page_cache, "_drop_all_caches", lambda: False)  # never the whole machine's cache here
    path = tmp_path / "blob"
    path.write_bytes(np.random.default_rng(0).bytes(1 << 20))
    path.read_bytes()
    assert page_cache.resident_fraction(path) == 1.0
    done = page_cache.evict(path)
    assert done["resident_before"] == 1.0
    assert done["resident_after"] == page_cache.resident_fraction(path)
    assert done["effective"] == (done["resident_after"] <= 0.01)
