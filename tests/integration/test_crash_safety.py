"""Crash safety: the job killed hard (SIGKILL of its whole process group: driver, JVM, Python
workers) at random points mid-stream, restarted from its checkpoint each time, ends with
exactly the tables of a clean uninterrupted run over the same input.

The input is the whole scenario library (findings, quarantined garbage, ownership history,
offset commits, tombstones) in a mirror topic, read a few records per micro-batch so that the
kills land between and inside batches. The random seed is printed; set GROUPWATCH_CRASH_SEED
to replay a run.

The clean run's tables are all written from the driver with delta-rs
(``delta.driver_write_rows`` above any batch's rows); the killed runs write a batch of few rows
from the driver and a larger one by Spark, so the comparison also holds the two writers
to the same rows, and their shared transaction ids to exactly once when a replay takes the other
writer than the first attempt.  (The clean run takes the cheaper writer: it is one of the
slowest tests.)  Likewise the clean run reads every batch's state from ``group_state``
(``job.state_cache_mb=0``), the killed runs from the driver's cache, reloaded from the table
after each restart.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from groupwatch.tables import POLLED_TABLES, TABLES
from groupwatch_dev.demo.traffic import create_topic, replay
from groupwatch_dev.scenarios.builder import OFFSETS_PARTITIONS, load, raw_records, scenario_files
from tests.integration.test_job_scenarios import namespaced

pytestmark = [pytest.mark.broker, pytest.mark.spark]

MIRROR = "crash-mirror"
KILLS = 3
#: Columns holding the wall-clock time of the write: the only ones a replay may change.
WALL_CLOCK = {"detected_at", "quarantined_at", "validated_at"}
RUN_TIMEOUT = 600.0


#: The records per micro-batch are the input's size over this: enough batches for kills to
#: land between and inside them, few enough that the run's time does not grow with the
#: scenario library. (Spark's source takes at least one record of every partition that has
#: some, so the batches are fewer: 8 for today's 106 records over 22 partitions.)
BATCHES = 12


@dataclass(frozen=True)
class Mirror:
    #: the scenarios' partition counts (``detect.partitions``)
    counts: dict[str, int]
    #: records per micro-batch (``source.max_offsets_per_trigger``) giving about BATCHES
    per_trigger: int


@pytest.fixture(scope="module")
def mirror(broker: str) -> Mirror:
    docs = [namespaced(load(p), f"{p.stem}.") for p in scenario_files()]
    create_topic(broker, MIRROR, OFFSETS_PARTITIONS)
    records = 0
    for doc in docs:
        raw = list(raw_records(doc))
        replay(broker, MIRROR, raw)
        records += len(raw)
    counts = {t: n for doc in docs for t, n in (doc.get("partitions") or {}).items()}
    return Mirror(counts, max(1, -(-records // BATCHES)))


#: The killed runs' ``delta.driver_write_rows``: some of this input's batches have more rows
#: (member rows and ownership intervals of a few generations), some fewer; the test checks
#: that both writers made commits.
MIXED_WRITES = 12
#: The clean run's: every batch of this input is written from the driver.
CLEAN_WRITES = 1_000_000


def _command(
    broker: str, root: Path, mirror: Mirror, driver_write_rows: int, state_cache_mb: int
) -> list[str]:
    exe = Path(sys.executable).parent / "groupwatch"
    settings = [
        f"source.bootstrap_servers={broker}",
        f"source.topic={MIRROR}",
        f"source.max_offsets_per_trigger={mirror.per_trigger}",
        f"delta.root={root / 'delta'}",
        f"delta.driver_write_rows={driver_write_rows}",
        f"job.state_cache_mb={state_cache_mb}",
        f"checkpoint.root={root / 'checkpoints'}",
        "validation.every_n_batches=3",
        "job.state_maintenance_every_n_batches=4",
        "metrics.port=0",
        "alerts.rules=",
        "spark.master=local[2]",
        "spark.shuffle_partitions=2",
        f"detect.partitions={json.dumps(mirror.counts)}",
        "detect.partitions_since=always",  # the records are older than the job
    ]
    return [str(exe), "run", "--once", *[a for s in settings for a in ("--set", s)]]


def _start(cmd: list[str], log: Path) -> subprocess.Popen[bytes]:
    # Its own process group, so one killpg reaches the JVM and the Python workers too.
    return subprocess.Popen(
        cmd, stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True
    )


def _finish(proc: subprocess.Popen[bytes], log: Path) -> None:
    try:
        code = proc.wait(RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"the job did not finish in {RUN_TIMEOUT}s:\n{log.read_text()[-4000:]}")
    assert code == 0, log.read_text()[-4000:]


def _batches_started(root: Path) -> int:
    offsets = root / "checkpoints" / "groupwatch" / "offsets"
    return len([p for p in offsets.glob("[0-9]*")]) if offsets.exists() else 0


def _table(root: Path, name: str) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    rows = DeltaTable(str(root / "delta" / name)).to_pyarrow_table().to_pylist()
    for row in rows:
        for column in WALL_CLOCK & row.keys():
            row.pop(column)
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=repr))


def assert_same_tables(clean: Path, crashed: Path) -> None:
    """Every table but the polled ones row for row as the clean run's, and the input one that
    found something and quarantined something (a comparison of empty tables proves nothing)."""
    for name in set(TABLES) - set(POLLED_TABLES):
        expected, actual = _table(clean, name), _table(crashed, name)
        assert len(actual) == len(expected), name
        assert actual == expected, name
    assert _table(clean, "findings"), "the input should have produced findings"
    assert _table(clean, "quarantine"), "the input should have produced quarantine rows"


def _writers(root: Path) -> set[str]:
    """The engines (Spark, delta-rs) that made the batches' own commits, those carrying the
    job's transaction id (state maintenance has its own), to any of the tables."""
    engines = set()
    for name in TABLES:
        for commit in (root / "delta" / name / "_delta_log").glob("*.json"):
            actions = [json.loads(line) for line in commit.read_text().splitlines()]
            if any(a.get("txn", {}).get("appId") == "groupwatch-job" for a in actions):
                info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
                engines.add(re.split(r"[:/]", info["engineInfo"])[0])
    return engines


