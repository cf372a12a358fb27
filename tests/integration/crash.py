"""One clean run and one killed run of the job over the scenario library, shared by the crash
tests (``test_crash_safety``, ``test_crash_after_many_batches``) through the session fixture
``crash_runs`` of ``tests/integration/conftest.py``.

A job run costs most of its time in starting (the JVM, Spark, the preflight check, the first
batch's Python workers), a batch of this input a few seconds: the two tests prove the most for
their time with one clean run and one killed run whose kills are drawn across its batches.
Two kills, each followed by a restart from the checkpoint (the driver's state cache reloaded
from the tables each time):

- one early, at a random moment after a batch drawn among the first has begun (inside it or
  the next one): exactly once for kills between and inside batches (``test_crash_safety``);
- one late, once Spark has purged the oldest batches of its checkpoint (it keeps the last
  ``RETAIN``) and upkeep has compacted and checkpointed the tables: the state a job restarts
  from after months (``test_crash_after_many_batches``).

Then the job is started once more and runs to the end. The mirror holds the library in a few
partitions (a group's records in one, in order), read ``PER_TRIGGER`` records a batch: enough
batches for the late kill to outlive the checkpoint's first ones, and batches holding records
of several partitions, as ``__consumer_offsets`` gives them.

The clean run is the job in this process, on the session's SparkSession (a run that is never
killed needs no process of its own, and the session's JVM is warm); its tables are all written
from the driver with delta-rs (``delta.driver_write_rows`` above any batch's rows) and its
Python stage runs in the workers (``job.driver_stage_rows=0``).  The killed run, a process of
its own (``groupwatch run``) so that a kill takes its JVM and Python workers with it, writes a
batch of few rows from the driver and a larger one by Spark, runs its Python stage on the
driver and reads state from a cache that holds no text (``job.state_cache_mb=0``: every text
read by key, and the keys reloaded from the table at each restart): the comparison holds the
two writers, and the two Python stages, to the same rows, and the writers' shared transaction
ids to exactly once when a replay takes the other writer than the first attempt.  The random seed
is printed; set GROUPWATCH_CRASH_SEED to replay a run.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from groupwatch.tables import POLLED_TABLES, TABLES
from groupwatch_dev.demo.traffic import create_topic, replay
from groupwatch_dev.scenarios.builder import load, raw_records, scenario_files
from tests import jobprocess
from tests.integration.test_job_scenarios import namespaced
from tests.realgroups import run_once

MIRROR = "crash-mirror"
#: Partitions of the mirror: a scenario record's ``__consumer_offsets`` partition modulo this.
#: Few, so that Spark's rate limit (at least one record of every partition that has some) cuts
#: the input fine; more than one, so that a batch and its replay read several partitions.
PARTITIONS = 3
#: Records per batch (``source.max_offsets_per_trigger``): 15 batches of the library's 143
#: records (Spark's rate limit rounds per partition), enough for an early kill and a late one
#: past the checkpoint's first batches.
PER_TRIGGER = 11
#: Batches of the checkpoint Spark keeps (``spark.sql.streaming.minBatchesToRetain``).
RETAIN = 2
#: The late kill lands inside the batch this far from the end, or the next one.
KILL_BEFORE_END = 3
#: Kills drawn before the late one: one (each costs a start of the job, about a minute of a
#: loaded CI machine's; a second early kill drew one more moment of the same kind).
EARLY_KILLS = 1
#: The longest wait after a drawn batch has begun before the kill, early and late (seconds).
EARLY_JITTER = 4.0
LATE_JITTER = 2.0
#: Columns holding the wall-clock time of the write: the only ones a replay may change.
WALL_CLOCK = {"detected_at", "quarantined_at", "validated_at"}
#: A bound on one run of the job (a hung one fails the test); a loaded machine takes minutes.
RUN_TIMEOUT = 1200.0
#: The killed runs' ``delta.driver_write_rows``: some of this input's batches have more rows
#: (member rows and ownership intervals of a few generations), some fewer; the tests check
#: that both writers made commits.
MIXED_WRITES = 12
#: The clean run's: every batch of this input is written from the driver.
CLEAN_WRITES = 1_000_000
#: The state cache of each run: the killed run holds no text (every batch reads its groups'
#: texts from ``group_state`` by key, on the driver), the clean run every text.
KILLED_CACHE_MB = 0
CLEAN_CACHE_MB = 1024


@dataclass(frozen=True)
class Kill:
    #: the batch drawn: the kill came after it had begun
    drawn: int
    #: whether it is the late kill (after the checkpoint dropped its first batches)
    late: bool
    #: the batch ids of the checkpoint's offset log just after the kill
    kept: tuple[int, ...]
    #: per table, the operations of upkeep's commits just after the kill
    upkept: dict[str, frozenset[str]]


@dataclass(frozen=True)
class CrashRuns:
    clean: Path
    crashed: Path
    #: the mirror's records
    records: int
    #: the clean run's checkpoint's batch ids at its end
    clean_batches: tuple[int, ...]
    kills: tuple[Kill, ...]
    seed: int

    @property
    def total(self) -> int:
        return self.clean_batches[-1] + 1


def _mirror(broker: str) -> tuple[dict[str, int], int]:
    """The scenario library in ``PARTITIONS`` partitions: (partition counts, records)."""
    docs = [namespaced(load(p), f"{p.stem}.") for p in scenario_files()]
    create_topic(broker, MIRROR, PARTITIONS)
    records = 0
    for doc in docs:
        raw = [{**r, "partition": r["partition"] % PARTITIONS} for r in raw_records(doc)]
        replay(broker, MIRROR, raw)
        records += len(raw)
    counts = {t: n for doc in docs for t, n in (doc.get("partitions") or {}).items()}
    return counts, records


#: The Spark settings of both runs (the clean run's for the time it runs in the session).
SPARK_CONF = {"spark.sql.streaming.minBatchesToRetain": str(RETAIN)}


def _settings(
    broker: str, root: Path, counts: dict[str, int], driver_write_rows: int, state_cache_mb: int
) -> list[str]:
    return [
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
        # late kill the tables are compacted, vacuumed and read from checkpoints.
        "upkeep.every_n_batches=3",
        "upkeep.checkpoint_interval=5",
        "metrics.port=0",
        "alerts.rules=",
        "spark.master=local[2]",
        "spark.shuffle_partitions=2",
        f"spark.conf={json.dumps(SPARK_CONF)}",
        f"detect.partitions={json.dumps(counts)}",
        "detect.partitions_since=always",  # the records are older than the job
    ]


def _command(
    broker: str, root: Path, counts: dict[str, int], driver_write_rows: int, state_cache_mb: int
) -> list[str]:
    exe = Path(sys.executable).parent / "groupwatch"
    settings = _settings(broker, root, counts, driver_write_rows, state_cache_mb)
    return [str(exe), "run", "--once", *[a for s in settings for a in ("--set", s)]]


def _clean_run(spark: Any, broker: str, root: Path, counts: dict[str, int]) -> None:
    """The run never killed: the job in this process, on the session's SparkSession."""
    from groupwatch import config
    from groupwatch.spark.sinks import session_settings

    settings = _settings(broker, root, counts, CLEAN_WRITES, CLEAN_CACHE_MB)
    overrides = [*settings, "job.driver_stage_rows=0"]
    cfg = config.load(None, env={}, overrides=overrides)
    with session_settings(spark, SPARK_CONF):
        run_once(spark, cfg)


