"""Real consumer groups on the real broker -> the job -> Delta: snapshots, history, no alarms.

Classic groups (eager and cooperative) and a KIP-848 group (Kafka's Java client on
``group.protocol=consumer``) live on the test broker; the job then reads ``__consumer_offsets``
once, with the KIP-848 group still running.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient

from groupwatch import config
from groupwatch_dev.demo.java_members import JavaGroupMembers
from groupwatch_dev.demo.traffic import create_topic, produce
from tests.realgroups import make_config, run_once, table

pytestmark = [pytest.mark.broker, pytest.mark.spark]

PARTITIONS = 6
MODERN_GROUP = "jobtest-kip848"
MODERN_TOPIC = "jobtest-kip848-orders"
#: past ``detect.modern_confirm_seconds`` (10): what the group's last state shows is decided
CONFIRM_WAIT_SECONDS = 12


@pytest.fixture(scope="module")
def real_groups(broker: str) -> dict[str, str]:
    """An eager (range) and a cooperative-sticky group: join, scale out, leave, restart."""
    create_topic(broker, "jobtest-orders", PARTITIONS)
    produce(broker, "jobtest-orders", [(None, b"x%d" % i) for i in range(30)])
    groups = {"jobtest-eager": "range", "jobtest-coop": "cooperative-sticky"}
    with JavaGroupMembers(broker) as members:
        for group, assignor in groups.items():
            names = [f"{group}-{i}" for i in range(3)]
            for i, name in enumerate(names):  # scale out one by one
                members.join(name, group, ["jobtest-orders"], assignor)
                members.wait_covered(names[: i + 1], PARTITIONS)
            members.leave(names[0])  # a member leaves
            members.wait_covered(names[1:], PARTITIONS)
            members.join(names[0] + "-restarted", group, ["jobtest-orders"], assignor)  # restart
            members.wait_covered([names[0] + "-restarted", *names[1:]], PARTITIONS)
    return groups


def _committed(broker: str, group: str) -> int:
    admin = KafkaAdminClient(bootstrap_servers=broker)
    try:
        offsets = admin.list_group_offsets({group: None}).get(group) or {}
        return sum(o.offset for o in offsets.values() if o.offset >= 0)
    finally:
        admin.close()


@pytest.fixture(scope="module")
def modern_group(broker: str) -> Iterator[list[str]]:
    """A KIP-848 group (the broker's ``uniform`` assignor): three members join one by one and
    the first leaves; the other two keep running while the job reads.  Once they are at rest,
    they consume and commit once more, after the confirmation time: the commits move the
    stream time of the group's ``__consumer_offsets`` partition past every deadline, so the
    job judges the group's final state.  Yields the names of the members still running."""
    create_topic(broker, MODERN_TOPIC, PARTITIONS)
    produce(broker, MODERN_TOPIC, [(None, b"m%d" % i) for i in range(30)])
    with JavaGroupMembers(broker) as members:
        names = [f"{MODERN_GROUP}-{i}" for i in range(3)]
        for i, name in enumerate(names):
            members.join(name, MODERN_GROUP, [MODERN_TOPIC], "uniform", protocol="consumer")
            members.wait_covered(names[: i + 1], PARTITIONS)
        members.leave(names[0])
        members.wait_covered(names[1:], PARTITIONS)
        deadline = time.monotonic() + 60
        while _committed(broker, MODERN_GROUP) < 30:
            assert time.monotonic() < deadline, "the members did not commit what they read"
            time.sleep(0.5)
        time.sleep(CONFIRM_WAIT_SECONDS)
        produce(broker, MODERN_TOPIC, [(None, b"late%d" % i) for i in range(12)])
        while _committed(broker, MODERN_GROUP) < 42:
            assert time.monotonic() < deadline + 60, "the members did not commit the late records"
            time.sleep(0.5)
        assert members.errors() == []
        yield names[1:]


@pytest.fixture(scope="module")
def job_run(
    spark,
    real_groups: dict[str, str],
    modern_group: list[str],
    broker: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> config.Config:  # type: ignore[no-untyped-def]
    """``groupwatch run --once`` over the broker's ``__consumer_offsets``, fresh tables."""
    cfg = make_config(broker, tmp_path_factory.mktemp("job-real-groups"))
    run_once(spark, cfg)
    return cfg


def test_real_groups_land_in_delta_without_alarms(
    spark, real_groups: dict[str, str], job_run: config.Config
) -> None:  # type: ignore[no-untyped-def]
    cfg = job_run
    snaps = table(spark, cfg, "group_snapshots").where("group LIKE 'jobtest-%'").collect()
    for group, assignor in real_groups.items():
        mine = [s for s in snaps if s.group == group and not s.tombstone]
        assert len({s.generation for s in mine}) >= 4, group  # 3 joins, a leave, a rejoin
        assert {s.protocol for s in mine if s.member_count} == {assignor}

    # The ownership history at the last generation with members: every partition owned once,
    # by members of that generation; the group emptied afterwards, so nothing is open now.
    own = table(spark, cfg, "partition_ownership").where("group LIKE 'jobtest-%'").collect()
    for group in real_groups:
        mine = [r for r in own if r.group == group]
        last = max(
            (x for x in snaps if x.group == group and x.member_count),
            key=lambda x: x.source_offset,
        )
        g = last.generation
        held = [
            r
            for r in mine
            if r.from_generation <= g and (r.to_generation is None or r.to_generation > g)
        ]
        assert sorted(r.partition for r in held) == list(range(PARTITIONS)), group
        live = {
            m.member_id
            for m in table(spark, cfg, "member_assignments")
            .where(f"group = '{group}' AND source_offset = {last.source_offset}")
            .collect()
        }
        assert {r.member_id for r in held} <= live
        assert any(r.to_generation is not None and r.to_generation <= g for r in mine), (
            "scale-outs moved partitions: closed intervals expected"
        )
        keys = [(r.partition, r.from_generation, r.member_id) for r in mine]
        assert len(keys) == len(set(keys)), "one row per interval"

    members = table(spark, cfg, "member_assignments").where("group = 'jobtest-coop'").collect()
    assert members and all(m.subscription_version is not None for m in members)
    assert all(m.claim_generation >= -1 for m in members)

    alarms = (
        table(spark, cfg, "findings")
        .where("group LIKE 'jobtest-%' AND severity IN ('critical', 'warning', 'error')")
        .collect()
    )
    assert alarms == [], [(a.kind, a.group, a.generation, a.detail) for a in alarms]
    assert table(spark, cfg, "quarantine").count() == 0
    results = table(spark, cfg, "validation_results").collect()
    assert results and all(r.success for r in results)


def test_a_kip848_group_lands_in_delta_by_member_epoch(
    spark, modern_group: list[str], job_run: config.Config
) -> None:  # type: ignore[no-untyped-def]
    cfg = job_run
    mine = f"group = '{MODERN_GROUP}'"
    snaps = sorted(
        table(spark, cfg, "group_snapshots").where(mine).collect(), key=lambda r: r.source_offset
    )
    assert snaps and {(s.group_type, s.protocol_type) for s in snaps} == {("consumer", "consumer")}
    epochs = [s.generation for s in snaps]
    assert epochs == sorted(set(epochs)) and len(epochs) >= 4, epochs  # 3 joins and a leave
    assert {s.protocol for s in snaps} == {"uniform"}
    assert all(s.assignment_epoch is None or s.assignment_epoch <= s.generation for s in snaps)

    rows = sorted(
        table(spark, cfg, "member_assignments").where(mine).collect(),
        key=lambda r: r.source_offset,
    )
    assert rows and {r.group_type for r in rows} == {"consumer"}
    # The member that left ends with a row of no epoch and no state (its record's tombstone).
    departed = [r for r in rows if r.member_epoch is None]
    assert len(departed) == 1 and departed[0].member_state is None
    assert not departed[0].assignment and not departed[0].pending_revocation
    assert departed[0].client_id is not None and departed[0].client_id not in modern_group
    rows = [r for r in rows if r.member_epoch is not None]
    assert {r.member_state for r in rows} <= {"STABLE", "UNREVOKED", "UNRELEASED"}
    # Scale-outs: an old member gives partitions up (UNREVOKED, pending) before the new one
    # gets them (UNRELEASED while it waits).
    assert any(r.member_state == "UNREVOKED" and r.pending_revocation for r in rows)
    assert all(r.member_epoch >= 1 and r.member_epoch <= r.generation for r in rows)
    # Topics by name (the group's records name none before its first commit: the brokers do).
    named = {tp.topic for r in rows for side in (r.assignment, r.target or []) for tp in side}
    assert named == {MODERN_TOPIC}
    assert {tuple(r.topics) for r in rows} == {(MODERN_TOPIC,)}
    assert {r.client_id for r in rows} >= set(modern_group)
    # At rest: each running member's last record is STABLE at its target, and together they
    # hold every partition once.
    last: dict[str, Any] = {}
    for r in rows:
        last[r.member_id] = r
    running = [r for r in last.values() if r.client_id in modern_group]
    assert len(running) == 2 and all(r.member_state == "STABLE" for r in running)
    held = sorted(p for r in running for tp in r.assignment for p in tp.partitions)
    assert held == list(range(PARTITIONS))
    assert all(r.assignment == r.target and not r.pending_revocation for r in running)

    # Ownership by member epoch: one holder at a time per partition, pending counted as held.
    own = table(spark, cfg, "partition_ownership").where(mine).collect()
    assert own and {(o.group_type, o.topic) for o in own} == {("consumer", MODERN_TOPIC)}
    by_partition: dict[int, list[Any]] = defaultdict(list)
    for o in own:
        by_partition[o.partition].append(o)
    assert sorted(by_partition) == list(range(PARTITIONS))
    for partition, intervals in by_partition.items():
        intervals.sort(key=lambda o: o.from_time)
        for before, after in zip(intervals, intervals[1:], strict=False):
            assert before.to_time is not None and before.to_time <= after.from_time, partition
            assert before.to_generation > before.from_generation, partition
    open_now = {(o.partition, o.member_id) for o in own if o.to_generation is None}
    assert sorted(p for p, _ in open_now) == list(range(PARTITIONS))
    assert {m for _, m in open_now} == {r.member_id for r in running}
    assert any(o.to_generation is not None for o in own), "the scale-outs moved partitions"

    # The last batch read everything: the group's final state was judged, past its
    # confirmation time (the late commits), and nothing of it awaits anything.
    newest = table(spark, cfg, "group_state").where(mine).orderBy("batch_id").collect()[-1]
    assert newest.pending_until is None and not newest.deleted
    modern = json.loads(newest.state)["detect"]["modern"]
    assert modern["dirty"] is False and modern["watch"] == []
    findings = table(spark, cfg, "findings").where(mine).collect()
    alarms = [f for f in findings if f.severity != "info"]
    assert alarms == [], [(a.kind, a.member, a.detail) for a in alarms]
    quarantined = table(spark, cfg, "quarantine").where(mine).count()
    assert quarantined == 0
