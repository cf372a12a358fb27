"""What is wrong with a share partition, judged from its state before and after one record of
``__share_group_state``.

``share_records_archived``: offsets the broker archived that the state before did not show
archived.  The broker archives a record when its delivery attempts run out
(``group.share.delivery.count.limit``, 5 by default) or when a consumer rejects it: either way
the record will never be delivered again -- a poison record, or data a consumer threw away.  A
healthy share group accepts what it is given and archives nothing, so the finding stays quiet
through members joining and leaving and partitions being added.  Each archived range is raised
once (the finding id names it); a snapshot that repeats what an update already archived raises
nothing new.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.findings import Finding, Source
from groupwatch.detect.share.names import SHARE_STATE_TOPIC
from groupwatch.detect.share.state import (
    ARCHIVED,
    Batch,
    SharePartitionKey,
    SharePartitionState,
    ShareStateRecord,
)

if TYPE_CHECKING:
    from groupwatch.detect.modern import ModernState

#: How many archived offsets a finding's text lists before it says "and N more".
_SHOWN = 10


def _ranges(state: SharePartitionState | None) -> list[tuple[int, int]]:
    return [] if state is None else list(state.archived_ranges)


def _minus(ranges: list[tuple[int, int]], away: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The offsets of ``ranges`` not in ``away`` (inclusive ranges; no expansion into offsets:
    a range can hold millions)."""
    out = list(ranges)
    for a_first, a_last in away:
        kept: list[tuple[int, int]] = []
        for first, last in out:
            if last < a_first or first > a_last:
                kept.append((first, last))
                continue
            if first < a_first:
                kept.append((first, a_first - 1))
            if last > a_last:
                kept.append((a_last + 1, last))
        out = kept
    return sorted(out)


def _text(ranges: list[tuple[int, int]]) -> str:
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in ranges[:_SHOWN]]
    more = len(ranges) - _SHOWN
    return ", ".join(parts) + (f" and {more} more range(s)" if more > 0 else "")


def archived(
    before: SharePartitionState | None,
    after: SharePartitionState | None,
    rec: ShareStateRecord,
    topic_names: Mapping[str, str],
) -> list[Finding]:
    """``share_records_archived`` for the offsets ``rec`` archived, if any."""
    if after is None:
        return []
    ranges = _minus(_ranges(after), _ranges(before))
    if not ranges:
        return []
    new = sum(last - first + 1 for first, last in ranges)
    key = after.key
    topic = topic_names.get(key.topic_id) or key.topic_id
    counts = sorted(
        {
            b.delivery_count
            for b in after.batches
            if b.state == ARCHIVED
            and any(first <= b.last_offset and b.first_offset <= last for first, last in ranges)
        }
    )
    return [
        Finding(
            kind="share_records_archived",
            group=key.group,
            generation=None,
            detail=(
                f"share group {key.group} archived {new} record(s) of {topic}-"
                f"{key.partition} at offset(s) {_text(ranges)}: they will not be delivered "
                f"again (delivery count {', '.join(map(str, counts))})"
            ),
            source=Source(
                SHARE_STATE_TOPIC, rec.source_partition, rec.source_offset, rec.timestamp
            ),
            topic=topic,
            partition=key.partition,
            evidence={
                "topic": topic,
                "topic_id": key.topic_id,
                "archived_offsets": [list(r) for r in ranges],
                "archived_records": new,
                "delivery_counts": counts,
                "start_offset": after.start_offset,
            },
            id_extra=f"{key.topic_id}/{key.partition}@{ranges[0][0]}-{ranges[-1][1]}",
        )
    ]


# --- share_partition_stalled ----------------------------------------------------------------------


def assigned_members(modern: ModernState | None, key: SharePartitionKey) -> tuple[str, ...]:
    """The members whose current assignment (``ShareGroupCurrentMemberAssignment``) holds the
    share partition: share groups hand one partition to many members at once."""
    if modern is None:
        return ()
    slot = (key.topic_id, key.partition)
    return tuple(
        sorted(
            member_id
            for member_id, m in modern.members.items()
            if m.current is not None and slot in m.current.assigned
        )
    )


def waiting(state: SharePartitionState, end_offset: int | None) -> tuple[bool, str]:
    """Whether records wait past the SPSO, and what says so: the brokers' end offset (share
    lag above zero) when it is known, else the state's own in-flight batches."""
    lag = state.lag(end_offset)
    if lag is not None:
        return lag > 0, "end_offset"
    return state.in_flight_records > 0, "in_flight"


