"""Partition counts as a timeline, and subscribed topics that no longer exist.

A generation is judged against the partition count that held when its record was written.  What
the engine knows about a count, and from when it holds:

* **the group's own records**: a partition assigned, claimed or committed at time *t* existed
  at *t*, so the topic had at least that many partitions from *t* on (``inferred``);
* **the brokers**, asked at time *T* (``analyze --bootstrap-server``): every topic's count at
  *T*, and every topic that exists at *T* (``brokers at <T>``);
* **configured** counts (``--partitions``, ``detect.partitions``), stated at a time *T*
  (``configured at <T>``), or for every record when no time is given (``configured``).

Within one topic id a count only grows (Kafka adds partitions, never removes them), so a count
seen at *T* is a lower bound from *T* on and only an upper bound before *T*.  Completeness
(``unassigned_partitions``) needs a lower bound, so an observation judges only generations
written at or after *T*: a count observed later is never applied to an earlier generation,
because nothing in ``__consumer_offsets`` says when partitions were added.  An observation
stops holding when the group's records show the topic deleted after *T*
(``subscribed_topic_missing``): a re-created topic's partitions are counted anew.

A subscribed topic is **missing** in a generation whose leader assigned none of its partitions,
when the leader demonstrably had metadata (it assigned other topics), or the topic is known to
have existed (an earlier count, an earlier generation found it missing), or the brokers listed
no such topic at a time at or before the generation.  A Java consumer keeps a deleted topic in
its subscription until it is restarted; its leader assigns what exists, so nothing of the topic
is "unassigned": the topic is gone.  A leader without any metadata yet (kafka-python's first
generation) has none of these signs and stays with ``unassigned_partitions``' confirmation.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.model import GroupSnapshot


def _at(ms: int) -> str:
    """An observation time as findings print it: ISO-8601 UTC, to the second."""
    when = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _holds(as_of_ms: int | None, time_ms: int | None, gone_ms: int | None) -> bool:
    """Whether an observation made at ``as_of_ms`` (``None``: for every record) holds for a
    record written at ``time_ms``, the topic having been seen gone or renewed at ``gone_ms``."""
    if as_of_ms is None:
        return True
    if time_ms is None or as_of_ms > time_ms:
        return False  # observed later: only an upper bound for this record
    return gone_ms is None or gone_ms <= as_of_ms


def counts_at(
    inferred: Mapping[str, int],
    gone: Mapping[str, int],
    config: DetectorConfig,
    time_ms: int | None,
) -> tuple[dict[str, int], dict[str, str]]:
    """topic -> partition count holding at ``time_ms``, and where each count comes from.

    The largest lower bound wins: the group's own records, the brokers' and the configured
    counts each hold from their time on (see the module's doc); a count's source names the
    observation it came from.
    """
    counts = dict(inferred)
    sources = {t: "inferred" for t in counts}
    observations = (
        (config.broker_partitions, config.broker_partitions_as_of_ms, "brokers"),
        (config.partitions_per_topic, config.partitions_as_of_ms, "configured"),
    )
    for observed, as_of, label in observations:
        source = label if as_of is None else f"{label} at {_at(as_of)}"
        for topic, n in observed.items():
            if n < counts.get(topic, 0):
                continue
            if _holds(as_of, time_ms, gone.get(topic)):
                counts[topic] = n
                sources[topic] = source
    return counts, sources


def brokers_say_gone(
    topic: str, gone: Mapping[str, int], config: DetectorConfig, time_ms: int | None
) -> bool:
    """The brokers, asked at or before ``time_ms``, listed no topic of that name."""
    as_of = config.broker_partitions_as_of_ms
    if as_of is None and not config.broker_partitions:
        return False  # never asked
    return topic not in config.broker_partitions and _holds(as_of, time_ms, gone.get(topic))


@dataclass(frozen=True, slots=True)
class Missing:
    """A subscribed topic the generation's leader found no partition of."""

    topic: str
    #: The generation it was first found missing in (this episode of the subscription).
    since_generation: int
    #: Why it is taken for gone rather than unassigned.
    reasons: tuple[str, ...]
    subscribers: tuple[str, ...]


def missing_topics(
    snap: GroupSnapshot,
    inferred: Mapping[str, int],
    gone: Mapping[str, int],
    missing_since: Mapping[str, int],
    config: DetectorConfig,
    withholding_seen: bool = False,
) -> dict[str, Missing]:
    """The topics of ``snap`` the group subscribes to but that did not exist for its leader.

    Judged only on a snapshot whose assignment is known and readable; ``inferred`` is what the
    group's records showed *before* this snapshot.
    """
    if (
        snap.protocol_type != "consumer"
        or not snap.members
        or snap.awaiting_assignment
        or any(m.assignment_error is not None for m in snap.members)
    ):
        return {}
    subscribers: dict[str, list[str]] = {}
    for m in snap.members:
        if m.subscription_error is None:
            for topic in dict.fromkeys(m.topics):
                subscribers.setdefault(topic, []).append(m.member_id)
    assigned = {tp[0] for m in snap.members for tp in m.assigned}
    claimed = {tp[0] for m in snap.members for tp in m.claim}
    # A leader that hands over in two rounds (cooperative-sticky, Streams) may leave out what
    # is still claimed for a round: that is not absence.  Eager leaders withhold nothing.
    withholds = withholding_seen or (snap.protocol or "") in config.cooperative_protocols
    out: dict[str, Missing] = {}
    for topic, members in sorted(subscribers.items()):
        if topic in assigned or (withholds and topic in claimed):
            continue
        reasons = []
        if assigned:
            reasons.append("the leader assigned other topics: its metadata had no such topic")
        if topic in missing_since:
            reasons.append(f"missing since generation {missing_since[topic]}")
        elif inferred.get(topic, 0) > 0:
            reasons.append(
                f"the group's records showed {inferred[topic]} partition(s) of it before"
            )
        if brokers_say_gone(topic, gone, config, snap.time_ms):
            when = config.broker_partitions_as_of_ms
            reasons.append(
                "the brokers list no such topic" + ("" if when is None else f" at {_at(when)}")
            )
        if not reasons:
            continue  # a leader without any metadata yet: unassigned_partitions judges it
        out[topic] = Missing(
            topic=topic,
            since_generation=missing_since.get(topic, snap.generation),
            reasons=tuple(reasons),
            subscribers=tuple(members),
        )
    return out
