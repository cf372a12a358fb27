"""Modern groups next to the KAFKA-7026 tables of ``scenario.py``, written with delta-rs.

The rows are what the job writes for KIP-848 consumer, streams and share groups: a
``group_snapshots`` row per group-epoch record (``generation`` = the group epoch) and a
``member_assignments`` row per member's current-assignment record; a row without a member epoch
is that record's tombstone.

``checkout-848`` (consumer, topic ``checkout``, 4 partitions): alpha holds everything at epoch
1; beta joins at group epoch 2 (alpha UNREVOKED, beta UNRELEASED, then both STABLE); gamma joins
at group epoch 3: beta is UNREVOKED with checkout-3 pending revocation, gamma UNRELEASED waiting
for it, and ``revocation_overdue`` is open (an ``unreleased_too_long`` of epoch 2 is not).

``ledger-848`` (consumer): z leaves at group epoch 5 and y joins holding ledger-0, which x still
holds: ``partition_owned_twice`` and ``handover_while_held`` (critical; the latter's evidence
names no group epoch, as the replay's findings do not).

``wordcount-streams`` (streams): healthy at group epoch 4; a later group epoch 5 has no target
assignment yet (assignment epoch 4).  ``share-audit`` (share): two members on the same
partitions, as share groups are meant to be.

:func:`legacy` copies a tree of tables without the columns the modern groups brought, as tables
written before them look.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from tests.dashboard import scenario
from tests.dashboard.scenario import tps

CHECKOUT = "checkout-848"
LEDGER = "ledger-848"
STREAMS = "wordcount-streams"
SHARE = "share-audit"
#: The columns each table gained for modern groups.
NEW_COLUMNS = {
    "group_snapshots": ("group_type", "assignment_epoch"),
    "member_assignments": (
        "group_type",
        "member_epoch",
        "member_state",
        "pending_revocation",
        "target",
    ),
    "partition_ownership": ("group_type",),
}


class _Log:
    """Rows of one group, at increasing offsets of its ``__consumer_offsets`` partition."""

    def __init__(self, group: str, group_type: str, partition: int, topics: list[str]) -> None:
        self.group, self.type, self.partition, self.topics = group, group_type, partition, topics
        self.offset = 1000
        self.snaps: list[dict[str, Any]] = []
        self.members: list[dict[str, Any]] = []
        self.epoch: int | None = None

    def _src(self, at: datetime) -> dict[str, Any]:
        self.offset += 1
        return {
            "source_topic": "__consumer_offsets",
            "source_partition": self.partition,
            "source_offset": self.offset,
            "source_timestamp": at,
            "snapshot_date": at.date(),
        }

    def epochs(self, at: datetime, group_epoch: int, assignment_epoch: int) -> None:
        self.epoch = group_epoch
        self.snaps.append(
            {
                "group": self.group,
                "group_type": self.type,
                "generation": group_epoch,
                "assignment_epoch": assignment_epoch,
                "protocol_type": "consumer",
                "protocol": "uniform" if self.type == "consumer" else None,
                "tombstone": False,
                **self._src(at),
            }
        )

    def current(
        self,
        at: datetime,
        member: str,
        epoch: int | None,
        state: str | None = "STABLE",
        assigned: list[dict[str, Any]] | None = None,
        pending: list[dict[str, Any]] | None = None,
        target: list[dict[str, Any]] | None = None,
    ) -> None:
        """A member's current-assignment record; ``epoch`` None: its tombstone."""
        self.members.append(
            {
                "group": self.group,
                "group_type": self.type,
                "generation": self.epoch,
                "member_id": member,
                "client_id": member.split("-")[0],
                "client_host": "/127.0.0.1",
                "topics": self.topics,
                "member_epoch": epoch,
                "member_state": None if epoch is None else state,
                "assignment": None if epoch is None else (assigned or []),
                "pending_revocation": None if epoch is None else (pending or []),
                "target": target,
                **self._src(at),
            }
        )

    def source(self, at: datetime) -> dict[str, Any]:
        return {
            "topic": "__consumer_offsets",
            "partition": self.partition,
            "offset": self.offset,
            "timestamp": int(at.timestamp() * 1000),
        }


def _finding(
    log: _Log, fid: str, kind: str, severity: str, generation: int, at: datetime, detail: str,
    evidence: dict[str, Any], **kw: Any,
) -> dict[str, Any]:  # fmt: skip
    return {
        "finding_id": fid,
        "kind": kind,
        "severity": severity,
        "group": log.group,
        "generation": generation,
        "detail": detail,
        "evidence": json.dumps(evidence),
        "source": log.source(at),
        "detected_at": at + timedelta(seconds=2),
        "members": kw.pop("members", []),
        "partitions": kw.pop("partitions", None),
        **kw,
    }


