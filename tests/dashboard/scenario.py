"""Small Delta tables modelled on KAFKA-7026, written with delta-rs (no Spark).

``orders-etl`` (sticky): member c1 stalls after generation 1 and rejoins in generation 3 with
its stale claim on orders-0 and orders-1; the leader honours it, so orders-0 is assigned to both
c1 and c2 (assignment_overlap, critical). ``payments`` is healthy; ``billing`` had a warning in
generation 4 that generation 5 cleared.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
from deltalake import write_deltalake

from groupwatch.delta.read import schema

GROUP = "orders-etl"
OVERLAP = ("orders", 0)


def tps(*pairs: tuple[str, int]) -> list[dict[str, Any]]:
    by: dict[str, list[int]] = {}
    for t, p in pairs:
        by.setdefault(t, []).append(p)
    return [{"topic": t, "partitions": ps} for t, ps in by.items()]


def write(
    root: Path,
    table: str,
    rows: list[dict[str, Any]],
    mode: Literal["overwrite", "append"] = "overwrite",
) -> None:
    """``rows`` as the table (``mode="append"``: added to it), in the declared schema."""
    sch = schema(table)
    cols = {f.name: [r.get(f.name) for r in rows] for f in sch}
    write_deltalake(str(root / table), pa.table(cols, schema=sch), mode=mode)


def build(root: Path, now: datetime | None = None) -> dict[str, Any]:
    now = now or datetime.now(UTC).replace(microsecond=0)
    t = {g: now - timedelta(minutes=m) for g, m in ((1, 20), (2, 15), (3, 10))}
    snaps: list[dict[str, Any]] = []
    members: list[dict[str, Any]] = []
    offset = iter(range(100, 1000))

    def snap(
        group: str,
        gen: int | None,
        at: datetime,
        proto: str,
        leader: str,
        ms: list[dict[str, Any]],
        tomb: bool = False,
    ) -> None:
        off = next(offset)
        src = {
            "source_topic": "__consumer_offsets",
            "source_partition": 7,
            "source_offset": off,
            "source_timestamp": at,
        }
        snaps.append(
            {
                "group": group,
                "generation": gen,
                "protocol_type": "consumer",
                "protocol": proto,
                "leader": leader,
                "current_state_timestamp": at,
                "member_count": len(ms),
                "record_version": 3,
                "tombstone": tomb,
                "snapshot_date": at.date(),
                **src,
            }
        )
        for m in ms:
            members.append(
                {
                    "group": group,
                    "generation": gen,
                    "client_id": m["member_id"][:2],
                    "client_host": "/127.0.0.1",
                    "rebalance_timeout": 60000,
                    "session_timeout": 10000,
                    "subscription_version": 1,
                    "topics": ["orders"] if group == GROUP else [group],
                    "user_data_kind": "sticky",
                    "snapshot_date": at.date(),
                    **src,
                    **m,
                }
            )

    def mem(
        mid: str,
        assigned: list[dict[str, Any]],
        claim: list[dict[str, Any]] | None = None,
        cgen: int = -1,
        version: int = 1,
    ) -> dict[str, Any]:
        return {
            "member_id": mid,
            "assignment": assigned,
            "claim": claim or [],
            "claim_generation": cgen,
            "subscription_version": version,
        }

    o = "orders"
    snap(
        GROUP,
        1,
        t[1],
        "sticky",
        "c1-aaa",
        [mem("c1-aaa", tps((o, 0), (o, 1))), mem("c2-bbb", tps((o, 2)))],
    )
    snap(
        GROUP,
        2,
        t[2],
        "sticky",
        "c2-bbb",
        [mem("c2-bbb", tps((o, 0), (o, 2)), tps((o, 2)), 1), mem("c3-ccc", tps((o, 1)))],
    )
    snap(
        GROUP,
        3,
        t[3],
        "sticky",
        "c2-bbb",
        [
            mem("c1-aaa", tps((o, 0)), tps((o, 0), (o, 1)), 1),
            mem("c2-bbb", tps((o, 0), (o, 2)), tps((o, 0), (o, 2)), 2),
            mem("c3-ccc", tps((o, 1)), tps((o, 1)), 2),
        ],
    )
    for gen, at in ((1, t[1]), (2, t[3])):
        snap(
            "payments",
            gen,
            at,
            "cooperative-sticky",
            "p1-xxx",
            [
                mem(
                    "p1-xxx",
                    tps(("payments", 0)),
                    tps(("payments", 0)) if gen > 1 else None,
                    gen - 1,
                    version=3,
                ),
                mem(
                    "p2-yyy",
                    tps(("payments", 1)),
                    tps(("payments", 1)) if gen > 1 else None,
                    gen - 1,
                    version=1 if gen == 1 else 3,
                ),
            ],
        )
    for gen, at in ((4, t[1]), (5, t[2])):
        snap("billing", gen, at, "range", "b1-zzz", [mem("b1-zzz", tps(("billing", 0)))])

    def finding(
        fid: str,
        kind: str,
        sev: str,
        group: str,
        gen: int,
        at: datetime,
        detail: str,
        ev: dict[str, Any],
        **kw: Any,
    ) -> dict[str, Any]:
        return {
            "finding_id": fid,
            "kind": kind,
            "severity": sev,
            "group": group,
            "generation": gen,
            "detail": detail,
            "evidence": json.dumps(ev),
            "source": {
                "topic": "__consumer_offsets",
                "partition": 7,
                "offset": 0,
                "timestamp": int(at.timestamp() * 1000),
            },
            "detected_at": at + timedelta(seconds=2),
            "members": kw.pop("members", []),
            "partitions": kw.pop("partitions", None),
            **kw,
        }

    findings = [
        finding(
            "f-overlap-orders-0",
            "assignment_overlap",
            "critical",
            GROUP,
            3,
            t[3],
            "orders-0 is assigned to 2 members in generation 3: c1-aaa, c2-bbb",
            {"assigned_to": ["c1-aaa", "c2-bbb"]},
            topic=o,
            partition=0,
            members=["c1-aaa", "c2-bbb"],
            partitions=tps((o, 0)),
        ),
        finding(
            "f-stale-c1",
            "stale_owned_partitions",
            "warning",
            GROUP,
            3,
            t[3],
            "c1-aaa claims 2 partition(s) with generation 1; its claim on 2 of them is "
            "stale: orders-0 (and 1 more), cleared: generation 1 is older than c2-bbb's "
            "generation 2, which holds it",
            {
                "claim_generation": 1,
                "highest_claim_generation": 2,
                "contested": tps((o, 0), (o, 1)),
                "stale": tps((o, 0), (o, 1)),
                "snapshot_generation": 3,
            },
            member="c1-aaa",
            members=["c1-aaa", "c2-bbb", "c3-ccc"],
            partitions=tps((o, 0), (o, 1)),
        ),
        finding(
            "f-honored-orders-0",
            "stale_claim_honored",
            "warning",
            GROUP,
            3,
            t[3],
            "orders-0 went to c1-aaa on a claim from generation 1, although c2-bbb claimed "
            "it at generation 2",
            {"claims": {"c1-aaa": 1, "c2-bbb": 2}},
            topic=o,
            partition=0,
            member="c1-aaa",
            members=["c1-aaa", "c2-bbb"],
            partitions=tps((o, 0)),
        ),
        finding(
            "f-diverge-3",
            "sticky_divergence",
            "info",
            GROUP,
            3,
            t[3],
            "1 partition(s) of 1 member(s) differ from what Kafka's current sticky "
            "assignor computes",
            {
                "members": {"c1-aaa": {"actual_only": tps((o, 0)), "expected_only": []}},
                "expected_withheld": [],
                "assignor_path": "general",
            },
            members=["c1-aaa"],
            partitions=tps((o, 0)),
        ),
        finding(
            "f-billing-4",
            "imbalanced_assignment",
            "warning",
            "billing",
            4,
            t[1],
            "the assignment of generation 4 is not balanced",
            {"violations": ["x"]},
            members=["b1-zzz"],
        ),
    ]
    ownership = [
        {
            "group": GROUP,
            "topic": o,
            "partition": 0,
            "member_id": "c1-aaa",
            "client_id": "c1",
            "from_generation": 1,
            "from_time": t[1],
            "to_generation": 2,
            "to_time": t[2],
        },
        {
            "group": GROUP,
            "topic": o,
            "partition": 0,
            "member_id": "c2-bbb",
            "client_id": "c2",
            "from_generation": 2,
            "from_time": t[2],
        },
        {
            "group": GROUP,
            "topic": o,
            "partition": 0,
            "member_id": "c1-aaa",
            "client_id": "c1",
            "from_generation": 3,
            "from_time": t[3],
        },
        {
            "group": GROUP,
            "topic": o,
            "partition": 1,
            "member_id": "c1-aaa",
            "client_id": "c1",
            "from_generation": 1,
            "from_time": t[1],
            "to_generation": 2,
            "to_time": t[2],
        },
        {
            "group": GROUP,
            "topic": o,
            "partition": 1,
            "member_id": "c3-ccc",
            "client_id": "c3",
            "from_generation": 2,
            "from_time": t[2],
        },
        {
            "group": GROUP,
            "topic": o,
            "partition": 2,
            "member_id": "c2-bbb",
            "client_id": "c2",
            "from_generation": 1,
            "from_time": t[1],
        },
    ]
    quarantine = [
        {
            "stage": "decode",
            "error_kind": kind,
            "field_path": f"members[{i}].subscription",
            "byte_offset": 12,
            "message": "truncated",
            "group": "payments",
            "member_id": None,
            "key": b"\x00\x02",
            "value": b"\x00\x03\xff",
            "source_topic": "__consumer_offsets",
            "source_partition": 7,
            "source_offset": 900 + i,
            "source_timestamp": t[2],
            "quarantined_at": t[2],
        }
        for i, kind in enumerate(["truncated", "truncated", "unknown_version"])
    ]
    validation = [
        {
            "batch_id": b,
            "table_name": "member_assignments",
            "expectation": e,
            "success": ok,
            "unexpected_count": 0 if ok else 1,
            "details": "{}",
            "validated_at": t[2] + timedelta(seconds=b),
        }
        for b, e, ok in (
            (1, "expect_column_values_to_not_be_null(member_id)", True),
            (1, "expect_column_values_to_be_between(claim_generation)", False),
            (2, "expect_column_values_to_be_between(claim_generation)", True),
        )
    ]
    offsets = [
        {"group": GROUP, "topic": o, "max_partition": 2, "commits": 42, "last_commit_time": t[3]}
    ]
    for table, rows in (
        ("group_snapshots", snaps),
        ("member_assignments", members),
        ("findings", findings),
        ("partition_ownership", ownership),
        ("quarantine", quarantine),
        ("validation_results", validation),
        ("group_offsets", offsets),
    ):
        write(root, table, rows)
    return {"now": now, "times": t}
