"""A fleet of a few thousand groups as Delta tables, written with delta-rs (no broker, no Spark),
for the dashboard's tests at scale.

``groups`` classic groups of 1-6 members on a topic of their own, one generation each, healthy;
``CRITICAL`` of them (``crit-000``...) with an ``assignment_overlap`` in their latest generation
(one partition assigned to two members); one group of ``big`` members (``BIG``) on a topic of
``big`` partitions, with an overlap too, and its ownership intervals; and ``MODERN`` KIP-848
consumer groups (``kip848-000``...), members counted from their own records.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.dashboard.scenario import tps, write

BIG = "fleet-big"
CRITICAL = 5
MODERN = 20


def build(root: Path, groups: int = 3000, big: int = 2000) -> dict[str, Any]:
    now = datetime.now(UTC).replace(microsecond=0)
    snaps: list[dict[str, Any]] = []
    members: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    ownership: list[dict[str, Any]] = []
    offsets: list[dict[str, Any]] = []
    offset = 0

    def src(at: datetime) -> dict[str, Any]:
        nonlocal offset
        offset += 1
        return {
            "source_topic": "__consumer_offsets",
            "source_partition": offset % 50,
            "source_offset": offset,
            "source_timestamp": at,
            "snapshot_date": at.date(),
        }

    def classic(name: str, size: int, at: datetime, overlap: bool) -> None:
        where = src(at)
        topic = f"t-{name}"
        snaps.append(
            {
                "group": name,
                "generation": 3,
                "protocol_type": "consumer",
                "protocol": "range",
                "leader": f"{name}-m0",
                "current_state_timestamp": at,
                "member_count": size,
                "record_version": 3,
                "tombstone": False,
                **where,
            }
        )
        for i in range(size):
            parts = [(topic, i)] + ([(topic, 0)] if overlap and i == 1 else [])
            members.append(
                {
                    "group": name,
                    "generation": 3,
                    "member_id": f"{name}-m{i}",
                    "client_id": f"client-{i}",
                    "topics": [topic],
                    "claim": tps(*parts),
                    "claim_generation": 2,
                    "assignment": tps(*parts),
                    **where,
                }
            )
            ownership.append(
                {
                    "group": name,
                    "topic": topic,
                    "partition": i,
                    "member_id": f"{name}-m{i}",
                    "client_id": f"client-{i}",
                    "from_generation": 3,
                    "from_time": at,
                }
            )
        offsets.append({"group": name, "topic": topic, "max_partition": size - 1, "commits": size})
        if overlap:
            findings.append(
                {
                    "finding_id": f"f-{name}",
                    "kind": "assignment_overlap",
                    "severity": "critical",
                    "group": name,
                    "generation": 3,
                    "topic": topic,
                    "partition": 0,
                    "members": [f"{name}-m0", f"{name}-m1"],
                    "partitions": tps((topic, 0)),
                    "detail": f"{topic}-0 is assigned to two members",
                    "evidence": json.dumps({"owners": [f"{name}-m0", f"{name}-m1"]}),
                    "source": {
                        "topic": "__consumer_offsets",
                        "partition": where["source_partition"],
                        "offset": where["source_offset"],
                        "timestamp": int(at.timestamp() * 1000),
                    },
                    "detected_at": at + timedelta(seconds=1),
                }
            )

    for i in range(groups):
        at = now - timedelta(minutes=5 + i % 600)
        crit = i < CRITICAL
        # Names that do not sort the critical ones first: the page's order must.
        name = f"crit-{i:03d}" if crit else f"g{(i * 7919) % groups:05d}"
        classic(name, 1 + i % 6, at, crit)
    classic(BIG, big, now - timedelta(minutes=3), True)
    for i in range(MODERN):
        name, at = f"kip848-{i:03d}", now - timedelta(minutes=2 + i)
        topic = f"t-{name}"
        snaps.append(
            {
                "group": name,
                "group_type": "consumer",
                "generation": 4,
                "assignment_epoch": 4,
                "protocol_type": "consumer",
                "tombstone": False,
                **src(at),
            }
        )
        for k in range(3):
            members.append(
                {
                    "group": name,
                    "group_type": "consumer",
                    "member_id": f"{name}-m{k}",
                    "member_epoch": 4,
                    "member_state": "STABLE",
                    "client_id": f"client-{k}",
                    "topics": [topic],
                    "assignment": tps((topic, k)),
                    "target": tps((topic, k)),
                    "pending_revocation": [],
                    **src(at + timedelta(seconds=1 + k)),
                }
            )
    for table, rows in (
        ("group_snapshots", snaps),
        ("member_assignments", members),
        ("findings", findings),
        ("partition_ownership", ownership),
        ("group_offsets", offsets),
    ):
        write(root, table, rows)
    return {"groups": groups + 1 + MODERN, "critical": CRITICAL + 1}
