"""The shipped Prometheus alert rules: valid, documented, and unit-tested with promtool."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.dashboard.tools import need

ALERTS = Path(__file__).resolve().parents[2] / "dashboards" / "alerts"


def test_every_rule_has_a_runbook_and_a_dashboard_link() -> None:
    for rules in ALERTS.glob("*.yml"):
        blocks = re.split(r"\n\s*- alert: ", rules.read_text())[1:]
        assert blocks, rules
        for block in blocks:
            name = block.split()[0]
            assert "runbook:" in block, f"{name} has no runbook"
            assert re.search(r'dashboard: "http://[^"]+"', block), f"{name} has no link"
            assert re.search(r"severity: (critical|warning)", block), name


def test_promtool_checks_the_rules() -> None:
    promtool = need("promtool", "prometheus")
    files = sorted(str(p) for p in ALERTS.glob("*.yml"))
    out = subprocess.run(
        [promtool, "check", "rules", *files], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_promtool_rule_unit_tests_pass() -> None:
    promtool = need("promtool", "prometheus")
    tests = sorted(str(p.name) for p in (ALERTS / "tests").glob("*.yml"))
    assert tests
    out = subprocess.run(
        [promtool, "test", "rules", *tests],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ALERTS / "tests",
    )
    assert out.returncode == 0, out.stdout + out.stderr
