"""The chart's alert rules: promtool accepts them, and its unit tests show each alert firing and not firing."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support.chart_render import PROMETHEUS_RULE_API, of_kind, render

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "helm" / "foxhunt" / "rules" / "foxhunt-rules.yaml"
RULE_TESTS = ROOT / "tests" / "promtool" / "foxhunt-rules.test.yaml"
CHART_README = ROOT / "helm" / "foxhunt" / "README.md"
RUNBOOK_BASE = "https://github.com/foxhunt/foxhunt/blob/main/helm/foxhunt/README.md"
ALERTS = {
    "FoxhuntRunFailed",
    "FoxhuntWorkflowStepsFailing",
    "FoxhuntNoFoldCompleted",
    "FoxhuntPushFailures",
    "FoxhuntTrialsFailing",
}
RECORDED = {"foxhunt:fold_reset_seconds:max"}


def promtool(*args: str) -> subprocess.CompletedProcess:
    binary = shutil.which("promtool")
    if binary is None:
        raise RuntimeError("promtool not found: apt-get install -y --no-install-recommends prometheus")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60, cwd=ROOT)


def rules() -> list[dict]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def alerts() -> dict[str, dict]:
    return {r["alert"]: r for r in rules() if "alert" in r}


def test_promtool_accepts_the_rule_file():
    result = promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_unit_tests_of_every_alert_pass():
    result = promtool("test", "rules", str(RULE_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_rule_file_defines_every_alert_and_recording_rule():
    assert set(alerts()) == ALERTS
    assert {r["record"] for r in rules() if "record" in r} == RECORDED


def test_a_slow_fold_reset_is_recorded_not_alerted():
    assert not any('phase="reset"' in r["expr"] for r in alerts().values())
    (recorded,) = [r for r in rules() if r.get("record") == "foxhunt:fold_reset_seconds:max"]
    assert 'phase="reset"' in recorded["expr"]


@pytest.mark.parametrize("alert", sorted(ALERTS))
def test_unit_tests_show_the_alert_both_firing_and_not_firing(alert):
    cases = [
        c
        for t in yaml.safe_load(RULE_TESTS.read_text())["tests"]
        for c in t.get("alert_rule_test", [])
        if c["alertname"] == alert
    ]
    assert any(c["exp_alerts"] for c in cases), f"{alert} is never expected to fire"
    assert any(not c["exp_alerts"] for c in cases), f"{alert} is never expected to stay quiet"


def github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings: lower case, spaces to dashes, punctuation dropped."""
    headings = re.findall(r"^#{1,6} (.+)$", markdown, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("alert", sorted(ALERTS))
def test_every_alert_waits_before_firing_and_links_its_runbook_section(alert):
    rule = alerts()[alert]
    assert re.fullmatch(r"[1-9][0-9]*[smh]", rule["for"]), rule.get("for")
    url = rule["annotations"]["runbook_url"]
    assert url == f"{RUNBOOK_BASE}#{alert.lower()}"
    assert alert.lower() in github_anchors(CHART_README.read_text())


def test_a_failed_run_pages_and_the_others_warn_or_inform():
    severities = {name: rule["labels"]["severity"] for name, rule in alerts().items()}
    assert severities.pop("FoxhuntRunFailed") == "critical"
    assert set(severities.values()) <= {"warning", "info"}


def test_the_installed_rules_link_the_runbooks_at_the_configured_base():
    base = "https://git.example.com/ml/foxhunt/-/blob/v1/helm/foxhunt/README.md"
    values = {"monitoring": {"prometheusRule": {"runbookBaseUrl": base}}}
    (rule,) = of_kind(render(values, api_versions=(PROMETHEUS_RULE_API,)), "PrometheusRule").values()
    installed = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r}

    assert {name: r["annotations"]["runbook_url"] for name, r in installed.items()} == {
        name: f"{base}#{name.lower()}" for name in ALERTS
    }
