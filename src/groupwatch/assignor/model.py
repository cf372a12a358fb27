"""Plain data in and out of the assignor: subscriptions, results, and the domain errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from groupwatch.errors import GroupwatchError

Protocol = Literal["sticky", "cooperative-sticky"]
PROTOCOLS: tuple[Protocol, ...] = ("sticky", "cooperative-sticky")
#: Kafka's ``AbstractStickyAssignor.DEFAULT_GENERATION``: what an absent generation counts as.
DEFAULT_GENERATION = -1


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class AssignorError(GroupwatchError):
    """Base class of everything the assignor package raises on purpose."""


class AssignorInputError(AssignorError, ValueError):
    """The input is inconsistent (negative partition count, duplicate member, bad protocol...)."""


class KafkaAssignorFailure(AssignorError):
    """Kafka's own assignor throws on this input (we reproduce the failure instead of guessing)."""


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """One member as the group leader sees it in the JoinGroup response.

    ``generation`` is the member's generation (``None`` = absent, counted as -1); for the
    eager ``sticky`` protocol it is the generation in the member's user data, for
    ``cooperative-sticky`` the subscription's ``generationId``.  ``rack_id`` ``None`` or ``""``
    means no rack (KIP-881).

    ``rival_generation`` is the generation another claimant of the same partition is compared
    with: Kafka reads it from the subscription's ``generationId`` (absent or negative: -1), not
    from the member data, so it differs from ``generation`` for a sticky member whose user data
    and subscription disagree, or a cooperative member whose generation is only in its user
    data (see :mod:`groupwatch.assignor.claims`).  ``None``: the same as ``generation``.
    """

    member_id: str
    topics: tuple[str, ...]
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation: int | None = None
    rack_id: str | None = None
    rival_generation: int | None = None


@dataclass(frozen=True, slots=True)
class AssignmentResult:
    """What the leader would send back.

    ``assignment`` has every member, in the order the leader saw them, each with its partitions
    in Kafka's list order.  ``withheld`` (cooperative-sticky only) lists, sorted, the partitions
    the intended assignment gives to a new owner and that are therefore left unassigned for this
    round (KIP-429).  ``path`` tells which of Kafka's two algorithms ran.
    """

    protocol: Protocol
    assignment: Mapping[str, tuple[TopicPartition, ...]]
    withheld: tuple[TopicPartition, ...] = ()
    path: Literal["constrained", "general", "empty"] = "empty"
    partitions_per_topic: Mapping[str, int] = field(default_factory=dict)

    def owner_of(self) -> dict[TopicPartition, str]:
        """Partition -> member for every assigned partition."""
        return {tp: m for m, tps in self.assignment.items() for tp in tps}
