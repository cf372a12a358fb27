"""Benchmark: the streaming job end to end, on a dedicated local broker.

    .venv/bin/python bench/bench_job.py [--bench throughput,state,latency,arrow]
        [--records 1000000] [--max-offsets-per-trigger 0[,200000]]
        [--latency-samples 20] [--latency-modes isolated,back-to-back]
        [--arrow-records 10000]

* throughput: a backlog of ``--records`` records in a 50-partition mirror topic, 99% offset
  commits and 1% group-metadata records of 50-member sticky / cooperative-sticky groups whose
  generations advance (one member replaced per generation, assignments from the project's own
  sticky assignor, so the groups are healthy).  Measured in the same run: the baseline
  (``build_raw_copy``: the topic copied raw into Delta) and the job (``GroupwatchQuery``,
  validation every N batches as configured by default, metrics and notifier off), each from the
  beginning of the topic with a fresh Delta root and checkpoint.  Ratio job / baseline.
* state: bytes of state JSON per group in ``group_state`` after each throughput job run, and
  the Python memory of the decoded state.
* latency: the job on a 1 s trigger; one group-metadata record at a time that yields an
  ``assignment_overlap`` finding; time from the produce call until the finding row is readable
  in Delta (polled with ``deltalake`` every 50 ms).  Two modes (``--latency-modes``):
  ``isolated``, each record produced once the previous record's batch is over, at a random
  moment of the trigger period (a rebalance on a quiet job); ``back-to-back``, 2-3 s apart or
  right after the previous finding landed if that took longer, so a record usually arrives
  while the previous batch still writes its other tables.
* arrow: the same group-metadata records decoded through ``mapInArrow`` and through the job's
  cogrouped ``applyInArrow``, decode only and transport only.

A local broker named ``bench`` is started fresh and stopped (and its folder removed) at the
end.  Tables and checkpoints go to a temporary folder (``--keep`` keeps it).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
# Spark's Python workers import groupwatch too, from the environment this process hands
# them: this tree first, or a checkout measured beside another would run the installed
# tree's code in its workers.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
)

from groupwatch import config as config_mod  # noqa: E402
from groupwatch.assignor import MemberSubscription, TopicPartition, assign  # noqa: E402
from groupwatch.protocol import (  # noqa: E402
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    TopicPartitions,
    encode_assignment,
    encode_cooperative_sticky_user_data,
    encode_key,
    encode_sticky_user_data,
    encode_subscription,
    encode_value,
)

BASE_MS = 1_700_000_000_000
#: Like ``__consumer_offsets``: a group's records all land in one of 50 partitions.
MIRROR_PARTITIONS = 50
MEMBERS = 50
GENERATIONS = 50
#: Every 50-member group consumes 4 topics of 50 partitions: 4 partitions per member.
GROUP_TOPICS = tuple(f"orders-{t}" for t in range(4))
GROUP_TOPIC_PARTITIONS = 50
#: Commit-only groups pick 2 of these topics (10 to 50 partitions each).
COMMIT_TOPICS = 100
#: Same-group generations are this far apart in event time: no storm, no churn.
GENERATION_GAP_MS = 600_000
PROTOCOLS = ("sticky", "cooperative-sticky")

T0 = time.monotonic()
TP = tuple[str, int]


def log(message: str) -> None:
    print(f"[{time.monotonic() - T0:7.1f}s] {message}", flush=True)


def source_version() -> str:
    """The commit benchmarked, and whether the job's sources had local changes."""
    import subprocess

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return out.stdout.strip()

    dirty = git("status", "--porcelain", "--", "src")
    return f"commit {git('rev-parse', '--short', 'HEAD')}" + (
        f" + local changes in {len(dirty.splitlines())} file(s) under src/" if dirty else ""
    )


def load_text() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def status_kb(pid: int, name: str) -> int:
    """A field of ``/proc/<pid>/status`` in kB (``VmRSS``, ``VmHWM``); 0 if the process is
    gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


# -- records -----------------------------------------------------------------------------------
def coordinator_partition(group: str, partitions: int = MIRROR_PARTITIONS) -> int:
    """``abs(group.hashCode()) % partitions``: where Kafka keeps a group's records."""
    h = 0
    data = group.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    return (abs(h) if h != -(1 << 31) else 0) % partitions


def _tps(tps: Sequence[TP]) -> tuple[TopicPartitions, ...]:
    by: dict[str, list[int]] = {}
    for topic, partition in tps:
        by.setdefault(topic, []).append(partition)
    return tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(by.items()))


@dataclass
class _Member:
    member_id: str
    owned: tuple[TP, ...] = ()
    generation: int | None = None


