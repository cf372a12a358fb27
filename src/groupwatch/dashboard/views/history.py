"""A group's history (its generations or group epochs in order) and the partition history
page's ownership intervals."""

from __future__ import annotations

import pandas as pd  # type: ignore[import-untyped]

from groupwatch.dashboard import modern
from groupwatch.dashboard.filters import Filters


def timeline(snapshots: pd.DataFrame, members: pd.DataFrame, group: str) -> pd.DataFrame:
    """The group's generations in order: who joined, who left, leader changes.

    A modern group's are its group-epoch records (:func:`modern.timeline`).
    """
    if modern.is_modern(modern.group_type(snapshots, group)):
        return modern.timeline(snapshots, members, group)
    s = snapshots[(snapshots["group"] == group) & (modern.types(snapshots) == modern.CLASSIC)]
    s = s.sort_values(["source_timestamp", "source_partition", "source_offset"])
    m = members[(members["group"] == group) & (modern.types(members) == modern.CLASSIC)]
    by_offset: dict[tuple[int, int], set[str]] = {}
    for (part, off), rows in m.groupby(["source_partition", "source_offset"]):
        by_offset[(int(part), int(off))] = set(rows["member_id"])
    rows_out = []
    prev: set[str] = set()
    prev_leader = None
    for _, snap in s.iterrows():
        cur = by_offset.get((int(snap["source_partition"]), int(snap["source_offset"])), set())
        tomb = bool(snap["tombstone"]) if pd.notna(snap["tombstone"]) else False
        rows_out.append(
            {
                "time": snap["source_timestamp"],
                "generation": None if pd.isna(snap["generation"]) else int(snap["generation"]),
                "event": "deleted" if tomb else "rebalance",
                "member_count": 0 if pd.isna(snap["member_count"]) else int(snap["member_count"]),
                "protocol": snap["protocol"],
                "leader": snap["leader"],
                "leader_changed": bool(prev_leader is not None and snap["leader"] != prev_leader),
                "joined": ", ".join(sorted(cur - prev)),
                "left": ", ".join(sorted(prev - cur)),
            }
        )
        prev, prev_leader = cur, snap["leader"]
    return pd.DataFrame(
        rows_out,
        columns=[
            "time",
            "generation",
            "event",
            "member_count",
            "protocol",
            "leader",
            "leader_changed",
            "joined",
            "left",
        ],
    )


def partition_history(
    ownership: pd.DataFrame, filters: Filters, presorted: bool = False
) -> pd.DataFrame:
    """The ownership intervals matching ``filters``, by group, topic, partition, start and
    member (``presorted``: ``ownership`` is already in that order)."""
    o = ownership
    if filters.group:
        o = o[o["group"] == filters.group]
    if filters.topic:
        o = o[o["topic"] == filters.topic]
    if filters.partition is not None:
        o = o[o["partition"] == filters.partition]
    start = filters.since_time()
    if start is not None:
        o = o[o["to_time"].isna() | (o["to_time"] >= pd.Timestamp(start))]
    if presorted:
        return o
    return o.sort_values(["group", "topic", "partition", "from_time", "member_id"])