# Five runs of the job (one clean, three killed, the last one to the end): 10-12 min on two
# cores, 15 and more on a loaded machine, past the suite's 900 s.
@pytest.mark.timeout(1800)
def test_sigkill_mid_stream_then_restart_equals_a_clean_run(
    broker: str, mirror: Mirror, tmp_path: Path
) -> None:
    seed = int(os.environ.get("GROUPWATCH_CRASH_SEED", random.randrange(1 << 30)))
    print(f"GROUPWATCH_CRASH_SEED={seed}")
    rng = random.Random(seed)

    clean, crashed = tmp_path / "clean", tmp_path / "crashed"
    log = tmp_path / "job.log"
    _finish(_start(_command(broker, clean, mirror, CLEAN_WRITES, 0), log), log)
    assert _writers(clean) == {"delta-rs"}
    total = _batches_started(clean)
    assert total >= 6, f"expected many small batches, got {total}"

    kills = 0
    while kills < KILLS:
        proc = _start(_command(broker, crashed, mirror, MIXED_WRITES, 1024), log)
        # Wait for a batch to begin (its offsets are logged before it runs), then kill at a
        # random moment inside it or the next one.
        begun = _batches_started(crashed)
        deadline = time.monotonic() + RUN_TIMEOUT
        while _batches_started(crashed) == begun and proc.poll() is None:
            assert time.monotonic() < deadline, log.read_text()[-4000:]
            time.sleep(0.1)
        time.sleep(rng.uniform(0.0, 4.0))
        if proc.poll() is not None:
            break  # finished before the kill: nothing left to interrupt
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
        print(f"kill {kills} during batch {_batches_started(crashed) - 1} of {total}")
    assert kills >= 2, "the job finished before it could be killed twice"
    _finish(_start(_command(broker, crashed, mirror, MIXED_WRITES, 1024), log), log)

    assert _batches_started(crashed) == total
    assert _writers(crashed) == {"Apache-Spark", "delta-rs"}
    assert_same_tables(clean, crashed)
