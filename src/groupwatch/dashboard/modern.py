"""KIP-848 consumer groups, streams groups and share groups as the dashboard reads them.

A classic group's state is one record per generation, so its member rows of one generation are
the whole picture.  A modern group's state is spread over one record per key: a
``group_snapshots`` row per group-epoch record, and a ``member_assignments`` row per member's
current-assignment record, written whenever that member's epoch, state or partitions change.
A modern group's members at a group epoch are therefore each member's newest row up to the next
group-epoch record; a row without a member epoch (the record's tombstone: the member left) ends
a member, and a group tombstone ends them all.

Rows written before the tables had a ``group_type`` column read it as null: classic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd  # type: ignore[import-untyped]

from groupwatch.dashboard.frames import evidence, is_null, opt_int, tp_pairs

CLASSIC = "classic"
SHARE = "share"
#: What the pages call each group type.
LABELS = {
    CLASSIC: "classic",
    "consumer": "consumer (KIP-848)",
    "streams": "streams",
    SHARE: "share",
}
STABLE = "STABLE"
#: A record's place in ``__consumer_offsets``; one group's records share one partition.
POSITION = ["source_timestamp", "source_partition", "source_offset"]
Position = tuple[pd.Timestamp, int, int]
MEMBER_COLUMNS = [
    "member_id",
    "client_id",
    "group_instance_id",
    "member_epoch",
    "member_state",
    "assignment",
    "pending_revocation",
    "target",
    "target_differs",
    "since",
]


def type_of(value: Any) -> str:
    """A ``group_type`` cell as a type name; null (older tables, classic rows) is classic."""
    return CLASSIC if is_null(value) or value == "" else str(value)


def label(group_type: str) -> str:
    return LABELS.get(group_type, group_type)


def is_modern(group_type: str) -> bool:
    return group_type != CLASSIC


def types(frame: pd.DataFrame) -> pd.Series:
    """Each row's group type."""
    if "group_type" not in frame:
        return pd.Series(CLASSIC, index=frame.index, dtype=object)
    return frame["group_type"].map(type_of)


def _positions(frame: pd.DataFrame) -> list[Position]:
    return [
        (ts, int(p), int(o))
        for ts, p, o in zip(
            frame["source_timestamp"],
            frame["source_partition"],
            frame["source_offset"],
            strict=True,
        )
    ]


def group_type(snapshots: pd.DataFrame, group: str) -> str:
    """The group's type as its newest typed row says (a classic group may become a consumer
    group: Kafka converts it on the first member that joins with the new protocol)."""
    s = snapshots[snapshots["group"] == group]
    if s.empty or "group_type" not in s:
        return CLASSIC
    typed = s[s["group_type"].notna()]
    if typed.empty:
        return CLASSIC
    return type_of(typed.sort_values(POSITION).iloc[-1]["group_type"])


def group_types(snapshots: pd.DataFrame) -> dict[str, str]:
    """Every group's type (see :func:`group_type`)."""
    if snapshots.empty:
        return {}
    s = snapshots.assign(_t=types(snapshots))
    typed = s[s["group_type"].notna()] if "group_type" in s else s.iloc[0:0]
    out = {str(g): CLASSIC for g in s["group"].dropna().unique()}
    for g, t in typed.sort_values(POSITION).groupby("group", sort=False)["_t"].last().items():
        out[str(g)] = str(t)
    return out


@dataclass(frozen=True)
class Epochs:
    """One group epoch of a modern group, and which rows belong to it."""

    group_type: str
    #: Every group epoch the group's rows show, ascending.
    epochs: tuple[int, ...]
    #: The chosen group epoch (default: the newest); ``None`` when the group has none.
    group_epoch: int | None
    #: The newest assignment epoch known at that group epoch.
    assignment_epoch: int | None
    #: Member rows from here (exclusive; the group's last tombstone before it) ...
    since: Position | None
    #: ... up to here (exclusive; the next group-epoch record or tombstone), else to now.
    until: Position | None
    #: The group was deleted after the chosen epoch (its newest row is a tombstone).
    deleted: bool


def epochs(snapshots: pd.DataFrame, group: str, epoch: int | None = None) -> Epochs:
    """The group's ``epoch`` (default: the newest; an epoch it never had means the newest)."""
    gtype = group_type(snapshots, group)
    s = snapshots[(snapshots["group"] == group) & (types(snapshots) == gtype)]
    s = s.sort_values(POSITION).reset_index(drop=True)
    gens = [opt_int(g) for g in s["generation"]]
    seen = tuple(sorted({g for g in gens if g is not None}))
    if epoch is None or epoch not in seen:
        epoch = seen[-1] if seen else None
    tombs = [bool(t) and not is_null(t) for t in s["tombstone"]]
    if epoch is None:
        return Epochs(gtype, seen, None, None, None, None, bool(tombs and tombs[-1]))
    # The last run of rows at this epoch (an epoch that went back and came again: its latest).
    last = max(i for i, g in enumerate(gens) if g == epoch)
    positions = _positions(s)
    until = positions[last + 1] if last + 1 < len(s) else None
    since = next((positions[i] for i in range(last, -1, -1) if tombs[i]), None)
    known = [opt_int(a) for a in s["assignment_epoch"].iloc[: last + 1]]
    assignment = next((a for a in reversed(known) if a is not None), None)
    deleted = bool(tombs) and tombs[-1]
    return Epochs(gtype, seen, epoch, assignment, since, until, deleted)