def batch_ids(root: Path) -> list[int]:
    """The batch ids of the checkpoint's offset log (each written before its batch runs)."""
    offsets = root / "checkpoints" / "groupwatch" / "offsets"
    if not offsets.exists():
        return []
    return sorted(int(p.name) for p in offsets.iterdir() if p.name.isdigit())


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


def writers(root: Path) -> set[str]:
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


def _upkeep_commits(root: Path) -> dict[str, frozenset[str]]:
    """Per table, the operations of the commits upkeep made (its note on each)."""
    found: dict[str, set[str]] = {}
    for name in TABLES:
        for commit in (root / "delta" / name / "_delta_log").glob("*.json"):
            for line in commit.read_text().splitlines():
                info = json.loads(line).get("commitInfo")
                if info and "upkeep" in str(info.get("userMetadata", "")):
                    found.setdefault(name, set()).add(str(info.get("operation")))
    return {name: frozenset(ops) for name, ops in found.items()}


def kill_points(rng: random.Random, total: int) -> list[tuple[int, bool]]:
    """The batches to kill in, in order, each with whether it is the late kill: the early
    ones in the first and second half of the batches before the late window, the late one in
    the window ``RETAIN`` batches wide ending ``KILL_BEFORE_END`` before the end."""
    late_from = total - KILL_BEFORE_END - RETAIN
    if late_from < 2 * EARLY_KILLS + 2:
        pytest.fail(f"too few batches ({total}) for {EARLY_KILLS} early kills and a late one")
    # Each early kill's window ends two batches before the next window begins: a kill lands
    # inside its batch or the next one, and the following kill needs a batch to wait for.
    edges = [late_from * k // EARLY_KILLS for k in range(EARLY_KILLS + 1)]
    early = [(rng.randrange(edges[k], edges[k + 1] - 1), False) for k in range(EARLY_KILLS)]
    return [*early, (rng.randrange(late_from, late_from + RETAIN + 1), True)]


def run(spark: Any, broker: str, root: Path) -> CrashRuns:
    """The clean run, then the killed one (kills drawn across its batches) and its last restart
    to the end, over a fresh mirror; what each test checks is in the result."""
    seed = int(os.environ.get("GROUPWATCH_CRASH_SEED", random.randrange(1 << 30)))
    print(f"GROUPWATCH_CRASH_SEED={seed}")
    rng = random.Random(seed)
    counts, records = _mirror(broker)

    clean, crashed = root / "clean", root / "crashed"
    log = root / "job.log"
    _clean_run(spark, broker, clean, counts)
    ids = batch_ids(clean)
    total = ids[-1] + 1

    kills: list[Kill] = []
    for drawn, late in kill_points(rng, total):
        # After a kill the next restart replays the batch it interrupted: wait for a batch
        # this run begins itself.
        target = max(drawn, (batch_ids(crashed) or [-1])[-1] + 1)
        proc = jobprocess.start(
            _command(broker, crashed, counts, MIXED_WRITES, KILLED_CACHE_MB), log
        )
        deadline = time.monotonic() + RUN_TIMEOUT
        while (batch_ids(crashed) or [-1])[-1] < target:
            if proc.poll() is not None:
                pytest.fail(f"the job ended before batch {target}: {log.read_text()[-4000:]}")
            assert time.monotonic() < deadline, log.read_text()[-4000:]
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, LATE_JITTER if late else EARLY_JITTER))
        if proc.poll() is not None:
            pytest.fail(f"the job finished before kill {len(kills) + 1} (after batch {target})")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kept = batch_ids(crashed)
        kills.append(Kill(target, late, tuple(kept), _upkeep_commits(crashed)))
        print(f"kill {len(kills)} during batch {kept[-1]} of {total}; the checkpoint kept {kept}")
    jobprocess.finish(
        jobprocess.start(_command(broker, crashed, counts, MIXED_WRITES, KILLED_CACHE_MB), log),
        log,
        RUN_TIMEOUT,
    )
    return CrashRuns(clean, crashed, records, tuple(ids), tuple(kills), seed)