def group_values(protocol: str, generations: int) -> list[bytes]:
    """GroupMetadataValue bytes of one 50-member group, generation 1..``generations``.

    Generation 1: every member joins at once. Then each generation one member leaves and a new
    one joins (a rolling restart); the assignment is what Kafka's sticky assignor gives (the
    project's re-implementation), so every record is a healthy rebalance.  The same bytes serve
    every group of the protocol: the group id lives in the key.
    """
    counts = dict.fromkeys(GROUP_TOPICS, GROUP_TOPIC_PARTITIONS)
    tag = "coop" if protocol.startswith("coop") else "stky"
    members = [_Member(f"consumer-{tag}-{i:03d}-7d3f9c1e-5a2b-4c6d-8e0f") for i in range(MEMBERS)]
    joined = MEMBERS
    out: list[bytes] = []
    for generation in range(1, generations + 1):
        if generation > 1:
            leaver = (generation - 2) % MEMBERS
            members = [m for m in members if m.member_id != members[leaver].member_id]
            members.append(_Member(f"consumer-{tag}-{joined:03d}-7d3f9c1e-5a2b-4c6d-8e0f"))
            joined += 1
        subs = [
            MemberSubscription(
                m.member_id,
                GROUP_TOPICS,
                tuple(TopicPartition(t, p) for t, p in m.owned),
                m.generation,
            )
            for m in members
        ]
        result = assign(protocol, counts, subs)
        # One member replaced leaves its partitions unowned: nothing is withheld.
        assert not result.withheld, result.withheld
        metas = []
        for i, m in enumerate(members):
            assigned = [(tp.topic, tp.partition) for tp in result.assignment[m.member_id]]
            gen = -1 if m.generation is None else m.generation
            if protocol == "sticky":
                user_data = (
                    encode_sticky_user_data(_tps(m.owned), m.generation)
                    if m.generation is not None
                    else None
                )
                owned: tuple[TopicPartitions, ...] = ()
            else:
                user_data = encode_cooperative_sticky_user_data(gen)
                owned = _tps(m.owned)
            sub = ConsumerProtocolSubscription(3, GROUP_TOPICS, user_data, owned, gen, None)
            asg = ConsumerProtocolAssignment(3, _tps(assigned), None)
            metas.append(
                MemberMetadata(
                    m.member_id,
                    f"orders-service-{i % 10}",
                    f"/10.20.{i // 250}.{i % 250 + 1}",
                    45000,
                    encode_subscription(sub),
                    encode_assignment(asg),
                    None,
                    300000,
                )
            )
            m.owned = tuple(assigned)
        value = GroupMetadataValue(
            "consumer",
            generation,
            protocol,
            members[0].member_id,
            tuple(metas),
            BASE_MS + generation * GENERATION_GAP_MS,
        )
        out.append(encode_value(value, 3))
        for m in members:
            m.generation = generation
    return out


