"""A fleet of a few thousand groups as Delta tables, written with delta-rs (no broker, no Spark),
for the dashboard's tests at scale.

``groups`` classic groups of 1-6 members on a topic of their own, one generation each, healthy;
``CRITICAL`` of them (``crit-000``...) with an ``assignment_overlap`` in their latest generation
(one partition assigned to two members); one group of ``big`` members (``BIG``) on a topic of
``big`` partitions, with an overlap too, and its ownership intervals; and ``MODERN`` KIP-848
consumer groups (``kip848-000``...), members counted from their own records.

With ``lag`` (the default), the lag tables too (``partition_lag``, ``lag_history``,
``end_offsets``, the contract's columns): every partition of every group with a committed
offset, mostly ``ok`` or ``idle``; ``STOPPED`` groups (``crit-`` ones and others) with one
stopped partition; one group (``LAG_TOP``) furthest behind in time, its lag a lower bound
(``≥``); the big group's 2,000 partitions; and a lag history of ``POLLS`` polls per group and
topic.
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
#: Every this many classic groups, one with a stopped partition.
STOPPED_EVERY = 97
#: The group furthest behind in seconds (a lower bound), and by how much.
LAG_TOP = "g00042"
LAG_TOP_SECONDS = 90_000.0
#: Lag history: polls per group and topic, five minutes apart.
POLLS = 12


def build(
    root: Path, groups: int = 3000, big: int = 2000, lag: bool = True, generation: int = 3
) -> dict[str, Any]:
    """The fleet at ``now``; its classic groups at ``generation`` (a benchmark that writes
    their earlier generations as history starts them higher)."""
    now = datetime.now(UTC).replace(microsecond=0)
    lag_rows: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    ends: list[dict[str, Any]] = []
    stopped: set[str] = set()
    sizes: dict[str, int] = {}
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
                "generation": generation,
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
                    "generation": generation,
                    "member_id": f"{name}-m{i}",
                    "client_id": f"client-{i}",
                    "topics": [topic],
                    "claim": tps(*parts),
                    "claim_generation": generation - 1,
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
                    "from_generation": generation,
                    "from_time": at,
                }
            )
        offsets.append({"group": name, "topic": topic, "max_partition": size - 1, "commits": size})
        if lag:
            partition_lag(name, topic, size, at)
        if overlap:
            findings.append(
                {
                    "finding_id": f"f-{name}",
                    "kind": "assignment_overlap",
                    "severity": "critical",
                    "group": name,
                    "generation": generation,
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

    def partition_lag(name: str, topic: str, size: int, at: datetime) -> None:
        """Every partition's lag, owner m<i>; a stopped one, or the top one, as the name says."""
        h = sum(map(ord, name))
        for i in range(size):
            status, behind, seconds, at_least = ("ok", h % 50 + i, float(h % 30) + 0.5, False)
            if h % 4 == 0:
                status, behind, seconds = "idle", 0, 0.0
            if i == 0 and name == LAG_TOP:
                status, behind, seconds, at_least = "lagging", 5_000, LAG_TOP_SECONDS, True
            elif i == 0 and (name in stopped_names):
                status, behind, seconds = "stopped", 40_000 + h, 900.0 + h % 60
            end = 1_000_000 + h
            lag_rows.append(
                {
                    "group": name,
                    "topic": topic,
                    "partition": i,
                    "committed_offset": end - behind,
                    "commit_time": at,
                    "end_offset": end,
                    "lag_records": behind,
                    "lag_seconds": seconds,
                    "lag_seconds_at_least": at_least,
                    "status": status,
                    "owner_member": f"{name}-m{i}",
                    "owner_client": f"client-{i}",
                    "owner_host": f"/10.0.{i % 250}.{h % 250}",
                    "owner_generation": generation,
                    "observed_at": now - timedelta(seconds=5),
                }
            )
            ends.append(
                {"topic": topic, "partition": i, "start_offset": 0, "end_offset": end,
                 "observed_at": now - timedelta(seconds=5)}
            )  # fmt: skip
        if name in stopped_names:
            stopped.add(name)
            sizes[name] = size
        top = name == LAG_TOP
        for k in range(POLLS):
            history.append(
                {
                    "group": name,
                    "topic": topic,
                    "observed_at": now - timedelta(minutes=5 * (POLLS - 1 - k)),
                    "partitions": size,
                    "lag_records": (h % 50) * size
                    + k * (1000 if name in stopped_names else 400 if top else 1),
                    "lag_seconds": float(h % 30)
                    + (60.0 * k if name in stopped_names else 0.0)
                    + (LAG_TOP_SECONDS - 300.0 * (POLLS - 1 - k) if top else 0.0),
                    "status": "stopped"
                    if name in stopped_names and k >= POLLS - 3
                    else "lagging"
                    if top
                    else "ok",
                }
            )

    stopped_names = {f"crit-{i:03d}" for i in range(2)} | {
        f"g{(i * 7919) % groups:05d}" for i in range(CRITICAL, groups, STOPPED_EVERY)
    }
    stopped_names.discard(LAG_TOP)
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
    if lag:
        write(root, "partition_lag", lag_rows)
        write(root, "lag_history", history)
        write(root, "end_offsets", ends)
    return {
        "groups": groups + 1 + MODERN,
        "critical": CRITICAL + 1,
        "stopped": len(stopped),
        "lag_top": LAG_TOP if lag else None,
        # The stopped group of the most partitions (the group page's screenshot).
        "stopped_group": max(sizes, key=lambda g: (sizes[g], g)) if sizes else None,
    }
