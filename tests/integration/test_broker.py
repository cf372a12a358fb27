"""The local broker by hand: start, status, stop through the command line, and a restart; each
of the project's Kafka releases (4.3.1, 4.4.0) as the broker."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from groupwatch_dev.broker import KAFKA_VERSIONS, NEWEST_KAFKA_VERSION, LocalBroker, kafka_jars
from groupwatch_dev.demo.traffic import create_topic
from tests.jvm import run_java

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


@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_each_release_runs_as_the_broker_it_names(version: str) -> None:
    # The release's own clients ask the broker for its feature levels: a 4.4.0 broker is
    # formatted at share.version=2 (KIP-1191's dead-letter queue), a 4.3.1 one has no level 2.
    name = f"pytest-release-{version}"
    try:
        started = cli("start", "--name", name, "--fresh", "--kafka-version", version)
        assert started.returncode == 0, started.stderr
        bootstrap = started.stdout.strip()
        out = run_java("groupwatch.oracle.Ping", bootstrap, kafka_version=version, timeout=120)
        client_version, *features = out.split()
        assert client_version == version
        levels = dict(line.split("=") for line in features)
        assert levels["share.version"] == ("2" if version == NEWEST_KAFKA_VERSION else "1")
        state = LocalBroker(name, kafka_version=version).running()
        assert state is not None
        proc_cmd = f"/proc/{state.pid}/cmdline"
        with open(proc_cmd, "rb") as f:
            classpath = f.read().split(b"\0")
        assert str(kafka_jars(version)).encode() + b"/*" in classpath
    finally:
        broker = LocalBroker(name, kafka_version=version)
        broker.stop()
        shutil.rmtree(broker.dir, ignore_errors=True)


def test_an_unknown_release_is_refused() -> None:
    refused = cli("start", "--name", "pytest-release-none", "--kafka-version", "3.9.0")
    assert refused.returncode == 2 and "3.9.0" in refused.stderr