def build(root: Path, now: datetime | None = None) -> dict[str, Any]:
    """The classic scenario's tables with the modern groups' rows appended."""
    info = scenario.build(root, now)
    now = info["now"]

    def ago(minutes: float) -> datetime:
        return now - timedelta(minutes=minutes)

    c = "checkout"
    checkout = _Log(CHECKOUT, "consumer", 11, [c])
    checkout.epochs(ago(12), 1, 1)
    checkout.current(ago(12), "alpha-1", 1, assigned=tps(*((c, p) for p in range(4))),
                     target=tps(*((c, p) for p in range(4))))  # fmt: skip
    checkout.epochs(ago(6), 2, 2)
    checkout.current(ago(6), "alpha-1", 1, "UNREVOKED", tps((c, 0), (c, 1)),
                     tps((c, 2), (c, 3)), tps((c, 0), (c, 1)))  # fmt: skip
    checkout.current(ago(6), "beta-2", 2, "UNRELEASED", [], [], tps((c, 2), (c, 3)))
    checkout.current(ago(5.5), "alpha-1", 2, "STABLE", tps((c, 0), (c, 1)), [],
                     tps((c, 0), (c, 1)))  # fmt: skip
    checkout.current(ago(5.5), "beta-2", 2, "STABLE", tps((c, 2), (c, 3)), [],
                     tps((c, 2), (c, 3)))  # fmt: skip
    at_two = checkout.source(ago(5.8))
    checkout.epochs(ago(2), 3, 3)
    checkout.current(ago(2), "alpha-1", 3, "STABLE", tps((c, 0), (c, 1)), [],
                     tps((c, 0), (c, 1)))  # fmt: skip
    checkout.current(ago(2), "beta-2", 2, "UNREVOKED", tps((c, 2)), tps((c, 3)), tps((c, 2)))
    checkout.current(ago(2), "gamma-3", 3, "UNRELEASED", [], [], tps((c, 3)))

    ledger = _Log(LEDGER, "consumer", 12, ["ledger"])
    lg = "ledger"
    ledger.epochs(ago(9), 4, 4)
    ledger.current(ago(9), "x-1", 4, assigned=tps((lg, 0)), target=tps((lg, 0)))
    ledger.current(ago(9), "z-1", 4, assigned=tps((lg, 1)), target=tps((lg, 1)))
    ledger.epochs(ago(4), 5, 5)
    ledger.current(ago(4), "z-1", None)
    ledger.current(ago(4), "y-1", 5, assigned=tps((lg, 0), (lg, 1)), target=tps((lg, 1)))
    ledger_src = ledger.source(ago(4))

    streams = _Log(STREAMS, "streams", 13, ["words"])
    streams.epochs(ago(3), 4, 4)
    streams.current(
        ago(3), "s-1", 4, assigned=tps(("0", 0), ("0", 1)), target=tps(("0", 0), ("0", 1))
    )
    streams.current(ago(3), "s-2", 4, assigned=tps(("1", 0)), target=tps(("1", 0)))
    streams.epochs(ago(1), 5, 4)

    share = _Log(SHARE, "share", 14, ["audit"])
    share.epochs(ago(3), 3, 3)
    for member in ("sh-1", "sh-2"):
        share.current(ago(3), member, 3, assigned=tps(("audit", 0), ("audit", 1)))

    findings = [
        {
            **_finding(
                checkout, "f-unreleased-beta", "unreleased_too_long", "warning", 2, ago(5.8),
                "member beta-2 has waited UNRELEASED at epoch 2 for more than 20 s",
                {"group_type": "consumer", "group_epoch": 2, "assignment_epoch": 2},
                member="beta-2", members=["beta-2"], partitions=tps((c, 2), (c, 3)),
            ),
            "source": at_two,
        },
        _finding(
            checkout, "f-overdue-beta", "revocation_overdue", "warning", 2, ago(1),
            "member beta-2 has been UNREVOKED at epoch 2 for more than its rebalance timeout",
            {"group_type": "consumer", "group_epoch": 3, "assignment_epoch": 3},
            member="beta-2", members=["beta-2"], partitions=tps((c, 3)),
        ),
        _finding(
            ledger, "f-owned-twice", "partition_owned_twice", "critical", 5, ago(3.5),
            "ledger-0 is held by x-1 and y-1 at once",
            {"group_type": "consumer", "group_epoch": 5, "assignment_epoch": 5},
            topic=lg, partition=0, members=["x-1", "y-1"], partitions=tps((lg, 0)),
        ),
        {
            **_finding(
                ledger, "f-handover-y", "handover_while_held", "critical", 5, ago(4),
                "member y-1 received ledger-0 at epoch 5 while x-1's latest record (epoch 4) "
                "still holds it",
                {"topic_id": "Lq2y", "member_epoch": 5, "previous_holder": "x-1"},
                topic=lg, partition=0, member="y-1", members=["x-1", "y-1"],
                partitions=tps((lg, 0)),
            ),
            "source": ledger_src,
        },
    ]  # fmt: skip

    def owned(log: _Log, topic: str, p: int, member: str, start: tuple[int, float],
              end: tuple[int, float] | None = None) -> dict[str, Any]:  # fmt: skip
        return {
            "group": log.group,
            "group_type": log.type,
            "topic": topic,
            "partition": p,
            "member_id": member,
            "client_id": member.split("-")[0],
            "from_generation": start[0],
            "from_time": ago(start[1]),
            "to_generation": None if end is None else end[0],
            "to_time": None if end is None else ago(end[1]),
        }

    ownership = [
        owned(checkout, c, 0, "alpha-1", (1, 12)),
        owned(checkout, c, 1, "alpha-1", (1, 12)),
        owned(checkout, c, 2, "alpha-1", (1, 12), (2, 5.5)),
        owned(checkout, c, 2, "beta-2", (2, 5.5)),
        owned(checkout, c, 3, "alpha-1", (1, 12), (2, 5.5)),
        owned(checkout, c, 3, "beta-2", (2, 5.5)),
        owned(ledger, lg, 0, "x-1", (4, 9)),
        owned(ledger, lg, 0, "y-1", (5, 4)),
        owned(ledger, lg, 1, "z-1", (4, 9), (5, 4)),
        owned(ledger, lg, 1, "y-1", (5, 4)),
    ]
    logs = (checkout, ledger, streams, share)
    scenario.write(root, "group_snapshots", [r for g in logs for r in g.snaps], "append")
    scenario.write(root, "member_assignments", [r for g in logs for r in g.members], "append")
    scenario.write(root, "findings", findings, "append")
    scenario.write(root, "partition_ownership", ownership, "append")
    scenario.write(root, "share_partition_state", share_partitions(now), "append")
    scenario.write(
        root,
        "group_offsets",
        [
            {"group": CHECKOUT, "topic": c, "max_partition": 3, "commits": 9},
            {"group": SHARE, "topic": "audit", "max_partition": 2, "commits": 4},
        ],
        "append",
    )
    return info


