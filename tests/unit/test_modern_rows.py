"""The job's rows of KIP-848, streams and share groups (``groupwatch.rows.modern``) through the
per-group step, over hand-built records (``tests.modern_log``)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from groupwatch.config import load
from groupwatch.group_state import SavedGroupState
from groupwatch.processing import GroupResult, process_group
from groupwatch.tables import PARTITION_OWNERSHIP
from tests.modern_log import BASE, ORDERS, PARTITION, SHARE, STREAMS, G, Log

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def healthy(log: Log | None = None) -> Log:
    """A joins alone; B joins, A revokes 2-3 (UNREVOKED at epoch 1) and B receives them at 2."""
    log = log or Log()
    log.member("A", 1).epoch(1, 1).target("A", [0, 1, 2, 3], 1).assignment_epoch(1, 1)
    log.current("A", 1, 0, [0, 1, 2, 3], 1)
    log.member("B", 5).epoch(2, 5).target("A", [0, 1], 5).target("B", [2, 3], 5)
    log.assignment_epoch(2, 5).current("B", 2, 2, [], 5)  # B waits UNRELEASED
    log.current("A", 1, 1, [0, 1], 6, pending=[2, 3])  # A told to revoke
    log.current("A", 2, 0, [0, 1], 7)  # A revoked
    log.current("B", 2, 0, [2, 3], 8)  # B receives them
    return log


def run(
    log: Log,
    part: slice = slice(None),
    state: Any = None,
    *,
    names: dict[str, str] | None = None,
    quiescent: bool = False,
) -> GroupResult:
    detector = load(None, env={}).detect.detector()
    if names:
        detector = dataclasses.replace(detector, topic_names=names)
    group = {ln["offset"]: ln["group"] for ln in log.lines}
    recs = log.records()[part]
    return process_group(
        G,
        state,
        [r for r in recs if group[r.offset] == G],
        detector=detector,
        detected_at=NOW,
        clocks={PARTITION: max(r.timestamp_ms for r in recs)} if recs else None,
        quiescent=quiescent,
    )


def ownership(result: GroupResult) -> list[tuple[str, str, int, int, int | None]]:
    return sorted(
        (r.member_id, r.topic, r.partition, r.from_generation, r.to_generation)
        for r in result.rows["partition_ownership"]
    )


def test_member_rows_follow_each_current_assignment_record() -> None:
    result = run(healthy(Log().commit("orders", ORDERS, 0)))
    rows = result.rows["member_assignments"]
    assert [(r.member_id, r.generation, r.member_epoch, r.member_state) for r in rows] == [
        ("A", 1, 1, "STABLE"),
        ("B", 2, 2, "UNRELEASED"),
        ("A", 2, 1, "UNREVOKED"),
        ("A", 2, 2, "STABLE"),
        ("B", 2, 2, "STABLE"),
    ]
    unrevoked = rows[2]
    assert unrevoked.assignment == [{"topic": "orders", "partitions": [0, 1]}]
    assert unrevoked.pending_revocation == [{"topic": "orders", "partitions": [2, 3]}]
    assert unrevoked.target == [{"topic": "orders", "partitions": [0, 1]}]
    assert unrevoked.group_type == "consumer"
    assert (unrevoked.topics, unrevoked.client_id, unrevoked.rebalance_timeout) == (
        ["orders"],
        "client-A",
        60_000,
    )
    assert (unrevoked.source_partition, unrevoked.source_offset) == (PARTITION, 12)
    assert rows[1].assignment == [] and rows[1].pending_revocation == []


def test_snapshot_rows_one_per_group_epoch_record() -> None:
    rows = run(healthy()).rows["group_snapshots"]
    assert [(r.generation, r.assignment_epoch, r.member_count, r.protocol) for r in rows] == [
        # at the epoch record of a write, its target and current records are still to come
        (1, None, 0, "uniform"),
        (2, 1, 1, "uniform"),
    ]
    assert {(r.group_type, r.protocol_type, r.tombstone) for r in rows} == {
        ("consumer", "consumer", False)
    }
    assert rows[0].record_version == 0 and rows[0].source_offset == 1


def test_topics_are_named_by_the_records_or_the_brokers_else_by_id() -> None:
    unnamed = run(healthy()).rows["member_assignments"]
    assert unnamed[0].assignment == [{"topic": ORDERS, "partitions": [0, 1, 2, 3]}]
    admin = run(healthy(), names={ORDERS: "orders"}).rows["member_assignments"]
    assert admin[0].assignment == [{"topic": "orders", "partitions": [0, 1, 2, 3]}]


def test_ownership_intervals_count_member_epochs_and_pending_as_held() -> None:
    result = run(healthy(Log().commit("orders", ORDERS, 0)))
    assert ownership(result) == [
        ("A", "orders", 0, 1, None),
        ("A", "orders", 1, 1, None),
        # held while pending revocation at epoch 1, no longer at epoch 2
        ("A", "orders", 2, 1, 2),
        ("A", "orders", 3, 1, 2),
        ("B", "orders", 2, 2, None),
        ("B", "orders", 3, 2, None),
    ]
    closed = next(r for r in result.rows["partition_ownership"] if r.to_generation == 2)
    assert closed.group_type == "consumer" and closed.client_id == "client-A"
    assert closed.to_time == dt.datetime.fromtimestamp((BASE + 7000) / 1000, tz=dt.UTC)


def test_batching_does_not_change_the_rows() -> None:
    log = healthy(Log().commit("orders", ORDERS, 0)).gone("B", 9).epoch(3, 9)
    whole = run(log)
    state: Any = None
    pieces: dict[str, list[Any]] = {}
    for part in (slice(0, 4), slice(4, 11), slice(11, None)):
        result = run(log, part, state)
        state = SavedGroupState.decode(result.state.encode())
        for table, rows in result.rows.items():
            pieces.setdefault(table, []).extend(rows)
    for table in ("group_snapshots", "member_assignments"):
        assert pieces[table] == whole.rows[table], table
    # ownership rows are upserts by key: the last form of each interval is what stays
    last = {
        tuple(getattr(r, k) for k in PARTITION_OWNERSHIP.key): r
        for r in pieces["partition_ownership"]
    }
    assert sorted(last.values(), key=str) == sorted(whole.rows["partition_ownership"], key=str)


def test_a_member_that_leaves_and_a_deleted_group_close_their_intervals() -> None:
    log = healthy(Log().commit("orders", ORDERS, 0)).gone("B", 9).epoch(3, 9)
    result = run(log)
    # B's tombstone is B's last row: no epoch, no state, nothing held
    after = [r for r in result.rows["member_assignments"] if r.source_offset >= 15]
    assert [(r.member_id, r.member_epoch, r.member_state, r.assignment) for r in after] == [
        ("B", None, None, [])
    ]
    left = [o for o in ownership(result) if o[0] == "B"]
    # B was last seen at epoch 2: from epoch 3 on it holds nothing
    assert left == [("B", "orders", 2, 2, 3), ("B", "orders", 3, 2, 3)]
    assert not result.deleted
    deleted = run(log.gone("A", 10).epoch(None, 10))
    assert deleted.deleted
    assert deleted.rows["group_snapshots"][-1].tombstone
    assert deleted.rows["group_snapshots"][-1].generation is None
    assert all(o[4] is not None for o in ownership(deleted))
    assert not deleted.state.modern_ownership
    assert "modern_ownership" not in deleted.state.encode()


def test_a_group_deletion_closes_what_is_still_open() -> None:
    log = healthy(Log().commit("orders", ORDERS, 0)).epoch(None, 9)
    result = run(log)
    assert result.deleted
    assert [o for o in ownership(result) if o[4] is None] == []
    assert ("A", "orders", 0, 1, 3) in ownership(result)  # A was last seen at epoch 2


def test_a_static_member_away_keeps_its_partitions() -> None:
    log = healthy(Log().commit("orders", ORDERS, 0))
    log.current("B", -2, 0, [2, 3], 9)  # closed, may come back as the same instance
    result = run(log)
    assert [o for o in ownership(result) if o[0] == "B"] == [
        ("B", "orders", 2, 2, None),
        ("B", "orders", 3, 2, None),
    ]
    away = result.rows["member_assignments"][-1]
    assert (away.member_epoch, away.member_state) == (-2, "STABLE")


def test_streams_tasks_by_subtopology_with_the_streams_state_bytes() -> None:
    log = Log(STREAMS, "subtopology_id")
    log.member("A", 1, process_id="p1").epoch(1, 1).target("A", [0, 1], 1)
    log.assignment_epoch(1, 1).current("A", 1, 1, [0, 1], 1, pending=[])  # 1 = STABLE
    log.current("A", 2, 2, [0], 2, pending=[1])  # 2 = UNREVOKED_TASKS
    log.current("A", 3, 1, [0], 3)
    result = run(log)
    rows = result.rows["member_assignments"]
    assert [(r.member_state, r.group_type) for r in rows] == [
        ("STABLE", "streams"),
        ("UNREVOKED", "streams"),
        ("STABLE", "streams"),
    ]
    assert rows[1].pending_revocation == [{"topic": ORDERS, "partitions": [1]}]
    assert ownership(result) == [("A", ORDERS, 0, 1, None), ("A", ORDERS, 1, 1, 3)]
    assert {r.group_type for r in result.rows["partition_ownership"]} == {"streams"}
    assert result.rows["group_snapshots"][0].group_type == "streams"


def test_share_groups_have_member_rows_and_no_ownership() -> None:
    log = Log(SHARE)
    log.member("A", 1).epoch(1, 1).target("A", [0, 1], 1).assignment_epoch(1, 1)
    log.current("A", 1, 0, [0, 1], 1).member("B", 2).current("B", 1, 0, [0, 1], 2)
    result = run(log)
    assert [r.member_id for r in result.rows["member_assignments"]] == ["A", "B"]
    assert "partition_ownership" not in result.rows
    assert result.rows["group_snapshots"][0].group_type == "share"


def test_violations_wait_for_a_quiescent_batch_past_their_confirmation_time() -> None:
    log = healthy(Log().commit("orders", ORDERS, 0))
    log.current("A", 2, 0, [0, 1, 2], 20)  # A takes 2 back while B holds it
    upto = len(log.lines)
    log.clock(40)

    def owned_twice(result: GroupResult) -> list[Any]:
        return [f for f in result.rows.get("findings", []) if f.kind == "partition_owned_twice"]

    # A batch that stopped short of the end is no point to judge at, whatever its clock.
    assert owned_twice(run(log)) == []
    # Caught up, but the violation has held 0 s: not yet; it is due 10 s later.
    early = run(log, slice(0, upto), quiescent=True)
    assert owned_twice(early) == []
    assert early.pending_until == (BASE + 30_000, PARTITION)
    # Caught up 20 s later: raised.
    assert [f.partition for f in owned_twice(run(log, quiescent=True))] == [2]
    # Not judged yet (no quiescent batch): the state says when to look again.
    assert run(log, slice(0, upto)).pending_until == (BASE + 20_000, PARTITION)
