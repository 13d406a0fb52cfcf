"""The dashboard's "Trials" row: every panel query returns data from a real `foxhunt train --trials` run
pushed to a real Pushgateway and scraped by a real Prometheus.

The row is collapsed (most runs have no trials), so its panels live in the row's own `panels` list;
test_dashboard.py checks the schema of the whole file and the top-level panels against a plain run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support.forked_runs import start_foxhunt
from support.prom_services import unique_run_id

# A real search feeds the panels (15 s of setup): in CI, left out by -m "not slow".
pytestmark = pytest.mark.slow

DASHBOARD = Path(__file__).resolve().parents[2] / "helm" / "foxhunt" / "dashboards" / "foxhunt-training.json"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
TRIAL_ARGS = (
    "--epochs", "1", "--train-days", "5", "--val-days", "2", "--step-days", "2", "--max-folds", "2",
    "--seed", "11", "--device", "cpu", "--trials", "3",
)  # fmt: skip


def trials_row() -> dict:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return next(p for p in panels if p["type"] == "row" and p["title"] == "Trials")


def row_targets() -> list[tuple[str, dict]]:
    return [(p["title"], t) for p in trials_row()["panels"] for t in p["targets"]]


def test_the_trials_row_is_collapsed_below_the_run_panels_and_holds_the_trial_panels():
    row = trials_row()
    assert row["collapsed"] is True and row["panels"]
    others = [p for p in json.loads(DASHBOARD.read_text())["panels"] if p["id"] != row["id"]]
    assert row["gridPos"]["y"] >= max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in others)
    ids = [p["id"] for p in others] + [row["id"]] + [p["id"] for p in row["panels"]]
    assert len(ids) == len(set(ids))


def test_every_trials_panel_queries_the_datasource_variable_for_the_selected_run():
    for title, target in row_targets():
        assert target["datasource"] == DATASOURCE, title
        assert 'run_id="$run_id"' in target["expr"], title


def test_the_trials_row_shows_objectives_states_best_and_progress():
    exprs = [t["expr"] for _, t in row_targets()]
    wanted = {
        "trial objectives": lambda e: "foxhunt_trial_objective" in e,
        "trials ended by state": lambda e: "foxhunt_trials_total" in e and "by (state)" in e,
        "best objective so far": lambda e: "foxhunt_study_best_objective" in e,
        "finished trials": lambda e: "foxhunt_study_finished_trials" in e,
        "planned trials": lambda e: "foxhunt_study_planned_trials" in e,
        "trial seconds": lambda e: "foxhunt_trial_duration_seconds" in e,
    }
    assert [name for name, matches in wanted.items() if not any(map(matches, exprs))] == []


@pytest.fixture(scope="module")
def trials_run(prometheus, pushgateway, tiny_fxcache, tiny_params, tmp_path_factory, monkeypatch_module):
    """A real three-trial search that pushed to the session Pushgateway: (run id, start time)."""
    run_id = unique_run_id("trials")
    out = tmp_path_factory.mktemp("trials-dashboard") / "out"
    started = time.time()
    argv = ["train", "--fxcache", str(tiny_fxcache), "--out", str(out), "--hyperopt-params", str(tiny_params),
            *TRIAL_ARGS, "--pushgateway", pushgateway, "--run-id", run_id]  # fmt: skip
    # A process of its own, as a pod runs it: no torch or Optuna state left by earlier tests (forked from
    # one that has only imported them, tests/support/forked_runs.py).
    console = out.parent / "console.log"
    assert start_foxhunt(argv, console).wait(timeout=600) == 0, console.read_text()[-6000:]
    return run_id, started


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        for name in ("FOXHUNT_PUSHGATEWAY", "FOXHUNT_RUN_ID", "FOXHUNT_TRIAL_WORKER"):
            patch.delenv(name, raising=False)
        yield patch


def wait_for_the_final_push(prometheus, run_id: str) -> None:
    """Until Prometheus has scraped the run's last push (its end time is 0 before that)."""
    prometheus.wait_for(f'foxhunt_run_end_timestamp_seconds{{run_id="{run_id}"}} > 0', 1)


def test_every_trials_panel_query_returns_data_from_a_real_search(prometheus, trials_run):
    run_id, started = trials_run
    wait_for_the_final_push(prometheus, run_id)
    empty = []
    for title, target in row_targets():
        expr = target["expr"].replace("$run_id", run_id)
        result = prometheus.query_since(expr, started - 5)
        if not any(r["metric"].get("run_id", run_id) == run_id and r["values"] for r in result):
            empty.append(f"{title} [{target['refId']}]: {expr}")
    assert empty == []


def test_the_search_pushed_each_trial_and_the_study_totals(prometheus, trials_run):
    run_id, _ = trials_run
    wait_for_the_final_push(prometheus, run_id)
    objectives = prometheus.query(f'foxhunt_trial_objective{{run_id="{run_id}"}}')
    assert sorted(r["metric"]["trial"] for r in objectives) == ["0", "1", "2"]
    ended = {r["metric"]["state"]: float(r["value"][1]) for r in prometheus.query(
        f'foxhunt_trials_total{{run_id="{run_id}"}}')}  # fmt: skip
    assert ended == {"complete": 3.0, "pruned": 0.0, "failed": 0.0}
    best = float(prometheus.query(f'foxhunt_study_best_objective{{run_id="{run_id}"}}')[0]["value"][1])
    assert best == pytest.approx(max(float(r["value"][1]) for r in objectives))
