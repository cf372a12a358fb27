"""``share_new_partition_records_skipped``: KAFKA-20742, a new partition of a topic a share group
already consumes, started past its first offset.

When a share group's member heartbeats with partitions nobody has initialised, the group
coordinator asks the share coordinator to initialise their state.  Before the fix (Kafka 4.3.1
and older; 4.4.0 has it) it sent the start offset -1 for every partition: "not decided yet",
which the partition's leader resolves by ``share.auto.offset.reset`` when it first loads the
partition -- ``latest`` by default, the end offset then.  Right for a topic the group subscribes
to for the first time; wrong for a partition added to a topic the group already consumes: every
record produced to the new partition before its leader loaded it is skipped, never delivered.
The fixed coordinator starts such a partition at 0.

What ``__share_group_state`` shows, and what is judged here:

* the partition's first record is the coordinator's initialisation: a snapshot with start
  offset -1 (a fixed coordinator writes 0 for a partition of a known topic, which is never
  judged), at a state epoch above that of a partition of the same topic whose state was
  already resolved (start >= 0) before it: the topic was known, the partition is new (the
  partitions of one subscription are initialised together, at one state epoch);
* the partition's first resolved state -- the leader writes the start it resolved, with the
  records it delivered from there on -- starts at S > 0.  A new partition's log starts at offset
  0, so records 0..S-1 existed when the leader resolved the start (S was at most the end offset
  then) and the group never had them: that is the loss, provable from the records alone.

No finding where the first resolved start is 0 (nothing was produced before the leader loaded
the partition, or ``share.auto.offset.reset`` is ``earliest``), where the topic is new to the
group (``latest`` starting at the end offset is what a new subscription asks for), or where the
partition's first state is not the -1 sentinel (a fixed coordinator's 0; a start an operator
set).  A log start offset above 0 when the partition was loaded (records deleted within
moments of the partition's creation) would make the skipped range smaller; it is not looked up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from groupwatch.detect.findings import Finding, Source
from groupwatch.detect.share.names import SHARE_STATE_TOPIC
from groupwatch.detect.share.state import SharePartitionState, ShareStateRecord

__all__ = ["AddedPartitions"]

#: The start offset a coordinator before the fix writes: "resolve by share.auto.offset.reset".
UNINITIALIZED = -1


@dataclass(frozen=True)
class _Pending:
    """A new partition of a known topic, initialised with the -1 sentinel, not yet resolved."""

    state_epoch: int
    known: tuple[tuple[int, int], ...]  # (partition, state epoch) of the topic's resolved ones
    source: Source


@dataclass
class AddedPartitions:
    """What the judgement needs of each share group's topics, record by record."""

    #: (group, topic id) -> partition -> state epoch, of partitions with a resolved start.
    resolved: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)
    #: (group, topic id, partition) -> the pending new partition.
    pending: dict[tuple[str, str, int], _Pending] = field(default_factory=dict)

    def apply(
        self,
        before: SharePartitionState | None,
        after: SharePartitionState | None,
        rec: ShareStateRecord,
        topic_names: Mapping[str, str],
    ) -> list[Finding]:
        """The finding ``rec`` completes, if any (``before``/``after``: the partition's state
        around it)."""
        key = rec.key
        topic_key = (key.group, key.topic_id)
        where = (key.group, key.topic_id, key.partition)
        if after is None:  # the partition's state deleted: it is neither known nor pending
            self.resolved.get(topic_key, {}).pop(key.partition, None)
            self.pending.pop(where, None)
            return []
        known = {p: e for p, e in self.resolved.get(topic_key, {}).items() if p != key.partition}
        if (
            before is None
            and rec.snapshot
            and rec.start_offset == UNINITIALIZED
            and any(e < rec.state_epoch for e in known.values())
        ):
            self.pending[where] = _Pending(
                rec.state_epoch,
                tuple(sorted((p, e) for p, e in known.items() if e < rec.state_epoch)),
                Source(SHARE_STATE_TOPIC, rec.source_partition, rec.source_offset, rec.timestamp),
            )
        if after.start_offset < 0:
            return []
        self.resolved.setdefault(topic_key, {})[key.partition] = after.state_epoch
        pending = self.pending.pop(where, None)
        if pending is None or after.start_offset <= 0:
            return []
        return [_finding(pending, after, rec, topic_names)]


def _finding(
    pending: _Pending,
    after: SharePartitionState,
    rec: ShareStateRecord,
    topic_names: Mapping[str, str],
) -> Finding:
    key = after.key
    topic = topic_names.get(key.topic_id) or key.topic_id
    start = after.start_offset
    known = [p for p, _ in pending.known]
    return Finding(
        kind="share_new_partition_records_skipped",
        group=key.group,
        generation=None,
        detail=(
            f"share group {key.group}: partition {topic}-{key.partition} was added to a topic "
            f"the group already consumed (partitions {', '.join(map(str, known))}) and its "
            f"state started at offset {start}, not 0: records 0-{start - 1} ({start}) were "
            "never delivered to the group (KAFKA-20742: brokers before Kafka 4.4.0 start a new "
            "partition by share.auto.offset.reset)"
        ),
        source=Source(SHARE_STATE_TOPIC, rec.source_partition, rec.source_offset, rec.timestamp),
        topic=topic,
        partition=key.partition,
        evidence={
            "topic": topic,
            "topic_id": key.topic_id,
            "start_offset": start,
            "skipped_offsets": [0, start - 1],
            "skipped_records": start,
            "state_epoch": pending.state_epoch,
            "known_partitions": [list(pe) for pe in pending.known],
            "initialized_at": pending.source.to_dict(),
            "incident": "KAFKA-20742",
        },
        id_extra=f"{key.topic_id}/{key.partition}@{start}",
    )
