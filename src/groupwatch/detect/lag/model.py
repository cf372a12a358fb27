"""The values lag is computed from and made of; times are epoch milliseconds."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "lagging", "stalled", "stopped", "rewound", "idle"]

#: Worst first: a topic or a group takes the worst status of its partitions.
WORST_FIRST: tuple[Status, ...] = ("stopped", "stalled", "rewound", "lagging", "ok", "idle")
RANK: dict[Status, int] = {s: i for i, s in enumerate(WORST_FIRST)}


def worst(statuses: Iterable[Status]) -> Status:
    """The worst of some statuses (``idle`` for none)."""
    return min(statuses, key=RANK.__getitem__, default="idle")


@dataclass(frozen=True, slots=True)
class Commit:
    """The latest committed offset of one (group, topic, partition) and how it got there."""

    group: str
    topic: str
    partition: int
    offset: int
    #: The commit's own time (``commit_timestamp`` of the record: the coordinator's clock).
    commit_ms: int
    leader_epoch: int = -1
    metadata_size: int = 0
    #: When the committed offset last changed (the first commit of this offset).
    moved_ms: int | None = None
    #: Set while the offset is below the higher offset it was moved back from by a member
    #: (not by a rebalance or a reset of the group): that higher offset, and when.
    rewound_from: int | None = None
    rewound_ms: int | None = None
    #: The group's generation (classic) or group epoch (KIP-848) when this commit was written,
    #: if known: a move backwards across a generation is the group's own doing.
    generation: int | None = None

    @property
    def since_ms(self) -> int:
        """When the committed offset last moved (the commit time if unknown)."""
        return self.commit_ms if self.moved_ms is None else self.moved_ms


@dataclass(frozen=True, slots=True)
class EndOffset:
    """One answer of the brokers (``listOffsets`` earliest and latest) for one partition."""

    topic: str
    partition: int
    start_offset: int
    end_offset: int
    observed_ms: int


@dataclass(frozen=True, slots=True)
class Owner:
    """The member that owns a partition now."""

    member: str
    client: str | None = None
    host: str | None = None
    #: The generation (classic) or the member epoch (KIP-848).
    generation: int | None = None


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One row of ``partition_lag`` (``docs/tables.md``)."""

    group: str
    topic: str
    partition: int
    committed_offset: int
    commit_ms: int
    end_offset: int | None
    lag_records: int | None
    lag_seconds: float | None
    lag_seconds_at_least: bool
    status: Status
    owner: Owner | None
    #: When the end offset used was observed (``None``: never).
    observed_ms: int | None
    #: The end offset is older than the last poll: the brokers did not answer.
    stale: bool = False
    #: The group is empty and has not committed for ``lag.retire_hours``: retired, not alerted.
    retired: bool = False

    def to_row(self) -> dict[str, object]:
        """The contract's column names (times as epoch milliseconds)."""
        o = self.owner
        return {
            "group": self.group,
            "topic": self.topic,
            "partition": self.partition,
            "committed_offset": self.committed_offset,
            "commit_time": self.commit_ms,
            "end_offset": self.end_offset,
            "lag_records": self.lag_records,
            "lag_seconds": self.lag_seconds,
            "lag_seconds_at_least": self.lag_seconds_at_least,
            "status": self.status,
            "owner_member": None if o is None else o.member,
            "owner_client": None if o is None else o.client,
            "owner_host": None if o is None else o.host,
            "owner_generation": None if o is None else o.generation,
            "observed_at": self.observed_ms,
            "stale": self.stale,
            "retired": self.retired,
        }
