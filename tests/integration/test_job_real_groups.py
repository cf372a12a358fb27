"""Real consumer groups on the real broker -> the job -> Delta: snapshots, history, no alarms."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupwatch.demo.java_members import JavaGroupMembers
from groupwatch.demo.traffic import create_topic, produce
from tests.realgroups import make_config, run_once, table

pytestmark = [pytest.mark.broker, pytest.mark.spark]

PARTITIONS = 6


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


def test_real_groups_land_in_delta_without_alarms(
    spark, real_groups: dict[str, str], broker: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    cfg = make_config(broker, tmp_path)
    run_once(spark, cfg)

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
