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

from groupwatch.detect.findings import Finding, Source
from groupwatch.detect.share.names import SHARE_STATE_TOPIC
from groupwatch.detect.share.state import ARCHIVED, SharePartitionState, ShareStateRecord

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