def _state(value: Any) -> str:
    return "" if is_null(value) else str(value)


def members_at(members: pd.DataFrame, group: str, at: Epochs) -> pd.DataFrame:
    """Each member's newest current assignment within ``at``: one row per member still there."""
    m = members[(members["group"] == group) & (types(members) == at.group_type)]
    if m.empty or at.group_epoch is None:
        return pd.DataFrame(columns=MEMBER_COLUMNS)
    m = m.sort_values(POSITION)
    keep = [
        (at.since is None or p > at.since) and (at.until is None or p < at.until)
        for p in _positions(m)
    ]
    newest = m[keep].groupby("member_id", sort=False).tail(1)
    newest = newest[newest["member_epoch"].notna()]
    rows = []
    for _, r in newest.iterrows():
        assigned, target = tp_pairs(r["assignment"]), tp_pairs(r["target"])
        has_target = not is_null(r["target"])
        rows.append(
            {
                "member_id": str(r["member_id"]),
                "client_id": r["client_id"],
                "group_instance_id": r["group_instance_id"],
                "member_epoch": opt_int(r["member_epoch"]),
                "member_state": _state(r["member_state"]),
                "assignment": assigned,
                "pending_revocation": tp_pairs(r["pending_revocation"]),
                "target": target if has_target else None,
                "target_differs": has_target and sorted(target) != sorted(assigned),
                "since": r["source_timestamp"],
            }
        )
    out = pd.DataFrame(rows, columns=MEMBER_COLUMNS)
    return out.sort_values("member_id").reset_index(drop=True)


def not_stable(state: str) -> bool:
    """A state worth a second look: anything but STABLE (unknown when the column is null)."""
    return state != STABLE and state != ""


def _finding_position(f: pd.Series) -> Position | None:
    src = f["source"] if isinstance(f["source"], dict) else {}
    ts, part, off = src.get("timestamp"), src.get("partition"), src.get("offset")
    if ts is None or part is None or off is None:
        return None
    return (pd.Timestamp(int(ts), unit="ms", tz="UTC"), int(part), int(off))


def finding_epochs(findings: pd.DataFrame, snapshots: pd.DataFrame, group: str) -> pd.Series:
    """The group epoch each of ``group``'s findings belongs to, aligned with ``findings``.

    A modern finding's ``generation`` is often a member epoch (the one it happened at); the
    checks judged at a quiescent point state the group epoch in their evidence.  Otherwise it
    is the epoch of the group's newest group-epoch record at or before the finding's record.
    """
    gtype = group_type(snapshots, group)
    s = snapshots[(snapshots["group"] == group) & (types(snapshots) == gtype)]
    s = s.sort_values(POSITION)
    marks = list(zip(_positions(s), [opt_int(g) for g in s["generation"]], strict=True))
    out: list[int | None] = []
    for _, f in findings.iterrows():
        stated = evidence(f["evidence"]).get("group_epoch")
        if isinstance(stated, int) and not isinstance(stated, bool):
            out.append(stated)
            continue
        at = _finding_position(f)
        before = [g for p, g in marks if at is None or p <= at]
        out.append(before[-1] if before else None)
    return pd.Series(out, index=findings.index, dtype=object)


def timeline(snapshots: pd.DataFrame, members: pd.DataFrame, group: str) -> pd.DataFrame:
    """The group's epoch records in order, with the members at the end of each (who joined
    and who left since the one before)."""
    cols = [
        "time",
        "generation",
        "assignment_epoch",
        "event",
        "member_count",
        "protocol",
        "leader",
        "leader_changed",
        "joined",
        "left",
    ]
    gtype = group_type(snapshots, group)
    s = snapshots[(snapshots["group"] == group) & (types(snapshots) == gtype)]
    s = s.sort_values(POSITION).reset_index(drop=True)
    m = members[(members["group"] == group) & (types(members) == gtype)].sort_values(POSITION)
    member_rows = list(zip(_positions(m), m["member_id"], m["member_epoch"], strict=True))
    positions = _positions(s)
    live: dict[str, bool] = {}
    cursor = 0
    prev: set[str] = set()
    prev_gen: int | None = None
    rows = []
    for i, (_, snap) in enumerate(s.iterrows()):
        tomb = bool(snap["tombstone"]) and not is_null(snap["tombstone"])
        if tomb:
            live = {}
        until = positions[i + 1] if i + 1 < len(s) else None
        while cursor < len(member_rows) and (until is None or member_rows[cursor][0] < until):
            p, mid, epoch = member_rows[cursor]
            cursor += 1
            if p > positions[i] or not tomb:
                live[str(mid)] = not is_null(epoch)
        cur = {k for k, v in live.items() if v}
        gen = opt_int(snap["generation"])
        event = "deleted" if tomb else "group epoch" if gen != prev_gen else "assignment epoch"
        rows.append(
            {
                "time": snap["source_timestamp"],
                "generation": gen,
                "assignment_epoch": opt_int(snap["assignment_epoch"]),
                "event": event,
                "member_count": len(cur),
                "protocol": snap["protocol"],
                "leader": None,
                "leader_changed": False,
                "joined": ", ".join(sorted(cur - prev)),
                "left": ", ".join(sorted(prev - cur)),
            }
        )
        prev, prev_gen = cur, gen
    return pd.DataFrame(rows, columns=cols)
