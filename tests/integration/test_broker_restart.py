"""The broker restarts under a running job: the job keeps running, picks up what arrives after
the restart, and still ends with exactly the scenario library's findings.  It then stops
cleanly on SIGTERM, as a service manager would stop it, and its tables equal, table by table,
those of a run over the same records that no restart interrupted: nothing lost or duplicated
when ``__consumer_offsets``' leaders come back with new leader epochs."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from groupwatch_dev import SHORT_LIVED_JVM
from groupwatch_dev.broker import LocalBroker
from groupwatch_dev.demo.traffic import create_topic, replay
from groupwatch_dev.scenarios.builder import OFFSETS_PARTITIONS, load, raw_records, scenario_files
from tests.integration.test_job_scenarios import namespaced, scenario_groups
from tests.integration.test_long_run_faults import same_tables
from tests.scenarios.test_scenarios import check

pytestmark = [pytest.mark.broker, pytest.mark.spark]

MIRROR = "restart-mirror"
WAIT = 900.0  # an upper bound: a loaded machine takes minutes to start Spark


@pytest.fixture
def own_broker() -> Iterator[LocalBroker]:
    """A broker of this test's own: restarting the session's broker would disturb others."""
    local = LocalBroker(f"pytest-restart-{os.getpid()}", jvm_options=SHORT_LIVED_JVM)
    local.start(fresh=True)
    yield local
    local.stop()
    shutil.rmtree(local.dir, ignore_errors=True)


def _findings(root: Path) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    path = root / "findings"
    # The log folder appears before the table's first commit: a poll in between saw a table
    # without commits. Commit files are renamed into place whole, so one is enough to read.
    if not any((path / "_delta_log").glob("*.json")):
        return []
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    for row in rows:
        row["evidence"] = json.loads(row["evidence"])
    return rows


def _wait(what: str, ready: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + WAIT
    while not ready():
        if proc.poll() is not None:
            pytest.fail(
                f"the job exited ({proc.returncode}) waiting for {what}:\n"
                + log.read_text()[-4000:]
            )
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} after {WAIT}s:\n" + log.read_text()[-4000:])
        time.sleep(0.5)


def test_job_survives_a_broker_restart(own_broker: LocalBroker, tmp_path: Path) -> None:
    docs = {p.stem: namespaced(load(p), f"{p.stem}.") for p in scenario_files()}
    names = sorted(docs)
    before, after = names[: len(names) // 2], names[len(names) // 2 :]
    counts = {t: n for doc in docs.values() for t, n in (doc.get("partitions") or {}).items()}
    bootstrap = own_broker.start().bootstrap  # already running: returns its state
    create_topic(bootstrap, MIRROR, OFFSETS_PARTITIONS)
    for name in before:
        replay(bootstrap, MIRROR, raw_records(docs[name]))

    delta = tmp_path / "delta"
    settings = [
        f"source.bootstrap_servers={bootstrap}",
        f"source.topic={MIRROR}",
        f"delta.root={delta}",
        f"checkpoint.root={tmp_path / 'checkpoints'}",
        "job.trigger_interval=1 second",
        "source.wait_log_seconds=2",
        "metrics.port=0",
        "alerts.rules=",
        "spark.master=local[2]",
        "spark.shuffle_partitions=2",
        f"detect.partitions={json.dumps(counts)}",
        "detect.partitions_since=always",  # the records are older than the job
    ]
    exe = Path(sys.executable).parent / "groupwatch"
    args = [a for s in settings for a in ("--set", s)]
    log = tmp_path / "job.log"
    proc = subprocess.Popen(
        [str(exe), "run", *args],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:

        def seen(group_names: list[str]) -> Callable[[], bool]:
            wanted = {n for n in group_names if docs[n]["expect"]}

            def ready() -> bool:
                groups = {f["group"] for f in _findings(delta)}
                return all(groups & scenario_groups(docs[n]) for n in wanted)

            return ready

        _wait("findings of the first half", seen(before), proc, log)
        # Lose the broker once that batch has ended, so that the loss meets the query asking
        # Kafka for offsets (on a loaded machine a batch can outlast the whole outage).
        ended = re.compile(r"batch 0: \d+ records")
        _wait("the first batch's end", lambda: bool(ended.search(log.read_text())), proc, log)
        own_broker.stop()
        lost = time.monotonic()
        time.sleep(5)  # the job's reader now fails to reach the broker for a few triggers
        assert proc.poll() is None, log.read_text()[-4000:]
        state = own_broker.start()
        outage = time.monotonic() - lost
        assert state.bootstrap == bootstrap  # same ports: the job's settings still hold
        for name in after:
            replay(bootstrap, MIRROR, raw_records(docs[name]))
        _wait("findings of the second half", seen(after), proc, log)

        proc.send_signal(signal.SIGTERM)  # to the driver only: it stops the query itself
        assert proc.wait(120) == 0, log.read_text()[-4000:]
    finally:
        # The whole session, even after the driver exited: nothing of this job may outlive
        # the test and load the ones after it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    # The same records, read once by a job no restart interrupted (later --set wins).
    clean = tmp_path / "clean"
    fresh = [f"delta.root={clean / 'delta'}", f"checkpoint.root={clean / 'checkpoints'}"]
    once = subprocess.run(
        [str(exe), "run", "--once", *args, *[a for s in fresh for a in ("--set", s)]],
        capture_output=True,
        text=True,
        timeout=WAIT * 2,
        check=False,
    )
    assert once.returncode == 0, (once.stdout + once.stderr)[-4000:]
    same_tables(clean, tmp_path)

    found = _findings(delta)
    for doc in docs.values():
        check(doc, [f for f in found if f["group"] in scenario_groups(doc)])
    text = log.read_text()
    assert "stopping" in text
    # The lost broker is said once per source.wait_log_seconds, not by the Kafka client's
    # reconnect warnings several times a second.
    waits = [line for line in text.splitlines() if "no answer from Kafka" in line]
    assert 1 <= len(waits) <= outage / 2 + 2, text[-4000:]
    assert "answers again" in text, text[-4000:]
    assert "NetworkClient" not in text, text[-4000:]
    # Spark's listener bus reaches the Python listener after the stop: no Py4J stack trace.
    assert "threw an exception" not in text, text[-4000:]