def stalled(
    state: SharePartitionState,
    now_ms: int,
    members: tuple[str, ...],
    config: DetectorConfig,
    topic_names: Mapping[str, str],
    end_offset: int | None = None,
) -> Finding | None:
    """``share_partition_stalled`` if the partition's SPSO has stood still for
    ``config.share_stall_ms`` of stream time at ``now_ms`` while records wait past it and
    ``members`` are assigned it.  The finding id names the SPSO: the stall is resolved when the
    SPSO moves, and a stall at the next SPSO is a finding of its own."""
    since = state.start_since_ms
    if state.start_offset < 0 or since is None or not members:
        return None
    held = now_ms - since
    if held < config.share_stall_ms:
        return None
    wait, known_from = waiting(state, end_offset)
    if not wait:
        return None
    key = state.key
    topic = topic_names.get(key.topic_id) or key.topic_id
    lag = state.lag(end_offset)
    counts = [b.delivery_count for b in state.in_flight_batches]
    waits = (
        f"{lag} record(s) wait (end offset {end_offset})"
        if known_from == "end_offset"
        else f"{state.in_flight_records} record(s) are in flight"
    )
    return Finding(
        kind="share_partition_stalled",
        group=key.group,
        generation=None,
        detail=(
            f"share group {key.group}: {topic}-{key.partition} has not moved past offset "
            f"{state.start_offset} for {held // 1000} s while {waits} and {len(members)} "
            f"member(s) are assigned it"
        ),
        source=Source(SHARE_STATE_TOPIC, None, None, now_ms),
        topic=topic,
        partition=key.partition,
        members=members,
        evidence={
            "topic": topic,
            "topic_id": key.topic_id,
            "start_offset": state.start_offset,
            "since_ms": since,
            "stalled_ms": held,
            "threshold_ms": config.share_stall_ms,
            "members": list(members),
            "records_waiting_from": known_from,
            "end_offset": end_offset,
            "lag_records": lag,
            "in_flight_records": state.in_flight_records,
            "max_in_flight_delivery_count": max(counts, default=0),
        },
        id_extra=f"{key.topic_id}/{key.partition}@{state.start_offset}",
    )


# --- share_delivery_retries -----------------------------------------------------------------------


def retrying(state: SharePartitionState, config: DetectorConfig) -> tuple[Batch, ...]:
    """The in-flight batches one or no delivery short of the limit."""
    near = config.share_delivery_count_limit - 1
    return tuple(b for b in state.in_flight_batches if b.delivery_count >= near)


def retries(
    state: SharePartitionState | None,
    rec: ShareStateRecord,
    config: DetectorConfig,
    topic_names: Mapping[str, str],
) -> Finding | None:
    """``share_delivery_retries`` if ``config.share_retry_records`` or more in-flight records of
    the partition are at a delivery count of the limit minus one or more: many records handed
    out again and again, not one poison record (which alone never trips it).  The id names the
    first such offset, so a storm is raised once while it lasts."""
    if state is None:
        return None
    near = retrying(state, config)
    records = sum(b.records for b in near)
    if records < config.share_retry_records:
        return None
    key = state.key
    topic = topic_names.get(key.topic_id) or key.topic_id
    limit = config.share_delivery_count_limit
    ranges = [(b.first_offset, b.last_offset) for b in near]
    return Finding(
        kind="share_delivery_retries",
        group=key.group,
        generation=None,
        detail=(
            f"share group {key.group}: {records} record(s) of {topic}-{key.partition} were "
            f"delivered {limit - 1} time(s) or more without being acknowledged (offset(s) "
            f"{_text(ranges)}; the broker archives a record at delivery {limit})"
        ),
        source=Source(SHARE_STATE_TOPIC, rec.source_partition, rec.source_offset, rec.timestamp),
        topic=topic,
        partition=key.partition,
        evidence={
            "topic": topic,
            "topic_id": key.topic_id,
            "start_offset": state.start_offset,
            "retrying_offsets": [list(r) for r in ranges],
            "retrying_records": records,
            "delivery_counts": sorted({b.delivery_count for b in near}),
            "delivery_count_limit": limit,
            "limit_from": "detect.share_delivery_count_limit",
            "in_flight_records": state.in_flight_records,
        },
        id_extra=f"{key.topic_id}/{key.partition}@{ranges[0][0]}",
    )