@dataclass
class Backlog:
    """A deterministic record stream: pre-encoded payloads, reused."""

    records: int
    prefix: str
    seed: int = 7
    gm_groups: list[str] = field(default_factory=list)
    gm_count: int = 0

    def __post_init__(self) -> None:
        self.gm_count = self.records // 100
        generations = min(GENERATIONS, max(1, self.gm_count))
        n_groups = max(1, math.ceil(self.gm_count / generations))
        self.gm_groups = [f"{self.prefix}-app-{g:04d}" for g in range(n_groups)]
        self.protocol = [PROTOCOLS[g % 2] for g in range(n_groups)]
        self.values = {p: group_values(p, generations) for p in PROTOCOLS}
        self.commit_groups = [f"{self.prefix}-svc-{g:04d}" for g in range(4 * n_groups + 10)]
        rng = random.Random(self.seed)
        self.commit_tps: list[list[TP]] = [
            [(t, p) for t in GROUP_TOPICS for p in range(GROUP_TOPIC_PARTITIONS)]
            for _ in self.gm_groups
        ]
        for _ in self.commit_groups:
            tps = []
            for t in rng.sample(range(COMMIT_TOPICS), 2):
                tps += [(f"events-{t:03d}", p) for p in range((t % 5 + 1) * 10)]
            self.commit_tps.append(tps)
        self.all_groups = self.gm_groups + self.commit_groups
        self.partition = [coordinator_partition(g) for g in self.all_groups]
        self.gm_keys = [encode_key(GroupMetadataKey(g)) for g in self.gm_groups]
        self.commit_values = [
            encode_value(OffsetCommitValue(rng.randrange(10**9), "", BASE_MS, 5), 3)
            for _ in range(256)
        ]
        self._commit_keys: dict[tuple[int, int], bytes] = {}
        # Consecutive generations of one group are GENERATION_GAP_MS apart in event time.
        self.step_ms = max(1, GENERATION_GAP_MS // (n_groups * 100))

    def group_metadata(self, n: int) -> tuple[int, bytes, bytes]:
        """The n-th group-metadata record: groups take turns, each one generation further."""
        n_groups = len(self.gm_groups)
        g, generation = n % n_groups, n // n_groups
        return g, self.gm_keys[g], self.values[self.protocol[g]][generation]

    def __iter__(self) -> Iterator[tuple[bytes, bytes, int, int]]:
        """(key, value, partition, timestamp ms) in production order."""
        rng = random.Random(self.seed + 1)
        n_gm = 0
        for i in range(self.records):
            ts = BASE_MS + i * self.step_ms
            if i % 100 == 99 and n_gm < self.gm_count:
                g, key, value = self.group_metadata(n_gm)
                n_gm += 1
                yield key, value, self.partition[g], ts
                continue
            g = rng.randrange(len(self.all_groups))
            tps = self.commit_tps[g]
            k = rng.randrange(len(tps))
            key = self._commit_keys.get((g, k))
            if key is None:
                topic, partition = tps[k]
                key = encode_key(OffsetCommitKey(self.all_groups[g], topic, partition))
                self._commit_keys[(g, k)] = key
            yield key, self.commit_values[i & 255], self.partition[g], ts


def create_mirror(bootstrap: str, topic: str) -> None:
    """Create the topic and wait until every partition has a leader: a producer that starts
    earlier gets NotLeaderForPartition, and its retries could reorder a group's records."""
    from kafka.admin import KafkaAdminClient

    from groupwatch_dev.demo.traffic import create_topic

    create_topic(bootstrap, topic, MIRROR_PARTITIONS)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            (desc,) = admin.describe_topics([topic])
            parts = desc.get("partitions") or []
            if len(parts) == MIRROR_PARTITIONS and all(p.get("leader_id", -1) >= 0 for p in parts):
                return
            time.sleep(0.2)
        raise RuntimeError(f"{topic}: partitions without a leader after 60 s")
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, records: Iterator[tuple[bytes, bytes, int, int]]) -> int:
    """kafka-python with large batches; 2-3 producer processes were no faster on 2 cores
    (the broker needs the other core), so one producer it is."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        linger_ms=50,
        batch_size=1 << 20,
        max_request_size=16 << 20,
        acks=1,
        # No reordering of a group's records even if a request is retried.
        max_in_flight_requests_per_connection=1,
        enable_idempotence=False,
        metrics_enabled=False,
    )
    n = 0
    for key, value, partition, ts in records:
        producer.send(topic, key=key, value=value, partition=partition, timestamp_ms=ts)
        n += 1
        if n % 200_000 == 0:
            log(f"  produced {n:,}")
    producer.flush()
    producer.close()
    return n


# -- configuration and the job -----------------------------------------------------------------
def bench_config(
    bootstrap: str,
    topic: str,
    root: Path,
    *,
    max_offsets: int = 0,
    trigger: str | None = None,
    extra: Sequence[str] = (),
) -> config_mod.Config:
    overrides = [
        f"source.bootstrap_servers={bootstrap}",
        f"source.topic={topic}",
        f"source.max_offsets_per_trigger={max_offsets}",
        f"delta.root={root / 'delta'}",
        f"checkpoint.root={root / 'checkpoints'}",
        f"validation.suites={ROOT / 'conf' / 'expectations'}",
        "metrics.port=0",
        "alerts.rules=",
    ]
    if trigger:
        overrides.append(f"job.trigger_interval={trigger}")
    overrides += extra
    return config_mod.load(ROOT / "conf" / "local.toml", env={}, overrides=overrides)


def _timed_job_class() -> type[Any]:
    from groupwatch.spark import query

    class TimedJob(query.GroupwatchQuery):
        """The job as it is, told the wall time of each step of each batch by the query's
        step clock (the steps run in order, so the figures add up to the batch time)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.phases: dict[str, float] = defaultdict(float)
            self.batch_seconds: list[float] = []
            super().__init__(*args, **{**kwargs, "step_clock": self.step})

        def step(self, name: str, seconds: float) -> None:
            if name == query.BATCH:
                self.batch_seconds.append(seconds)
            else:
                self.phases[name] += seconds

        def breakdown(self) -> dict[str, float]:
            """Seconds per step (:func:`steps_apart`); a batch less its steps is the source
            read and split."""
            p = steps_apart(self.phases)
            p["source read + split (persist)"] = sum(self.batch_seconds) - sum(p.values())
            return p

    return TimedJob


def steps_apart(phases: dict[str, float]) -> dict[str, float]:
    """Seconds per step as the step clock told them, the outputs step (which holds the
    Python stage and validation) replaced by what is left of it: the table writes."""
    from groupwatch.spark import query

    p = dict(phases)
    outputs = p.pop(query.OUTPUTS, 0.0)
    stages = p.get(query.PYTHON, 0.0) + p.get(query.DRIVER_PYTHON, 0.0)
    p["table writes"] = outputs - stages - p.get(query.VALIDATION, 0.0)
    return p


def make_job(spark: Any, cfg: config_mod.Config) -> Any:
    """The job as the configuration sets it up, with metrics and notifier off."""
    return _timed_job_class().from_config(spark, cfg)


