"""The shipped alerting rules (deploy/prometheus/) are valid, every one is unit-tested with
synthetic series (rules_test.yml, by promtool itself), and every one's runbook is a section of
docs/operations.md."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
PROMETHEUS = ROOT / "deploy/prometheus"
OPERATIONS = ROOT / "docs/operations.md"


def promtool(*args: str) -> str:
    done = subprocess.run(
        ["promtool", *args], cwd=PROMETHEUS, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def alerts() -> list[dict[str, object]]:
    rules = yaml.safe_load((PROMETHEUS / "rules.yml").read_text())
    return [rule for group in rules["groups"] for rule in group["rules"] if "alert" in rule]


def test_rules_and_configuration_are_valid() -> None:
    assert "SUCCESS: 14 rules found" in promtool("check", "rules", "rules.yml")
    promtool("check", "config", "prometheus.yml")


def test_every_rule_passes_its_unit_tests() -> None:
    assert "SUCCESS" in promtool("test", "rules", "rules_test.yml")


def test_every_alert_is_unit_tested() -> None:
    tested = {
        check["alertname"]
        for test in yaml.safe_load((PROMETHEUS / "rules_test.yml").read_text())["tests"]
        for check in test["alert_rule_test"]
        if check.get("exp_alerts")
    }
    assert {str(rule["alert"]) for rule in alerts()} <= tested


def test_every_runbook_is_a_section_of_the_operations_guide() -> None:
    # GitHub's anchor of a heading: lower case, spaces to dashes, punctuation dropped.
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.+)$", OPERATIONS.read_text(), re.MULTILINE)
    }
    for rule in alerts():
        annotations = rule["annotations"]
        assert isinstance(annotations, dict)
        page, _, anchor = annotations["runbook"].partition("#")
        assert page == "docs/operations.md"
        assert anchor in anchors, f"{rule['alert']}: no section #{anchor}"
