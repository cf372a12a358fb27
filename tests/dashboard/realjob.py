"""The real streaming job, once for the dashboard tests that need its tables or metrics.

``groupwatch run`` runs as a subprocess (continuous trigger, its own metrics endpoint, the
notifier off) against a fresh mirror topic on the session's broker.  The mirror starts empty;
:meth:`RealJob.incident` replays KAFKA-7026 into it on first use and waits until the job has
written the overlap finding.  Replaying on demand (rather than before the job starts) lets the
alert test have Prometheus scrape the findings counter at zero first and then see it rise, as
it would in production.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from groupwatch_dev.demo.traffic import create_topic, replay
from groupwatch_dev.scenarios.builder import OFFSETS_PARTITIONS, load, raw_records
from tests.dashboard.tools import free_port

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "src" / "groupwatch_dev" / "scenarios" / "incidents" / "kafka_7026.json"
#: The scenario's group, and the partition it hands to two members in generation 4.
GROUP = "kafka-7026"
OVERLAP_GENERATION = 4
OVERLAP = ("test", 0)
#: Spark start-up and the first batches (Python workers, first Delta commits) on two shared
#: cores are slow; these bound the waits without making a healthy run wait for them.
START_TIMEOUT = 240.0
FINDING_TIMEOUT = 240.0


class RealJob:
    """A running ``groupwatch run`` process and where it writes."""

    def __init__(self, bootstrap: str, workdir: Path) -> None:
        self.bootstrap = bootstrap
        self.topic = f"groupwatch-test-mirror-{uuid.uuid4().hex[:8]}"
        self.delta_root = workdir / "delta"
        self.checkpoint_root = workdir / "checkpoints"
        self.log = workdir / "job.log"
        self.metrics_port = free_port()
        self.metrics_url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        self.proc: subprocess.Popen[bytes] | None = None
        self._replayed = False

    # -- process ---------------------------------------------------------------------------
    def start(self) -> None:
        doc = load(SCENARIO)
        # 50 partitions like __consumer_offsets: each record goes to its coordinator partition.
        create_topic(self.bootstrap, self.topic, OFFSETS_PARTITIONS)
        exe = Path(sys.executable).parent / "groupwatch"
        settings = [
            f"source.bootstrap_servers={self.bootstrap}",
            f"source.topic={self.topic}",
            f"delta.root={self.delta_root}",
            f"checkpoint.root={self.checkpoint_root}",
            f"metrics.port={self.metrics_port}",
            "job.trigger_interval=1 second",
            "alerts.rules=",
            "validation.every_n_batches=1",
            "spark.shuffle_partitions=2",
            f"detect.partitions={json.dumps(doc.get('partitions') or {})}",
            "detect.partitions_since=always",  # the records are older than the job
        ]
        args = [str(exe), "run"]
        for s in settings:
            args += ["--set", s]
        # Its own session, so teardown can stop the Python driver and its JVM together.
        self.proc = subprocess.Popen(
            args,
            cwd=ROOT,
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.wait_for(self._metrics_up, START_TIMEOUT, "the job's metrics endpoint")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def log_tail(self, chars: int = 6000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no job log)"

    def wait_for(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``ready`` until true; fail with the job's log if the job exits or time runs out."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc is not None and self.proc.poll() is not None:
                pytest.fail(
                    f"the job exited with {self.proc.returncode} while waiting for {what}:\n"
                    f"{self.log_tail()}"
                )
            if ready():
                return
            time.sleep(1.0)
        pytest.fail(f"no {what} within {timeout:.0f}s; the job's log:\n{self.log_tail()}")

    def _metrics_up(self) -> bool:
        try:
            with urllib.request.urlopen(self.metrics_url, timeout=2) as r:
                return r.status == 200 and b"groupwatch_findings_total" in r.read()
        except OSError:
            return False

    # -- data ------------------------------------------------------------------------------
    def table(self, name: str) -> list[dict[str, Any]]:
        """A Delta table the job wrote, as rows (empty while the job has not created it)."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            rows: list[dict[str, Any]] = (
                DeltaTable(str(self.delta_root / name)).to_pyarrow_table().to_pylist()
            )
        except TableNotFoundError:
            return []
        return rows

    def overlap_findings(self) -> list[dict[str, Any]]:
        return [
            f
            for f in self.table("findings")
            if f["kind"] == "assignment_overlap"
            and f["group"] == GROUP
            and f["generation"] == OVERLAP_GENERATION
            and (f["topic"], f["partition"]) == OVERLAP
        ]

    def incident(self) -> str:
        """Replay KAFKA-7026 once and wait for the job's overlap finding; returns the group."""
        if not self._replayed:
            # Each record keeps its coordinator partition and the incident's own timestamps.
            replay(self.bootstrap, self.topic, raw_records(load(SCENARIO)))
            self._replayed = True
        self.wait_for(
            lambda: bool(self.overlap_findings()),
            FINDING_TIMEOUT,
            f"findings row: assignment_overlap of {GROUP} on {OVERLAP[0]}-{OVERLAP[1]}",
        )
        return GROUP


def real_job_fixture(broker: str, workdir: Path) -> Iterator[RealJob]:
    job = RealJob(broker, workdir)
    try:
        job.start()
        yield job
    finally:
        job.stop()
