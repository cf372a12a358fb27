"""End to end on loopback: the running job's own metrics endpoint -> Prometheus (the shipped
rules) -> Alertmanager -> its webhook -> a receiver in this test.

The job is the session's ``real_job`` (tests/dashboard/realjob.py): ``groupwatch run`` on a
mirror topic of the test broker. Prometheus first scrapes its findings counter at zero; then
KAFKA-7026 is replayed into the mirror, the job writes the overlap finding and counts it, and
the critical-finding rule must fire through Alertmanager to the receiver.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.realjob import RealJob
from tests.dashboard.receivers import Receiver, receiver
from tests.dashboard.tools import free_port, need

pytestmark = [pytest.mark.broker, pytest.mark.spark]
RULES = Path(__file__).resolve().parents[2] / "dashboards" / "alerts" / "groupwatch.yml"
#: From the finding in the table to the webhook: scrape (1 s), rule evaluation (1 s) and
#: Alertmanager's group_wait (1 s), with room for a loaded two-core machine.
DEADLINE = 90.0
OVERLAP_SERIES = 'groupwatch_findings_total{kind="assignment_overlap",severity="critical"}'


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            pytest.fail(f"{url} exited early:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"{url} not ready in {timeout}s:\n{log.read_text()[-3000:]}")


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def _query(prom: str, expr: str) -> list[dict[str, Any]]:
    body = _get(f"{prom}/api/v1/query?query={urllib.parse.quote(expr)}")
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def _active_alerts(prom: str, name: str) -> list[dict[str, Any]]:
    return [
        a
        for a in _get(f"{prom}/api/v1/alerts")["data"]["alerts"]
        if a["labels"].get("alertname") == name
    ]


def _scraped_value(metrics_url: str, series: str) -> float | None:
    """The value of one series on the job's own endpoint, as Prometheus would scrape it."""
    with urllib.request.urlopen(metrics_url, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(series + " "):
                return float(line.rsplit(" ", 1)[1])
    return None


@pytest.fixture
def stack(real_job: RealJob, tmp_path: Path) -> Iterator[tuple[RealJob, Receiver, str]]:
    prometheus = need("prometheus", "prometheus")
    alertmanager = need("prometheus-alertmanager", "prometheus-alertmanager")
    prom_port, am_port = free_port(), free_port()
    procs: list[subprocess.Popen[bytes]] = []
    with receiver("ok") as hook:
        (tmp_path / "am.yml").write_text(f"""
route:
  receiver: test
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: test
    webhook_configs:
      - url: "{hook.url}"
        send_resolved: false
""")
        (tmp_path / "prom.yml").write_text(f"""
global:
  scrape_interval: 1s
  evaluation_interval: 1s
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:{am_port}"]
rule_files: ["{RULES}"]
scrape_configs:
  - job_name: groupwatch
    static_configs:
      - targets: ["127.0.0.1:{real_job.metrics_port}"]
""")
        am_log, prom_log = tmp_path / "am.log", tmp_path / "prom.log"
        try:
            procs.append(
                subprocess.Popen(
                    [
                        alertmanager,
                        f"--config.file={tmp_path / 'am.yml'}",
                        f"--storage.path={tmp_path / 'am-data'}",
                        f"--web.listen-address=127.0.0.1:{am_port}",
                        "--cluster.listen-address=",
                    ],
                    stdout=am_log.open("wb"),
                    stderr=subprocess.STDOUT,
                )
            )
            procs.append(
                subprocess.Popen(
                    [
                        prometheus,
                        f"--config.file={tmp_path / 'prom.yml'}",
                        f"--storage.tsdb.path={tmp_path / 'prom-data'}",
                        f"--web.listen-address=127.0.0.1:{prom_port}",
                    ],
                    stdout=prom_log.open("wb"),
                    stderr=subprocess.STDOUT,
                )
            )
            _wait_ready(f"http://127.0.0.1:{am_port}/-/ready", procs[0], am_log)
            _wait_ready(f"http://127.0.0.1:{prom_port}/-/ready", procs[1], prom_log)
            yield real_job, hook, f"http://127.0.0.1:{prom_port}"
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()


def test_critical_finding_reaches_the_alertmanager_webhook(
    stack: tuple[RealJob, Receiver, str],
) -> None:
    job, hook, prom = stack
    # Prometheus must be scraping the job itself: target up, the overlap series present.
    start = time.monotonic()
    before: list[dict[str, Any]] = []
    while time.monotonic() - start < 60 and not before:
        up = _query(prom, 'up{job="groupwatch"} == 1')
        before = _query(prom, OVERLAP_SERIES) if up else []
        if not before:
            time.sleep(0.5)
    assert before, "Prometheus did not scrape the job's findings counter"
    if float(before[0]["value"][1]) == 0:
        # The counter sits at zero before the incident: nothing may fire yet. A few rule
        # evaluations, then the negative check.
        time.sleep(3)
        assert not _active_alerts(prom, "GroupwatchCriticalFinding")
        assert not hook.bodies
    # Otherwise an earlier test already replayed the incident; the rule's "appeared above
    # zero" branch must fire all the same.

    job.incident()  # KAFKA-7026 through the job until its overlap finding is in Delta
    # The batch counts its findings once all of its tables are written, a moment after the
    # findings table itself.
    deadline = time.monotonic() + DEADLINE
    value = _scraped_value(job.metrics_url, OVERLAP_SERIES)
    while time.monotonic() < deadline and not (value and value >= 1):
        time.sleep(0.5)
        value = _scraped_value(job.metrics_url, OVERLAP_SERIES)
    assert value is not None and value >= 1, f"the job did not count the finding: {value}"

    alert: dict[str, Any] | None = None
    while time.monotonic() < deadline and alert is None:
        for body in list(hook.bodies):
            for a in body["alerts"]:
                if a["labels"].get("kind") == "assignment_overlap":
                    alert, firing = a, body
        if alert is None:
            time.sleep(0.2)
    assert alert is not None, (
        f"no webhook for assignment_overlap within {DEADLINE:.0f}s; received {hook.bodies}; "
        f"Prometheus alerts {_active_alerts(prom, 'GroupwatchCriticalFinding')}"
    )
    assert firing["status"] == "firing"
    assert alert["status"] == "firing"
    assert alert["labels"]["alertname"] == "GroupwatchCriticalFinding"
    assert alert["labels"]["severity"] == "critical"
    assert alert["annotations"]["dashboard"].startswith("http://127.0.0.1:8050/")
    # What Prometheus stored came from the job's endpoint and shows the increase.
    after = _query(prom, OVERLAP_SERIES)
    assert after and float(after[0]["value"][1]) >= 1
    assert after[0]["metric"]["instance"] == f"127.0.0.1:{job.metrics_port}"
