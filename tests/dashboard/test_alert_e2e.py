"""End to end on loopback: a metrics endpoint -> Prometheus (the shipped rules) ->
Alertmanager -> its webhook -> a receiver in this test.

For now the endpoint is a small prometheus_client server with the job's findings counter; it
can be pointed at the real job's endpoint instead (same metric names).
"""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, start_http_server

from tests.dashboard.receivers import Receiver, receiver
from tests.dashboard.tools import free_port, need

RULES = Path(__file__).resolve().parents[2] / "dashboards" / "alerts" / "groupwatch.yml"
DEADLINE = 90.0


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


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[Counter, Receiver, str]]:
    prometheus = need("prometheus", "prometheus")
    alertmanager = need("prometheus-alertmanager", "prometheus-alertmanager")
    registry = CollectorRegistry()
    findings = Counter("groupwatch_findings", "Findings written", ["kind", "severity"],
                       registry=registry)
    findings.labels("assignment_overlap", "critical")  # exported at 0, as the job should
    metrics_port, prom_port, am_port = free_port(), free_port(), free_port()
    server, _ = start_http_server(metrics_port, addr="127.0.0.1", registry=registry)
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
      - targets: ["127.0.0.1:{metrics_port}"]
""")
        am_log, prom_log = tmp_path / "am.log", tmp_path / "prom.log"
        try:
            procs.append(subprocess.Popen(
                [alertmanager, f"--config.file={tmp_path / 'am.yml'}",
                 f"--storage.path={tmp_path / 'am-data'}",
                 f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="],
                stdout=am_log.open("wb"), stderr=subprocess.STDOUT))
            procs.append(subprocess.Popen(
                [prometheus, f"--config.file={tmp_path / 'prom.yml'}",
                 f"--storage.tsdb.path={tmp_path / 'prom-data'}",
                 f"--web.listen-address=127.0.0.1:{prom_port}"],
                stdout=prom_log.open("wb"), stderr=subprocess.STDOUT))
            _wait_ready(f"http://127.0.0.1:{am_port}/-/ready", procs[0], am_log)
            _wait_ready(f"http://127.0.0.1:{prom_port}/-/ready", procs[1], prom_log)
            yield findings, hook, f"http://127.0.0.1:{prom_port}"
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
            server.shutdown()


def test_critical_finding_reaches_the_alertmanager_webhook(
    stack: tuple[Counter, Receiver, str],
) -> None:
    findings, hook, prom = stack
    start = time.monotonic()
    # Let Prometheus see the counter at zero first, then a critical finding arrives.
    while time.monotonic() - start < 30:
        with urllib.request.urlopen(
            f"{prom}/api/v1/query?query=groupwatch_findings_total", timeout=2
        ) as r:
            if b'"assignment_overlap"' in r.read():
                break
        time.sleep(0.3)
    time.sleep(1.5)
    findings.labels("assignment_overlap", "critical").inc()
    while time.monotonic() - start < DEADLINE and not hook.bodies:
        time.sleep(0.2)
    assert hook.bodies, "no webhook from Alertmanager within the deadline"
    body = hook.bodies[0]
    alert = body["alerts"][0]
    assert alert["labels"]["alertname"] == "GroupwatchCriticalFinding"
    assert alert["labels"]["kind"] == "assignment_overlap"
    assert alert["annotations"]["dashboard"].startswith("http://127.0.0.1:8050/")
    assert body["status"] == "firing"
