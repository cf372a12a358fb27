"""The local broker by hand: start, status, stop through the command line, and a restart."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from groupwatch_dev.broker import LocalBroker
from groupwatch_dev.demo.traffic import create_topic

pytestmark = pytest.mark.broker


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groupwatch.cli", "broker", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_start_status_stop_restart() -> None:
    name = "pytest-cli-broker"
    try:
        started = cli("start", "--name", name, "--fresh")
        assert started.returncode == 0, started.stderr
        bootstrap = started.stdout.strip()
        assert bootstrap.startswith("127.0.0.1:")

        status = cli("status", "--name", name)
        assert (status.returncode, status.stdout.strip()) == (0, bootstrap)
        # Starting again is a no-op that reports the same broker.
        again = cli("start", "--name", name)
        assert again.stdout.strip() == bootstrap

        create_topic(bootstrap, "survives-restart", 2)
        assert cli("stop", "--name", name).returncode == 0
        stopped = cli("status", "--name", name)
        assert stopped.returncode == 3 and "not running" in stopped.stderr

        # A restart keeps the data and the address.
        restarted = cli("start", "--name", name)
        assert restarted.stdout.strip() == bootstrap
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            assert "survives-restart" in admin.list_topics()
        finally:
            admin.close()
    finally:
        broker = LocalBroker(name)
        broker.stop()
        shutil.rmtree(broker.dir, ignore_errors=True)
