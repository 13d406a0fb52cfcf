"""The chart's Grafana dashboard: it type-checks against @grafana/schema, and every panel query shows a real run."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "helm" / "foxhunt" / "dashboards" / "foxhunt-training.json"
SCHEMA_CHECK = ROOT / "tests" / "grafana_schema"


def load_dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def panel_targets(dashboard: dict) -> list[tuple[str, dict]]:
    return [(p["title"], t) for p in dashboard["panels"] for t in p.get("targets", [])]


def fill_variables(expr: str, run_id: str) -> str:
    """The PromQL Grafana would send with this run selected and every instrument (All: `.*`)."""
    expr = expr.replace("${instrument}", ".*").replace("$instrument", ".*")
    return expr.replace("${run_id}", run_id).replace("$run_id", run_id)


@pytest.fixture(scope="module")
def schema_checker() -> Path:
    """tests/grafana_schema with its pinned npm packages installed (install.sh runs `npm ci`)."""
    if shutil.which("npm") is None:
        raise RuntimeError("npm not found: Node 20 and npm are needed to type-check the dashboard")
    if not (SCHEMA_CHECK / "node_modules" / "@grafana" / "schema").is_dir():
        subprocess.run(["sh", str(SCHEMA_CHECK / "install.sh")], check=True, timeout=300)
    return SCHEMA_CHECK


def run_schema_check(checker: Path, dashboard: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["node", str(checker / "check.mjs"), str(dashboard)], capture_output=True, text=True, timeout=300
    )


def test_dashboard_type_checks_against_grafana_schema(schema_checker):
    result = run_schema_check(schema_checker, DASHBOARD)
    assert result.returncode == 0, result.stdout + result.stderr


def test_schema_check_rejects_a_dashboard_of_the_wrong_shape(schema_checker, tmp_path):
    broken = load_dashboard()
    broken["panels"][0]["gridPos"]["w"] = "wide"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    result = run_schema_check(schema_checker, path)
    assert result.returncode != 0
    assert "not assignable to type 'number'" in result.stdout + result.stderr


def test_schema_version_is_at_least_39():
    assert load_dashboard()["schemaVersion"] >= 39


def test_run_id_variable_lists_the_run_ids_of_foxhunt_run_info_from_the_datasource_variable():
    variables = {v["name"]: v for v in load_dashboard()["templating"]["list"]}
    assert (
        variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    )
    run_id = variables["run_id"]
    assert run_id["type"] == "query"
    assert run_id["query"] == "label_values(foxhunt_run_info, run_id)"
    assert run_id["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


def test_every_panel_queries_the_datasource_variable():
    for title, target in panel_targets(load_dashboard()):
        assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, title


def test_dashboard_has_a_panel_for_each_run_figure():
    exprs = [t["expr"] for _, t in panel_targets(load_dashboard())]
    wanted = {
        "phase seconds by phase": lambda e: "foxhunt_fold_phase_seconds" in e and "by (fold, phase)" in e,
        "reset seconds": lambda e: "foxhunt_fold_phase_seconds" in e and 'phase="reset"' in e,
        "epoch seconds": lambda e: "foxhunt_fold_epoch_seconds" in e,
        "samples per second": lambda e: "foxhunt_fold_samples_per_second" in e,
        "validation Sharpe": lambda e: "foxhunt_fold_validation_sharpe" in e,
        "data load seconds": lambda e: "foxhunt_data_load_seconds" in e,
        "recent runs": lambda e: "foxhunt_run_start_timestamp_seconds" in e and "$run_id" not in e,
        "stitched Sharpe": lambda e: "foxhunt_stitched_validation_sharpe{" in e,
        "stitched Sharpe's standard error": lambda e: "foxhunt_stitched_validation_sharpe_se" in e,
        "each fold's best baseline": lambda e: "foxhunt_fold_best_baseline_sharpe" in e,
        "each fold's validation dates": lambda e: "foxhunt_fold_info" in e and "val_start, val_end" in e,
        "the held-out headline": lambda e: "foxhunt_holdout_net_sharpe{" in e,
        "the held-out headline's interval": lambda e: "foxhunt_holdout_net_sharpe_ci_low{" in e,
    }
    missing = [name for name, matches in wanted.items() if not any(matches(e) for e in exprs)]
    assert missing == []


def test_each_folds_sharpe_is_drawn_beside_its_best_baselines_by_fold():
    panel = next(
        p for p in load_dashboard()["panels"] if p["title"] == "Fold Sharpe against its best baseline"
    )
    exprs = [t["expr"] for t in panel["targets"]]
    assert any(e.startswith("max by (fold) (foxhunt_fold_validation_sharpe{") for e in exprs)
    assert any(e.startswith("max by (fold) (foxhunt_fold_best_baseline_sharpe{") for e in exprs)
    assert panel["options"]["xField"] == "fold" and panel["transformations"][0]["id"] == "merge"


def test_run_id_variable_query_finds_a_real_run(prometheus, pipeline_run):
    run = pipeline_run
    # label_values(metric, label) is Grafana's call of the label values API with a series matcher.
    params = urllib.parse.urlencode({"match[]": "foxhunt_run_info"})
    with urllib.request.urlopen(f"{prometheus.url}/api/v1/label/run_id/values?{params}", timeout=5) as resp:
        values = json.loads(resp.read())["data"]
    assert run.run_id in values


def test_every_panel_query_returns_data_from_a_real_run(prometheus, pipeline_run, exporter_series):
    run = pipeline_run  # exporter_series: its pod's DCGM series and Argo's step counts
    # Prometheus has the run's last push once its end is queryable.
    prometheus.wait_for(f'foxhunt_run_end_timestamp_seconds{{run_id="{run.run_id}"}}', 1)
    empty = []
    for title, target in panel_targets(load_dashboard()):
        result = prometheus.query_since(fill_variables(target["expr"], run.run_id), run.started - 5)
        if not any(r["metric"].get("run_id", run.run_id) == run.run_id and r["values"] for r in result):
            empty.append(f"{title} [{target['refId']}]: {target['expr']}")
    assert empty == []