def flush_batch_log(job: Any) -> None:
    """The job's own per-batch lines wait for query progress, which --once never delivers."""
    batch_log = getattr(job, "batch_log", None)
    if batch_log is not None:
        batch_log.flush()


#: delta-rs's storage options for tables on the S3 server (``bench_cluster.py --storage s3``).
OBJECT_STORE: dict[str, str] = {}


def open_delta(path: str) -> Any:
    """A table for delta-rs, on this machine or on the S3 server (:data:`OBJECT_STORE`)."""
    from deltalake import DeltaTable

    from groupwatch import storage

    if storage.is_s3(path):
        return DeltaTable(storage.for_delta_rs(path), storage_options=OBJECT_STORE)
    return DeltaTable(path)


def table_rows(cfg: config_mod.Config, name: str) -> int:
    return int(open_delta(cfg.table_path(name)).to_pyarrow_dataset().count_rows())


@dataclass
class RunResult:
    seconds: float
    setup: float = 0.0
    batches: int = 0
    phases: dict[str, float] = field(default_factory=dict)
    tables: dict[str, int] = field(default_factory=dict)


def run_baseline(spark: Any, cfg: config_mod.Config) -> RunResult:
    from groupwatch.spark.pipelines import RAW_TABLE, build_raw_copy

    writer = build_raw_copy(spark, cfg, once=True)
    started = time.perf_counter()
    query = writer.start()
    query.awaitTermination()
    seconds = time.perf_counter() - started
    batches = len(query.recentProgress)
    return RunResult(seconds, batches=batches, tables={RAW_TABLE: table_rows(cfg, RAW_TABLE)})


def run_job_once(spark: Any, cfg: config_mod.Config) -> RunResult:
    from groupwatch.spark import sinks

    started = time.perf_counter()
    # Creating the eight empty tables is a one-off of a new deployment: timed apart.
    sinks.ensure_tables(spark, cfg)
    setup = time.perf_counter() - started
    job = make_job(spark, cfg)
    writer = job.writer(once=True)
    started = time.perf_counter()
    query = writer.start()
    query.awaitTermination()
    # The upkeep thread's table under way (tables on an object store) is the run's too.
    job.close()
    seconds = time.perf_counter() - started
    flush_batch_log(job)
    from groupwatch.tables import TABLES

    return RunResult(
        seconds,
        setup=setup,
        batches=len(job.batch_seconds),
        phases=job.breakdown(),
        tables={name: table_rows(cfg, name) for name in TABLES},
    )


