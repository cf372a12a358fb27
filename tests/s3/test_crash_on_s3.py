"""Crash safety and upkeep on S3: the job, with its tables and checkpoint on the S3 server,
killed hard (SIGKILL of its whole process group: driver, JVM, Python workers) inside a
micro-batch and restarted from its checkpoint, ends with exactly the tables of a run never
killed; upkeep's turns then compact and vacuum those tables there, and its history retention
cuts the same rows as on a file system.

S3 has no atomic rename: a batch's commits there are Spark's (one library per table on object
storage), each table's a put of its next version's file, and the checkpoint's offsets and
commits are objects too.  One kill and one restart (the local test,
``tests/integration/test_crash_safety.py``, kills twice at random points; this one keeps
the suite's time down).  The run never killed writes to this machine's file system, every
commit by delta-rs from the driver (``tests/s3/test_job_on_s3.py`` holds Spark's commits in the
two places to the same tables).  The random seed is printed; set GROUPWATCH_CRASH_SEED to
replay a run.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from groupwatch import config
from groupwatch.delta.read import DeltaStore
from groupwatch.tables import POLLED_TABLES, TABLES
from groupwatch_dev.demo.traffic import create_topic, replay
from groupwatch_dev.scenarios.builder import OFFSETS_PARTITIONS, load, raw_records, scenario_files
from tests import jobprocess
from tests.integration import crash
from tests.integration.test_job_scenarios import namespaced
from tests.realgroups import run_once
from tests.s3.server import S3Server
from tests.s3.spark_conf import hadoop_on_s3
from tests.s3.test_job_on_s3 import _rows

pytestmark = [pytest.mark.broker, pytest.mark.spark]

MIRROR = "s3-crash-mirror"
BUCKET = "gw-crash"
#: Micro-batches of the input, about: fewer than the local crash test's 15 (a batch on S3 is a
#: dozen Spark commits, 16-19 s on two cores), enough for a kill inside one past the first and
#: a batch after it.
BATCHES = 3
RUN_TIMEOUT = 600.0


@pytest.fixture(scope="module")
def mirror(broker: str) -> tuple[dict[str, int], int]:
    """The scenario library in a mirror topic: its partition counts, and the records per
    micro-batch giving about BATCHES."""
    docs = [namespaced(load(p), f"{p.stem}.") for p in scenario_files()]
    create_topic(broker, MIRROR, OFFSETS_PARTITIONS)
    records = 0
    for doc in docs:
        raw = list(raw_records(doc))
        replay(broker, MIRROR, raw)
        records += len(raw)
    counts = {t: n for doc in docs for t, n in (doc.get("partitions") or {}).items()}
    return counts, max(1, -(-records // BATCHES))


def _settings(broker: str, mirror: tuple[dict[str, int], int]) -> list[str]:
    counts, per_trigger = mirror
    return [
        f"source.bootstrap_servers={broker}",
        f"source.topic={MIRROR}",
        f"source.max_offsets_per_trigger={per_trigger}",
        "validation.every_n_batches=3",
        "job.state_maintenance_every_n_batches=4",
        "metrics.port=0",
        "alerts.rules=",
        f"detect.partitions={json.dumps(counts)}",
        "detect.partitions_since=always",  # the records are older than the job
        # Upkeep's turns run after the runs, by the test (as a later batch would run them),
        # over what the batches left.
        "upkeep.every_n_batches=0",
        # Both runs' Python stage in the workers, as a large batch's.
        "job.driver_stage_rows=0",
    ]


#: The run never killed writes every table from the driver with delta-rs, as the local crash
#: tests' clean run does (a batch by Spark on this machine costs 8-10 s, against about 1 s):
#: every commit of the run on S3 is Spark's, so the comparison also holds Spark's commits on S3
#: to delta-rs's rows (``tests/s3/test_job_on_s3.py`` compares Spark with Spark).
CLEAN_WRITES = f"delta.driver_write_rows={crash.CLEAN_WRITES}"


@dataclass(frozen=True)
class Runs:
    """The run never killed (on this machine) and the killed one (on S3), both finished."""

    clean: config.Config
    on_s3: config.Config
    #: The S3 server's folder of the tables (its filesystem backend: an object is a file).
    bucket_tables: Path
    batches: int


def _logged(checkpoint: Path, kind: str) -> int:
    """Batches the query's checkpoint logged as begun (``offsets``) or done (``commits``)."""
    folder = checkpoint / "groupwatch" / kind
    return len([p for p in folder.glob("[0-9]*") if p.is_file()]) if folder.exists() else 0


