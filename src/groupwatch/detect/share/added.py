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
from dataclasses import dataclass, field, replace

from groupwatch.detect.findings import Finding, Source
from groupwatch.detect.share.names import SHARE_STATE_TOPIC
from groupwatch.detect.share.state import AddedPending, SharePartitionState, ShareStateRecord

__all__ = ["AddedPartitions"]

#: The start offset a coordinator before the fix writes: "resolve by share.auto.offset.reset".
UNINITIALIZED = -1


@dataclass(frozen=True)
class _Pending:
    """A partition whose first state was the -1 sentinel: a new partition if its topic was known
    then; ``resolved``: its first resolved start (and that record's position), once seen."""

    state_epoch: int
    initialized_ms: int | None
    source: Source
    resolved: tuple[int, Source] | None = None


@dataclass
class AddedPartitions:
    """What the judgement needs of each share group's topics, record by record.

    ``__share_group_state`` keeps each share partition's records in one of its partitions, so a
    reader sees a partition's records in order but the partitions of one topic in any order (a
    dump lists one state-topic partition after another; the job reads them in parallel): "known
    before" is judged by the records' timestamps, whichever arrives first."""

    #: (group, topic id) -> partition -> (first resolved state's timestamp, its state epoch).
    resolved: dict[tuple[str, str], dict[int, tuple[int | None, int]]] = field(default_factory=dict)
    #: (group, topic id, partition) -> a partition initialised with -1.
    pending: dict[tuple[str, str, int], _Pending] = field(default_factory=dict)

    def saved(
        self, group: str
    ) -> tuple[tuple[tuple[str, int, int | None, int], ...], tuple[AddedPending, ...]]:
        """The group's part of the watch, as the job saves it between batches."""
        known = tuple(
            sorted(
                (topic_id, p, ts, epoch)
                for (g, topic_id), parts in self.resolved.items()
                if g == group
                for p, (ts, epoch) in parts.items()
            )
        )
        pending = tuple(
            AddedPending(
                topic_id,
                partition,
                p.state_epoch,
                p.initialized_ms,
                (p.source.partition, p.source.offset, p.source.timestamp),
                None if p.resolved is None else p.resolved[0],
                None
                if p.resolved is None
                else (p.resolved[1].partition, p.resolved[1].offset, p.resolved[1].timestamp),
            )
            for (g, topic_id, partition), p in sorted(self.pending.items())
            if g == group
        )
        return known, pending

    def restore(
        self,
        group: str,
        known: tuple[tuple[str, int, int | None, int], ...],
        pending: tuple[AddedPending, ...],
    ) -> None:
        """The group's part of the watch as :meth:`saved` gave it, handed back."""
        for topic_id, partition, ts, epoch in known:
            self.resolved.setdefault((group, topic_id), {})[partition] = (ts, epoch)
        for a in pending:
            resolved = None
            if a.resolved_start is not None and a.resolved_at is not None:
                resolved = (a.resolved_start, Source(SHARE_STATE_TOPIC, *a.resolved_at))
            self.pending[(group, a.topic_id, a.partition)] = _Pending(
                a.state_epoch, a.initialized_ms, Source(SHARE_STATE_TOPIC, *a.at), resolved
            )

    def apply(
        self,
        before: SharePartitionState | None,
        after: SharePartitionState | None,
        rec: ShareStateRecord,
        topic_names: Mapping[str, str],
    ) -> list[Finding]:
        """The findings ``rec`` completes, if any (``before``/``after``: the partition's state
        around it)."""
        key = rec.key
        topic_key = (key.group, key.topic_id)
        where = (key.group, key.topic_id, key.partition)
        if after is None:  # the partition's state deleted: it is neither known nor pending
            self.resolved.get(topic_key, {}).pop(key.partition, None)
            self.pending.pop(where, None)
            return []
        if before is None and rec.snapshot and rec.start_offset == UNINITIALIZED:
            self.pending[where] = _Pending(
                rec.state_epoch,
                rec.timestamp,
                Source(SHARE_STATE_TOPIC, rec.source_partition, rec.source_offset, rec.timestamp),
            )
        if after.start_offset < 0:
            return []
        partitions = self.resolved.setdefault(topic_key, {})
        if key.partition not in partitions:
            partitions[key.partition] = (rec.timestamp, after.state_epoch)
        pending = self.pending.get(where)
        if pending is not None and pending.resolved is None:
            if after.start_offset <= 0:
                del self.pending[where]  # started at its first offset: nothing lost
            else:
                at = Source(
                    SHARE_STATE_TOPIC, rec.source_partition, rec.source_offset, rec.timestamp
                )
                self.pending[where] = replace(pending, resolved=(after.start_offset, at))
        return self._judge(topic_key, topic_names)

    def _judge(self, topic_key: tuple[str, str], topic_names: Mapping[str, str]) -> list[Finding]:
        """Every partition of the topic initialised with -1 and resolved past 0 whose topic was
        known when it was initialised, as far as the records seen tell; each raised once."""
        group, topic_id = topic_key
        partitions = self.resolved.get(topic_key, {})
        out: list[Finding] = []
        for (g, t, partition), pending in sorted(self.pending.items()):
            if (g, t) != topic_key or pending.resolved is None:
                continue
            known = tuple(
                sorted(
                    (p, epoch)
                    for p, (ts, epoch) in partitions.items()
                    if p != partition
                    and epoch < pending.state_epoch
                    and (
                        ts is None or pending.initialized_ms is None or ts < pending.initialized_ms
                    )
                )
            )
            if not known:
                continue
            del self.pending[(g, t, partition)]
            out.append(_finding(group, topic_id, partition, pending, known, topic_names))
        return out


def _finding(
    group: str,
    topic_id: str,
    partition: int,
    pending: _Pending,
    known: tuple[tuple[int, int], ...],
    topic_names: Mapping[str, str],
) -> Finding:
    assert pending.resolved is not None
    start, source = pending.resolved
    topic = topic_names.get(topic_id) or topic_id
    return Finding(
        kind="share_new_partition_records_skipped",
        group=group,
        generation=None,
        detail=(
            f"share group {group}: partition {topic}-{partition} was added to a topic "
            f"the group already consumed (partitions {', '.join(str(p) for p, _ in known)}) and "
            f"its state started at offset {start}, not 0: records 0-{start - 1} ({start}) were "
            "never delivered to the group (KAFKA-20742: brokers before Kafka 4.4.0 start a new "
            "partition by share.auto.offset.reset)"
        ),
        source=source,
        topic=topic,
        partition=partition,
        evidence={
            "topic": topic,
            "topic_id": topic_id,
            "start_offset": start,
            "skipped_offsets": [0, start - 1],
            "skipped_records": start,
            "state_epoch": pending.state_epoch,
            "known_partitions": [list(pe) for pe in known],
            "initialized_at": pending.source.to_dict(),
            "incident": "KAFKA-20742",
        },
        id_extra=f"{topic_id}/{partition}@{start}",
    )
