"""Lag of ``groupwatch analyze``'s input: the committed offsets of its commit records and the
owners of its group records, judged after the input against the brokers' answers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from groupwatch.detect.events import event_from_record
from groupwatch.detect.lag.book import CommitBook
from groupwatch.detect.lag.judge import LagRules, Verdict, judge
from groupwatch.detect.lag.model import Commit, EndOffset, Owner
from groupwatch.detect.lag.owners import TP, classic_owners, modern_members, modern_owners
from groupwatch.detect.model import GroupSnapshot, Tombstone

if TYPE_CHECKING:
    from groupwatch.detect.engine import Analyzer
    from groupwatch.protocol import DecodedRecord


@dataclass
class InputLag:
    """Fed every input record next to the engine (:meth:`record` or :meth:`line`, then
    :meth:`after`); judged once the brokers answered (:meth:`judge`)."""

    book: CommitBook = field(default_factory=CommitBook)
    #: group -> its classic owners from its newest snapshot that carries assignments.
    classic: dict[str, dict[TP, Owner]] = field(default_factory=dict)
    #: group -> (generation or group epoch, member count) as of the record being fed.
    shape: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)

    def record(self, record: DecodedRecord) -> None:
        """A raw record, decoded: commits and offset tombstones."""
        from groupwatch.protocol.models import OffsetCommitKey, OffsetCommitValue

        if record.record_type == "group_metadata":
            self._group(event_from_record(record))
            return
        key, value = record.key, record.value
        if record.record_type != "offset_commit" or not isinstance(key, OffsetCommitKey):
            return
        if record.tombstone or value is None:
            self.book.delete(key.group, key.topic, key.partition)
        elif isinstance(value, OffsetCommitValue):
            # The record's time, as the job's ``committed_offsets`` holds it (the coordinator
            # stamps both, and they can differ by a millisecond: a stop's id names its time).
            at = record.timestamp if record.timestamp is not None else value.commit_timestamp
            self._commit(
                key.group, key.topic, key.partition, value.offset, at,
                value.leader_epoch, len(value.metadata.encode("utf-8")),
            )  # fmt: skip

    def line(self, line: Mapping[str, Any]) -> None:
        """A ``groupwatch decode`` output line."""
        from groupwatch.detect.decoded import event_from_decoded

        kind = line.get("record_type")
        if kind == "group_metadata":
            self._group(event_from_decoded(line))
            return
        key = line.get("key")
        if kind != "offset_commit" or not isinstance(key, Mapping):
            return
        group, topic, partition = key.get("group"), key.get("topic"), key.get("partition")
        if not (isinstance(group, str) and isinstance(topic, str) and isinstance(partition, int)):
            return
        value = line.get("value")
        if line.get("tombstone") or not isinstance(value, Mapping):
            self.book.delete(group, topic, partition)
            return
        offset, at = value.get("offset"), value.get("commit_timestamp")
        stamped = line.get("timestamp")
        if isinstance(stamped, int):
            at = stamped  # the record's time, as for raw records (see :meth:`record`)
        if isinstance(offset, int) and isinstance(at, int):
            epoch = value.get("leader_epoch")
            meta = value.get("metadata")
            self._commit(
                group, topic, partition, offset, at,
                epoch if isinstance(epoch, int) else -1,
                len(meta.encode("utf-8")) if isinstance(meta, str) else 0,
            )  # fmt: skip

    def _group(self, event: object) -> None:
        if isinstance(event, GroupSnapshot):
            if not event.awaiting_assignment:
                # The generation since which the member owns it, as partition_ownership says.
                before = self.classic.get(event.group, {})
                now = classic_owners(event)
                for tp, owner in now.items():
                    old = before.get(tp)
                    if old is not None and old.member == owner.member:
                        now[tp] = old
                self.classic[event.group] = now
            self.shape[event.group] = (event.generation, len(event.members))
        elif isinstance(event, Tombstone):
            self.classic.pop(event.group, None)
            self.shape.pop(event.group, None)

    def after(self, group: str | None, analyzer: Analyzer) -> None:
        """The engine took a record of ``group``: a KIP-848 group's epoch and members now."""
        if group is None:
            return
        modern = analyzer.modern(group)
        if modern is not None:
            self.shape[group] = (modern.group_epoch, modern_members(modern))

    def _commit(
        self, group: str, topic: str, partition: int, offset: int, at: int, epoch: int, size: int
    ) -> None:
        generation, members = self.shape.get(group, (None, None))
        self.book.commit(
            Commit(group, topic, partition, offset, at, epoch, size, generation=generation),
            members=members,
        )

    def owners(self, analyzer: Analyzer, names: Mapping[str, str]) -> dict[str, dict[TP, Owner]]:
        """group -> partition -> owner, now."""
        out = {g: dict(o) for g, o in self.classic.items()}
        for group in self.book.groups():
            modern = analyzer.modern(group)
            if modern is not None:
                out[group] = modern_owners(modern, names)
        return out

    def partitions(self) -> set[TP]:
        return {(t, p) for (_, t, p) in self.book.commits}

    def judge(
        self,
        histories: Mapping[TP, list[EndOffset]],
        owners: Mapping[str, Mapping[TP, Owner]],
        rules: LagRules,
    ) -> list[Verdict]:
        """Every committed partition's verdict, by group, topic, partition."""
        out = []
        for (group, topic, partition), commit in sorted(self.book.commits.items()):
            owner = owners.get(group, {}).get((topic, partition))
            out.append(judge(commit, histories.get((topic, partition), []), owner, rules))
        return out
