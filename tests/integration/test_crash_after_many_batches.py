"""A kill after many batches: the job killed hard once Spark has purged the oldest batches of
its checkpoint, upkeep has compacted and checkpointed the tables and state maintenance has
trimmed the saved state, then restarted, ends with the tables of a run never killed.

What a job that has run for months restarts from is not what a job of a dozen batches does:
Spark keeps the offsets and commits of its last ``spark.sql.streaming.minBatchesToRetain``
batches only (100 by default), and the tables hold upkeep's compactions and checkpoints and
state maintenance's trims rather than one commit per batch. Reaching 100 batches takes more
input than the scenario library holds, so the run keeps its last few batches instead
(``RETAIN``), on a mirror of one partition read a few records a batch: the kill lands in a
batch whose first predecessors are gone from the checkpoint, which the test checks before it
kills. The random seed is printed; set GROUPWATCH_CRASH_SEED to replay a run.

test_crash_safety kills within a dozen batches, three times; this test once, late.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path

import pytest

from groupwatch.tables import TABLES
from groupwatch_dev.demo.traffic import create_topic, replay
from groupwatch_dev.scenarios.builder import load, raw_records, scenario_files
from tests.integration.test_crash_safety import (
    CLEAN_WRITES,
    MIXED_WRITES,
    RUN_TIMEOUT,
    _finish,
    _start,
    _writers,
    assert_same_tables,
)
from tests.integration.test_job_scenarios import namespaced

pytestmark = [pytest.mark.broker, pytest.mark.spark]

MIRROR = "many-batches-mirror"
#: Batches of the checkpoint Spark keeps (``spark.sql.streaming.minBatchesToRetain``).
RETAIN = 2
#: Records per batch: one partition, so Spark's rate limit cuts the input this fine.
PER_TRIGGER = 9
#: The kill lands inside the batch this far from the end, or the next one.
KILL_BEFORE_END = 3


def _mirror(broker: str) -> tuple[dict[str, int], int]:
    """The scenario library in one partition, in library order: (partition counts, records)."""
    docs = [namespaced(load(p), f"{p.stem}.") for p in scenario_files()]
    create_topic(broker, MIRROR, 1)
    records = 0
    for doc in docs:
        raw = [{**r, "partition": 0} for r in raw_records(doc)]
        replay(broker, MIRROR, raw)
        records += len(raw)
    counts = {t: n for doc in docs for t, n in (doc.get("partitions") or {}).items()}
    return counts, records


def _command(
    broker: str, root: Path, counts: dict[str, int], driver_write_rows: int, state_cache_mb: int
) -> list[str]:
    exe = Path(sys.executable).parent / "groupwatch"
    spark_conf = {"spark.sql.streaming.minBatchesToRetain": str(RETAIN)}
    settings = [
        f"source.bootstrap_servers={broker}",
        f"source.topic={MIRROR}",
        f"source.max_offsets_per_trigger={PER_TRIGGER}",
        f"delta.root={root / 'delta'}",
        f"delta.driver_write_rows={driver_write_rows}",
        f"job.state_cache_mb={state_cache_mb}",
        f"checkpoint.root={root / 'checkpoints'}",
        "validation.every_n_batches=3",
        "job.state_maintenance_every_n_batches=4",
        # Every table's turn within a few batches, a checkpoint every few commits: by the
        # kill the tables are compacted, vacuumed and read from checkpoints.
        "upkeep.every_n_batches=3",
        "upkeep.checkpoint_interval=5",
        "metrics.port=0",
        "alerts.rules=",
        "spark.master=local[2]",
        "spark.shuffle_partitions=2",
        f"spark.conf={json.dumps(spark_conf)}",
        f"detect.partitions={json.dumps(counts)}",
        "detect.partitions_since=always",  # the records are older than the job
    ]
    return [str(exe), "run", "--once", *[a for s in settings for a in ("--set", s)]]


def _batch_ids(root: Path) -> list[int]:
    """The batch ids of the checkpoint's offset log (each written before its batch runs)."""
    offsets = root / "checkpoints" / "groupwatch" / "offsets"
    if not offsets.exists():
        return []
    return sorted(int(p.name) for p in offsets.iterdir() if p.name.isdigit())


def _upkeep_commits(root: Path) -> dict[str, set[str]]:
    """Per table, the operations of the commits upkeep made (its note on each)."""
    found: dict[str, set[str]] = {}
    for name in TABLES:
        for commit in (root / "delta" / name / "_delta_log").glob("*.json"):
            for line in commit.read_text().splitlines():
                info = json.loads(line).get("commitInfo")
                if info and "upkeep" in str(info.get("userMetadata", "")):
                    found.setdefault(name, set()).add(str(info.get("operation")))
    return found


# Three runs of the job, each of a dozen small batches: 3-4 min on two quiet cores.
@pytest.mark.timeout(1800)
def test_a_kill_after_the_checkpoint_dropped_its_first_batches_equals_a_clean_run(
    broker: str, tmp_path: Path
) -> None:
    seed = int(os.environ.get("GROUPWATCH_CRASH_SEED", random.randrange(1 << 30)))
    print(f"GROUPWATCH_CRASH_SEED={seed}")
    rng = random.Random(seed)
    counts, records = _mirror(broker)

    clean, crashed = tmp_path / "clean", tmp_path / "crashed"
    log = tmp_path / "job.log"
    _finish(_start(_command(broker, clean, counts, CLEAN_WRITES, 0), log), log)
    ids = _batch_ids(clean)
    total = ids[-1] + 1
    assert total >= records // PER_TRIGGER, f"{total} batches for {records} records"
    assert total - KILL_BEFORE_END > 4 * RETAIN, (
        f"too few batches to outlive the checkpoint: {total}"
    )
    assert ids[0] > 0, f"Spark kept every batch: {ids}"

    kill_at = rng.randrange(total - KILL_BEFORE_END - RETAIN, total - KILL_BEFORE_END + 1)
    proc = _start(_command(broker, crashed, counts, MIXED_WRITES, 1024), log)
    deadline = time.monotonic() + RUN_TIMEOUT
    while (_batch_ids(crashed) or [-1])[-1] < kill_at:
        assert proc.poll() is None, (
            f"the job ended before batch {kill_at}: {log.read_text()[-4000:]}"
        )
        assert time.monotonic() < deadline, log.read_text()[-4000:]
        time.sleep(0.05)
    time.sleep(rng.uniform(0.0, 2.0))
    assert proc.poll() is None, "the job finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    left = _batch_ids(crashed)
    print(f"killed during batch {left[-1]} of {total}; the checkpoint kept batches {left}")
    # What the test is about: the restart cannot go back to the first batches, and the tables
    # it resumes on are those upkeep has worked on.
    assert left[0] > 0, left
    worked = _upkeep_commits(crashed)
    assert any("OPTIMIZE" in ops for ops in worked.values()), worked

    _finish(_start(_command(broker, crashed, counts, MIXED_WRITES, 1024), log), log)
    assert _batch_ids(crashed)[-1] + 1 == total
    assert _writers(crashed) == {"Apache-Spark", "delta-rs"}
    assert_same_tables(clean, crashed)