def share_partitions(now: datetime) -> list[dict[str, Any]]:
    """The share group's partitions as the job keeps them (``share_partition_state``): audit-0
    with a poison record archived at offset 7 and three records in flight, audit-1 drained."""
    base = {
        "group": SHARE,
        "topic": "audit",
        "topic_id": "YXVkaXRhdWRpdGF1ZGl0YQ",
        "state_epoch": 0,
        "leader_epoch": 0,
        "observed_at": now - timedelta(minutes=2),
        "end_observed_at": now - timedelta(minutes=2),
    }
    return [
        {
            **base,
            "partition": 0,
            "start_offset": 7,
            "delivery_complete_count": 1,
            "end_offset": 20,
            "lag_records": 12,
            "in_flight_records": 3,
            "in_flight_batches": [{"first_offset": 8, "last_offset": 10, "delivery_count": 2}],
            "archived_records": 1,
            "archived_ranges": [{"first_offset": 7, "last_offset": 7}],
            "max_delivery_count": 5,
        },
        {
            **base,
            "partition": 1,
            "start_offset": 15,
            "delivery_complete_count": 0,
            "end_offset": 15,
            "lag_records": 0,
            "in_flight_records": 0,
            "in_flight_batches": [],
            "archived_records": 0,
            "archived_ranges": [],
            "max_delivery_count": 1,
        },
    ]


def legacy(source: Path, target: Path) -> None:
    """Every table under ``source`` copied to ``target`` without the modern groups' columns."""
    for table in sorted(p.name for p in source.iterdir() if (p / "_delta_log").is_dir()):
        data: pa.Table = DeltaTable(str(source / table)).to_pyarrow_table()
        data = data.drop_columns([c for c in NEW_COLUMNS.get(table, ()) if c in data.schema.names])
        write_deltalake(str(target / table), data, mode="overwrite")