@pytest.fixture(scope="module")
def runs(
    spark: Any,
    broker: str,
    s3: S3Server,
    mirror: tuple[dict[str, int], int],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Runs]:
    seed = int(os.environ.get("GROUPWATCH_CRASH_SEED", random.randrange(1 << 30)))
    print(f"GROUPWATCH_CRASH_SEED={seed}")
    rng = random.Random(seed)
    settings = _settings(broker, mirror)
    tmp = tmp_path_factory.mktemp("crash-on-s3")

    clean = config.load(
        None,
        env={},
        overrides=[
            *settings,
            CLEAN_WRITES,
            f"delta.root={tmp / 'delta'}",
            f"checkpoint.root={tmp / 'checkpoints'}",
        ],
    )
    run_once(spark, clean)
    total = _logged(tmp / "checkpoints", "commits")
    assert total >= 3, f"expected several small batches, got {total}"

    s3.make_bucket(BUCKET)
    root = f"s3a://{BUCKET}/groupwatch"
    checkpoint = s3.data / BUCKET / "groupwatch" / "checkpoints"
    exe = Path(sys.executable).parent / "groupwatch"
    # The killed run holds no state text (``job.state_cache_mb=0``): its batches read their
    # groups' texts from group_state on S3 by key, in the workers, and its restart loads the
    # keys from there; the clean run holds every text.
    items = [
        *s3.overrides(root),
        *settings,
        "spark.master=local[2]",
        "spark.shuffle_partitions=2",
        "job.state_cache_mb=0",
    ]
    cmd = [str(exe), "run", "--once", *[a for s in items for a in ("--set", s)]]
    env = {**os.environ, **s3.env()}
    log = tmp / "job.log"

    proc = jobprocess.start(cmd, log, env)
    # Kill inside a batch past the first (its offsets logged, its commit not yet), at a random
    # moment of it: a batch on S3 makes a dozen Spark commits, seconds.
    deadline = time.monotonic() + RUN_TIMEOUT
    while _logged(checkpoint, "offsets") < 2 and proc.poll() is None:
        assert time.monotonic() < deadline, log.read_text()[-4000:]
        time.sleep(0.05)
    time.sleep(rng.uniform(0.2, 1.5))
    assert proc.poll() is None, "the job finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    begun, done = _logged(checkpoint, "offsets"), _logged(checkpoint, "commits")
    print(f"killed with {begun} batch(es) begun and {done} done of {total}")
    assert begun > done, "the kill landed between batches, not inside one"
    assert done < total

    jobprocess.finish(jobprocess.start(cmd, log, env), log, RUN_TIMEOUT)
    assert _logged(checkpoint, "commits") == total
    assert "read by key as batches ask" in log.read_text(), "the restart held state texts"

    # This process's AWS chain and the shared session's fs.s3a settings, for the reads and
    # upkeep's turns that follow (restored after).
    for on_s3 in hadoop_on_s3(spark, s3, BUCKET, *settings):
        yield Runs(clean, on_s3, s3.data / BUCKET / "groupwatch" / "delta", total)


def _same_tables(here: DeltaStore, there: DeltaStore) -> None:
    for name in sorted(set(TABLES) - set(POLLED_TABLES)):
        expected, actual = _rows(here, name), _rows(there, name)
        assert len(actual) == len(expected), name
        assert actual == expected, name


@pytest.mark.timeout(2400)
def test_sigkill_mid_batch_on_s3_then_restart_equals_a_run_never_killed(runs: Runs) -> None:
    here = DeltaStore(runs.clean.delta.root)
    _same_tables(here, DeltaStore(runs.on_s3.delta.root, runs.on_s3.storage))
    assert _rows(here, "findings"), "the input should have produced findings"
    assert _rows(here, "quarantine"), "the input should have produced quarantine rows"