# -- state per group ---------------------------------------------------------------------------
def deep_size(obj: Any, seen: set[int] | None = None) -> int:
    """Bytes of ``obj`` and everything it references (containers, dataclass fields)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, list | tuple | set | frozenset):
        size += sum(deep_size(x, seen) for x in obj)
    elif hasattr(obj, "__dict__"):
        size += deep_size(vars(obj), seen)
    elif hasattr(obj, "__slots__"):
        size += sum(deep_size(getattr(obj, a), seen) for a in obj.__slots__ if hasattr(obj, a))
    return size


def state_report(cfg: config_mod.Config, groups_50: set[str]) -> dict[str, Any]:
    from deltalake import DeltaTable

    from groupwatch.detect import GroupState

    tbl = DeltaTable(cfg.table_path("group_state")).to_pyarrow_table(
        columns=["group", "batch_id", "state", "deleted"]
    )
    rows = tbl.to_pylist()
    newest: dict[str, dict[str, Any]] = {}
    for row in rows:
        old = newest.get(row["group"])
        if old is None or row["batch_id"] > old["batch_id"]:
            newest[row["group"]] = row
    states = [r["state"] for g, r in newest.items() if g in groups_50 and r["state"]]
    sizes = [len(s.encode()) for s in states]
    docs = [json.loads(s) for s in states]
    ownership = [len(json.dumps(d.get("ownership"))) for d in docs]
    detect = [len(json.dumps(d.get("detect"))) for d in docs]
    # Python memory of what a worker holds per group: the parsed JSON plus the engine state.
    # (Summed object sizes: tracemalloc.stop() can crash CPython 3.11 while py4j threads run.)
    held = [
        deep_size((doc, GroupState.from_json(doc["detect"]) if doc.get("detect") else None))
        for doc in docs
    ]
    n = max(1, len(states))
    return {
        "rows": len(rows),
        "groups": len(newest),
        "groups_50": len(states),
        "mean": statistics.fmean(sizes) if sizes else 0.0,
        "max": max(sizes, default=0),
        "ownership_mean": statistics.fmean(ownership) if ownership else 0.0,
        "detect_mean": statistics.fmean(detect) if detect else 0.0,
        "python_mean": sum(held) / n,
    }


# -- latency -----------------------------------------------------------------------------------
def overlap_record(group: str, now_ms: int) -> tuple[bytes, bytes]:
    """Generation 1 of a group whose two members are both assigned ``lat-1``."""

    def member(member_id: str, partitions: tuple[int, ...]) -> MemberMetadata:
        sub = ConsumerProtocolSubscription(3, ("lat",), None, (), -1, None)
        asg = ConsumerProtocolAssignment(3, (TopicPartitions("lat", partitions),), None)
        return MemberMetadata(
            member_id,
            "latency-probe",
            "/127.0.0.1",
            45000,
            encode_subscription(sub),
            encode_assignment(asg),
            None,
            300000,
        )

    members = (member(f"{group}-a", (0, 1)), member(f"{group}-b", (1,)))
    value = GroupMetadataValue("consumer", 1, "range", members[0].member_id, members, now_ms)
    return encode_key(GroupMetadataKey(group)), encode_value(value, 3)


def finding_groups(path: str, kind: str) -> set[str]:
    tbl = open_delta(path).to_pyarrow_table(columns=["group", "kind"])
    return {
        g
        for g, k in zip(tbl["group"].to_pylist(), tbl["kind"].to_pylist(), strict=True)
        if k == kind
    }


def await_finding(
    table: Any, path: str, group: str, version: int, deadline: float, query: Any = None
) -> int:
    """Poll the findings table (every 50 ms, on each new version) until ``group`` has an
    ``assignment_overlap``; returns the table version it was read at.  Raises past ``deadline``
    (``time.monotonic()``) or when ``query`` has failed."""
    while True:
        if time.monotonic() > deadline:
            raise RuntimeError(f"no finding for {group} by the deadline")
        if query is not None and query.exception() is not None:
            raise RuntimeError(f"the query failed: {query.exception()}")
        table.update_incremental()
        if table.version() != version:
            version = table.version()
            if group in finding_groups(path, "assignment_overlap"):
                return int(version)
        time.sleep(0.05)


@dataclass(frozen=True)
class Probe:
    """An overlap record of a new group, produced; :meth:`latency` waits for its finding."""

    group: str
    #: The findings table, and its version before the record existed (any later may hold it).
    path: str
    table: Any
    version: int
    #: ``time.monotonic()`` at the produce call.
    sent: float
    #: Seconds until the broker acknowledged the record.
    ack: float

    def latency(self, timeout: float = 120.0, query: Any = None) -> float:
        """Seconds from the produce call until the group's ``assignment_overlap`` row is
        readable (:func:`await_finding`; raises ``RuntimeError`` past ``timeout`` s)."""
        await_finding(self.table, self.path, self.group, self.version, self.sent + timeout, query)
        return time.monotonic() - self.sent


def send_probe(producer: Any, topic: str, path: str, group: str) -> Probe:
    """Produce generation 1 of a new ``group`` whose two members are both assigned one
    partition, to its coordinator's partition of ``topic``; ``path`` is the findings table."""
    key, value = overlap_record(group, int(time.time() * 1000))
    table = open_delta(path)
    version = table.version()
    sent = time.monotonic()
    producer.send(topic, key=key, value=value, partition=coordinator_partition(group)).get(
        timeout=30
    )
    return Probe(group, path, table, int(version), sent, time.monotonic() - sent)


def run_latency(
    spark: Any,
    bootstrap: str,
    root: Path,
    samples: int,
    warmup: int,
    interval: float,
    mode: str = "back-to-back",
) -> dict[str, Any]:
    from kafka import KafkaProducer

    topic = f"bench-latency-{mode}"
    create_mirror(bootstrap, topic)
    cfg = bench_config(bootstrap, topic, root, trigger="1 second")
    job = make_job(spark, cfg)
    query = job.writer(once=False).start()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, metrics_enabled=False)
    path = cfg.table_path("findings")
    seen: list[float] = []
    acks: list[float] = []
    try:
        next_at = time.monotonic() + 3.0  # let the query settle into its trigger loop
        for i in range(warmup + samples):
            time.sleep(max(0.0, next_at - time.monotonic()))
            if mode == "isolated":
                # The previous record's batch is over (its other tables written too); a random
                # wait spreads the produce moments evenly over the 1 s trigger period.
                while query.status["isTriggerActive"]:
                    time.sleep(0.05)
                time.sleep(random.uniform(0.0, 1.0))
            probe = send_probe(producer, topic, path, f"latency-{mode}-{i:03d}")
            latency, acked = probe.latency(), probe.ack
            label = "warm-up" if i < warmup else f"sample {i - warmup + 1}/{samples}"
            log(f"  {label}: {latency:.2f}s (produce ack {acked * 1000:.0f} ms)")
            if i >= warmup:
                seen.append(latency)
                acks.append(acked)
            next_at = probe.sent + interval + random.uniform(-0.5, 0.5)
        # Stopping inside a batch interrupts its writes: let the last one finish first.
        deadline = time.monotonic() + 180
        while query.status["isTriggerActive"] and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        producer.close()
        query.stop()
        flush_batch_log(job)
    ordered = sorted(seen)

    def pct(q: float) -> float:
        return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]

    return {
        "samples": len(seen),
        "p50": statistics.median(ordered),
        "p95": pct(0.95),
        "max": ordered[-1],
        "min": ordered[0],
        "ack_p50": statistics.median(acks),
        "batches": len(job.batch_seconds),
        "batch_p50": statistics.median(job.batch_seconds) if job.batch_seconds else 0.0,
        "phases": job.breakdown(),
    }


