"""The chart's alert rules: promtool accepts them, and its unit tests show each alert firing and not firing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "helm" / "foxhunt" / "rules" / "foxhunt-rules.yaml"
RULE_TESTS = ROOT / "tests" / "promtool" / "foxhunt-rules.test.yaml"
ALERTS = {
    "FoxhuntSlowFoldTransition",
    "FoxhuntNoFoldCompleted",
    "FoxhuntPushFailures",
    "FoxhuntTrialsFailing",
}


def promtool(*args: str) -> subprocess.CompletedProcess:
    binary = shutil.which("promtool")
    if binary is None:
        raise RuntimeError("promtool not found: apt-get install -y --no-install-recommends prometheus")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_promtool_accepts_the_rule_file():
    result = promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_unit_tests_of_every_alert_pass():
    result = promtool("test", "rules", str(RULE_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_rule_file_defines_every_alert():
    rules = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]
    assert {r["alert"] for r in rules} == ALERTS


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