# -- mapInArrow against the cogrouped applyInArrow --------------------------------------------
ARROW_SCHEMA = "group string, members int"


def _decode_arrow(decode_records: bool) -> Callable[..., Any]:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from groupwatch.processing import SourceRecord
        from groupwatch.processing import decode as decode_source

        decode = decode_source if decode_records else None
        for batch in batches:
            cols = {name: batch.column(name).to_pylist() for name in batch.schema.names}
            groups, members = [], []
            for g, k, v, t, p, o, ts in zip(
                cols["group"],
                cols["key"],
                cols["value"],
                cols["topic"],
                cols["partition"],
                cols["offset"],
                cols["ts"],
                strict=True,
            ):
                groups.append(g)
                if decode is None:
                    members.append(len(v))
                    continue
                decoded = decode(SourceRecord(k, v, t, p, o, ts))
                members.append(len(decoded.value.members))
            yield pa.RecordBatch.from_pydict(
                {"group": groups, "members": members},
                schema=pa.schema([("group", pa.string()), ("members", pa.int32())]),
            )

    return run


def _decode_cogroup(decode_records: bool) -> Callable[..., Any]:
    def run(rec: Any, st: Any) -> Any:
        import pyarrow as pa

        from groupwatch.processing import decode
        from groupwatch.spark.python_stage import source_records

        schema = pa.schema([("group", pa.string()), ("members", pa.int32())])
        if rec.num_rows == 0:
            return schema.empty_table()
        # As the job's worker does per group: order, make records, decode.
        group = str(rec.column("group")[0].as_py())
        members = []
        for record in source_records(rec):
            if not decode_records:
                members.append(len(record.value or b""))
                continue
            members.append(len(decode(record).value.members))
        return pa.table({"group": [group] * len(members), "members": members}, schema=schema)

    return run


def record_schema() -> Any:
    """The Arrow schema of the records the Python stage receives (the cogroup's left side)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("group", pa.string()),
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("ts", pa.int64()),
        ]
    )


def run_arrow(spark: Any, n_records: int, repeat: int, work: Path) -> dict[str, dict[str, float]]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    backlog = Backlog(n_records * 100, "arrow")
    cols: dict[str, list[Any]] = defaultdict(list)
    for n in range(backlog.gm_count):
        g, key, value = backlog.group_metadata(n)
        for name, item in zip(
            ("group", "key", "value", "topic", "partition", "offset", "ts"),
            (backlog.gm_groups[g], key, value, "mirror", backlog.partition[g], n, BASE_MS + n),
            strict=True,
        ):
            cols[name].append(item)
    schema = record_schema()
    # Through a file: a local DataFrame this size rides inside every task and overflows the
    # default 1 GB heap of a local session.
    path = work / "arrow-input.parquet"
    pq.write_table(pa.Table.from_pydict(cols, schema=schema), path)
    n_rows = len(cols["key"])
    total_bytes = sum(map(len, cols["value"]))
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    df = spark.read.parquet(str(path)).repartition(partitions).cache()
    log(f"  {df.count():,} group-metadata records cached ({total_bytes / 1e6:.0f} MB of values)")
    state = spark.createDataFrame([], "group string, state string, topic string, max_partition int")

    def arrow(decode_records: bool) -> Any:
        return df.mapInArrow(_decode_arrow(decode_records), ARROW_SCHEMA)

    def arrow_grouped(decode_records: bool) -> Any:
        # What mapInArrow would need to keep the job's per-group order: records of a group
        # together, in offset order, within one partition.
        ordered = df.repartition(partitions, "group").sortWithinPartitions(
            "group", "partition", "offset"
        )
        return ordered.mapInArrow(_decode_arrow(decode_records), ARROW_SCHEMA)

    def cogroup(decode_records: bool) -> Any:
        return (
            df.groupBy("group")
            .cogroup(state.groupBy("group"))
            .applyInArrow(_decode_cogroup(decode_records), ARROW_SCHEMA)
        )

    variants: dict[str, Callable[[], Any]] = {
        "mapInArrow, decode": lambda: arrow(True),
        "cogroup applyInArrow (job), decode": lambda: cogroup(True),
        "repartition+sort+mapInArrow, decode": lambda: arrow_grouped(True),
        "mapInArrow, transport only": lambda: arrow(False),
        "cogroup applyInArrow (job), transport only": lambda: cogroup(False),
    }
    times: dict[str, list[float]] = defaultdict(list)
    for attempt in range(repeat):
        for name, build in variants.items():
            started = time.perf_counter()
            row = build().agg(F.count(F.lit(1)).alias("n"), F.sum("members").alias("m")).first()
            seconds = time.perf_counter() - started
            times[name].append(seconds)
            assert row is not None and row["n"] == n_rows, (name, row)
            if "decode" in name:
                assert row["m"] == MEMBERS * n_rows, (name, row)
            log(f"  [{attempt + 1}/{repeat}] {name}: {seconds:.2f}s")
    df.unpersist()
    return {
        name: {"best": min(ts), "all": ts, "rate": n_rows / min(ts)}  # type: ignore[dict-item]
        for name, ts in times.items()
    }


# -- main --------------------------------------------------------------------------------------
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default="throughput,state,latency,arrow")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument(
        "--max-offsets-per-trigger",
        default="0",
        help="comma separated; 0 = no limit (one batch); each value is one baseline + job run",
    )
    ap.add_argument("--warmup-records", type=int, default=20_000)
    ap.add_argument("--latency-samples", type=int, default=20)
    ap.add_argument("--latency-warmup", type=int, default=2)
    ap.add_argument("--latency-interval", type=float, default=2.5)
    ap.add_argument("--latency-modes", default="isolated,back-to-back")
    ap.add_argument("--arrow-records", type=int, default=10_000)
    ap.add_argument("--arrow-repeat", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the work folder and the broker")
    args = ap.parse_args()
    benches = {b.strip() for b in args.bench.split(",") if b.strip()}
    if "state" in benches:
        benches.add("throughput")
    limits = [int(x) for x in args.max_offsets_per_trigger.split(",")]

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("groupwatch.job").setLevel(logging.DEBUG)
    log(f"bench_job: {', '.join(sorted(benches))}; {os.cpu_count()} cores, load {load_text()}")
    log(f"groupwatch {source_version()}")
    work = Path(tempfile.mkdtemp(prefix="groupwatch-bench-"))
    summary: list[str] = []
    broker = None
    bootstrap = ""
    try:
        from groupwatch_dev.broker import LocalBroker

        if benches & {"throughput", "latency"}:
            broker = LocalBroker("bench")
            bootstrap = broker.start(fresh=True).bootstrap
            log(f"broker 'bench' at {bootstrap}")

        from groupwatch.spark.session import build_session

        spark = build_session(bench_config(bootstrap or "none:0", "none", work / "session"))
        log(f"spark {spark.version} session up, master {spark.sparkContext.master}")

        if "throughput" in benches:
            backlog_started = time.perf_counter()
            backlog = Backlog(args.records, "bench")
            log(
                f"payloads encoded in {time.perf_counter() - backlog_started:.1f}s: "
                f"{len(backlog.gm_groups)} groups x {MEMBERS} members, "
                f"{len(backlog.all_groups)} groups committing; "
                f"GM value {min(map(len, backlog.values['sticky'])):,}-"
                f"{max(map(len, backlog.values['cooperative-sticky'])):,} bytes"
            )
            create_mirror(bootstrap, "bench-mirror")
            started = time.perf_counter()
            produced = produce(bootstrap, "bench-mirror", iter(backlog))
            produce_s = time.perf_counter() - started
            log(
                f"produced {produced:,} records in {produce_s:.1f}s ({produced / produce_s:,.0f}/s)"
            )
            summary.append(
                f"produce: {produced:,} records ({backlog.gm_count:,} group metadata) in "
                f"{produce_s:.1f}s = {produced / produce_s:,.0f} records/s (kafka-python)"
            )

            if args.warmup_records:
                warm = Backlog(args.warmup_records, "warm", seed=11)
                create_mirror(bootstrap, "bench-warmup")
                produce(bootstrap, "bench-warmup", iter(warm))
                log(f"warm-up on {args.warmup_records:,} records (JIT, Python workers)")
                run_baseline(spark, bench_config(bootstrap, "bench-warmup", work / "warm-base"))
                run_job_once(spark, bench_config(bootstrap, "bench-warmup", work / "warm-job"))
                log("warm-up done")

            for limit in limits:
                tag = f"max-offsets {limit:,}" if limit else "one batch"
                log(f"baseline raw copy ({tag}), load {load_text()}")
                base = run_baseline(
                    spark,
                    bench_config(
                        bootstrap, "bench-mirror", work / f"base-{limit}", max_offsets=limit
                    ),
                )
                copied = base.tables["raw_records"]
                assert copied == produced, (copied, produced)
                log(
                    f"baseline: {base.seconds:.1f}s, {produced / base.seconds:,.0f} records/s, "
                    f"{base.batches} batch(es)"
                )
                log(f"job ({tag}), load {load_text()}")
                cfg = bench_config(
                    bootstrap, "bench-mirror", work / f"job-{limit}", max_offsets=limit
                )
                run = run_job_once(spark, cfg)
                ratio = base.seconds / run.seconds
                log(
                    f"job: {run.seconds:.1f}s, {produced / run.seconds:,.0f} records/s, "
                    f"{run.batches} batch(es); ratio job/baseline {ratio:.2f}"
                )
                steps = ", ".join(
                    f"{k} {v:.1f}" for k, v in sorted(run.phases.items(), key=lambda kv: -kv[1])
                )
                log(f"job time by step (s): {steps}")
                summary.append(
                    f"throughput ({tag}), load {load_text()}:\n"
                    f"  baseline raw copy  {base.seconds:7.1f}s  {produced / base.seconds:10,.0f} "
                    f"records/s  ({base.batches} batches)\n"
                    f"  job                {run.seconds:7.1f}s  {produced / run.seconds:10,.0f} "
                    f"records/s  ({run.batches} batches; table creation {run.setup:.1f}s apart)\n"
                    f"  ratio job/baseline {ratio:.2f}  (target >= 0.5: "
                    f"{'met' if ratio >= 0.5 else 'NOT met'})"
                )
                summary.append(f"  job time by step (s): {steps}")
                summary.append(
                    "  rows: " + ", ".join(f"{k} {v:,}" for k, v in sorted(run.tables.items()))
                )
                if "state" in benches:
                    st = state_report(cfg, set(backlog.gm_groups))
                    line = (
                        f"state ({tag}): group_state {st['rows']:,} rows, {st['groups']:,} "
                        f"groups; {st['groups_50']:,} 50-member groups: state JSON mean "
                        f"{st['mean']:,.0f} B, max {st['max']:,} B (ownership "
                        f"{st['ownership_mean']:,.0f} B, detect {st['detect_mean']:,.0f} B); "
                        f"Python objects {st['python_mean']:,.0f} B per group"
                    )
                    log(line)
                    summary.append(line)

        if "latency" in benches:
            for mode in [m for m in args.latency_modes.split(",") if m]:
                log(f"latency ({mode}): {args.latency_samples} samples, load {load_text()}")
                lat = run_latency(
                    spark,
                    bootstrap,
                    work / f"latency-{mode}",
                    args.latency_samples,
                    args.latency_warmup,
                    args.latency_interval,
                    mode,
                )
                line = (
                    f"latency ({mode}, 1 s trigger, {lat['samples']} samples), load "
                    f"{load_text()}: p50 {lat['p50']:.2f}s, p95 {lat['p95']:.2f}s, max "
                    f"{lat['max']:.2f}s, min {lat['min']:.2f}s (target p95 <= 5 s: "
                    f"{'met' if lat['p95'] <= 5 else 'NOT met'}); produce ack p50 "
                    f"{lat['ack_p50'] * 1000:.0f} ms; {lat['batches']} batches, median "
                    f"{lat['batch_p50']:.2f}s"
                )
                per_batch = max(1, lat["batches"])
                steps = ", ".join(
                    f"{k} {v / per_batch:.2f}"
                    for k, v in sorted(lat["phases"].items(), key=lambda kv: -kv[1])
                )
                log(line)
                log(f"mean batch time by step (s): {steps}")
                summary += [line, f"  mean batch time by step (s): {steps}"]

        if "arrow" in benches:
            log(f"arrow operators on {args.arrow_records:,} records, load {load_text()}")
            res = run_arrow(spark, args.arrow_records, args.arrow_repeat, work)
            lines = [f"arrow operators ({args.arrow_records:,} GM records), load {load_text()}:"]
            for name, r in res.items():
                tries = "/".join(f"{t:.1f}" for t in r["all"])  # type: ignore[attr-defined]
                lines.append(
                    f"  {name:<44} {r['best']:6.2f}s  {r['rate']:8,.0f} records/s  ({tries})"
                )
            a, c = (
                res["mapInArrow, decode"]["best"],
                res["cogroup applyInArrow (job), decode"]["best"],
            )
            ta = res["mapInArrow, transport only"]["best"]
            tc = res["cogroup applyInArrow (job), transport only"]["best"]
            lines.append(
                f"  decode: applyInArrow / mapInArrow time = {c / a:.2f}; "
                f"transport only: {tc / ta:.2f}"
            )
            summary += lines
            for line in lines:
                log(line)

        spark.stop()
    finally:
        if broker is not None and not args.keep:
            broker.stop()
            shutil.rmtree(broker.dir, ignore_errors=True)
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
        # Also after a failure: what was measured before it is still worth having.
        print("\n== summary ==", flush=True)
        total = time.monotonic() - T0
        print(f"{os.cpu_count()} cores, load at the end {load_text()}, total {total:.0f}s")
        print(f"groupwatch {source_version()}")
        for line in summary:
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
