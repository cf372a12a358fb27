"""Rebalances that never complete (``rebalance_stuck``): a classic group's watch and its rules.

``__consumer_offsets`` gets a ``GroupMetadataValue`` only when a generation completes (the
leader's SyncGroup succeeded, or the group emptied): a rebalance that never completes writes
nothing, and the group's commits stop.  Two signals remain, and both are judged here:

* **The records**: the next group-metadata record skips generations (every JoinGroup round
  whose SyncGroup never completed took a generation number), after a silence with neither a
  commit nor a completed generation.  Known once the group completes a generation again (or
  empties), so the finding is raised then, naming the generations skipped.
* **The brokers' view**: asked while it happens (Admin ``describeConsumerGroups``), the brokers
  report the group ``PreparingRebalance`` or ``CompletingRebalance``.  Raised when two looks in
  a row say so and the records show no completed generation and no commit for
  ``stuck_after_ms`` before the second look.

From the records alone a group stuck *now* cannot be told from a healthy group whose topic went
quiet (most clients commit only offsets that moved), so a silence alone raises nothing.

**After the group emptied** (a rollout: the old members stop, the group empties at generation
G, the new members join and none of their generations completes): there is no completed
generation with members to be stuck after, so the empty one is the anchor.  The brokers' looks
are judged from the first look that saw members rebalancing (the records cannot tell when they
joined: a group may sit empty for days before a healthy start), and raise once the rebalance
timeout (``stuck_after_ms``) has passed since it; the records after are judged by the
generations skipped after G (every JoinGroup round took one) when the next record empties the
group again or completes a generation only after more rounds than its members could have begun
by joining one by one.

The finding's generation is the last completed one (the empty one after a rollout): its id is
the same whichever signal raised it first (the other is then the same finding, not raised
again), and a later generation closes it, as it closes every finding of an earlier
generation.  KIP-848 groups never rebalance this way (their members reconcile one by one, see
:mod:`groupwatch.detect.modern`): a group with a modern state is not watched here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.findings import Finding
from groupwatch.detect.model import REBALANCING_STATES, BrokerView, GroupSnapshot

KIND = "rebalance_stuck"


@dataclass(frozen=True, slots=True)
class StuckWatch:
    """What the rules remember of a classic group between records (bounded by
    ``max_named_members``)."""

    #: The last completed generation that had members (``None``: none, or the group emptied).
    generation: int | None = None
    #: Record time (ms) of that generation's record.
    completed_ms: int | None = None
    #: Its members, ``member_id`` order of the record, at most ``max_named_members``.
    members: tuple[str, ...] = ()
    #: How many members it had (more than ``members`` names when capped).
    member_count: int = 0
    #: Record time (ms) of the group's newest offset commit.
    last_commit_ms: int | None = None
    #: When the brokers first said the group rebalances, since its last record or a look that
    #: said otherwise (wall-clock ms of the look).
    rebalancing_seen_ms: int | None = None
    #: The empty generation that emptied the group (``None``: it has members, or none seen).
    emptied_generation: int | None = None
    #: Record time (ms) of that empty generation's record.
    emptied_ms: int | None = None
    #: The most members the brokers listed rebalancing since the group emptied (0: none seen).
    joined_count: int = 0
    #: When a look first saw them (wall-clock ms; a look saying otherwise keeps it).
    joined_ms: int | None = None

    @property
    def idle_since_ms(self) -> int | None:
        """The group's last sign of progress: its last completed generation or commit."""
        times = [t for t in (self.completed_ms, self.last_commit_ms) if t is not None]
        return max(times) if times else None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "generation": self.generation,
            "completed_ms": self.completed_ms,
            "members": list(self.members),
            "member_count": self.member_count,
            "last_commit_ms": self.last_commit_ms,
            "rebalancing_seen_ms": self.rebalancing_seen_ms,
        }
        # The after-empty watch is written only while it holds something, so a state saved
        # before it existed is saved again as the same bytes (``group_state`` rows unchanged).
        after_empty = {
            "emptied_generation": self.emptied_generation,
            "emptied_ms": self.emptied_ms,
            "joined_count": self.joined_count,
            "joined_ms": self.joined_ms,
        }
        if any(after_empty.values()) or self.emptied_generation is not None:
            doc.update(after_empty)
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> StuckWatch:
        return cls(
            generation=doc.get("generation"),
            completed_ms=doc.get("completed_ms"),
            members=tuple(str(m) for m in doc.get("members") or ()),
            member_count=int(doc.get("member_count") or 0),
            last_commit_ms=doc.get("last_commit_ms"),
            rebalancing_seen_ms=doc.get("rebalancing_seen_ms"),
            emptied_generation=doc.get("emptied_generation"),
            emptied_ms=doc.get("emptied_ms"),
            joined_count=int(doc.get("joined_count") or 0),
            joined_ms=doc.get("joined_ms"),
        )


def on_commit(watch: StuckWatch, when_ms: int | None) -> StuckWatch:
    """An offset commit of the group at ``when_ms``."""
    if when_ms is None or (watch.last_commit_ms is not None and watch.last_commit_ms >= when_ms):
        return watch
    # Built directly: most records are commits, and ``dataclasses.replace`` costs as much as
    # the rest of a commit's step.
    return StuckWatch(
        watch.generation,
        watch.completed_ms,
        watch.members,
        watch.member_count,
        when_ms,
        watch.rebalancing_seen_ms,
        watch.emptied_generation,
        watch.emptied_ms,
        watch.joined_count,
        watch.joined_ms,
    )


def _names(members: tuple[str, ...], count: int) -> str:
    shown = ", ".join(members) if members else "none"
    return shown + (f" and {count - len(members)} more" if count > len(members) else "")


def on_snapshot(
    watch: StuckWatch, snap: GroupSnapshot, cfg: DetectorConfig
) -> tuple[StuckWatch, list[Finding]]:
    """A group-metadata record: judge the generations it skipped, then watch it."""
    found: list[Finding] = []
    last = watch.generation
    idle = watch.idle_since_ms
    if (
        last is not None
        and watch.last_commit_ms is not None
        and idle is not None
        and snap.time_ms is not None
        and snap.generation - last - 1 >= cfg.stuck_skipped_generations
        and snap.time_ms - idle >= cfg.stuck_skipped_after_ms
    ):
        skipped = snap.generation - last - 1
        stuck_for = snap.time_ms - idle
        ended = "completed" if snap.members else "emptied"
        found.append(
            Finding(
                kind=KIND,
                group=snap.group,
                generation=last,
                detail=f"no rebalance completed from generation {last} to {snap.generation}: "
                f"{skipped} generations skipped ({last + 1}..{snap.generation - 1}), "
                f"{stuck_for / 1000:g} s without a commit; generation {snap.generation} "
                f"{'completed' if snap.members else 'is empty'}; members of generation "
                f"{last}: {_names(watch.members, watch.member_count)}",
                source=snap.source,
                members=watch.members,
                evidence={
                    "confirmed_by": "skipped_generations",
                    "last_completed_generation": last,
                    "skipped_generations": {
                        "first": last + 1,
                        "last": snap.generation - 1,
                        "count": skipped,
                    },
                    "next_generation": snap.generation,
                    "ended": ended,
                    "stuck_since_ms": idle,
                    "stuck_for_ms": stuck_for,
                    "last_commit_ms": watch.last_commit_ms,
                    "member_count": watch.member_count,
                },
            )
        )
    elif last is None and watch.emptied_generation is not None:
        found.extend(_after_empty(watch, snap, cfg))
    if snap.members:
        ids = tuple(m.member_id for m in snap.members)
        watch = StuckWatch(
            generation=snap.generation,
            completed_ms=snap.time_ms,
            members=ids[: cfg.max_named_members],
            member_count=len(ids),
            last_commit_ms=watch.last_commit_ms,
        )
    else:
        # Emptied: the members that stopped are not stuck; those that join next are judged
        # from this generation on.
        watch = StuckWatch(
            last_commit_ms=watch.last_commit_ms,
            emptied_generation=snap.generation,
            emptied_ms=snap.time_ms,
        )
    return watch, found


def _hhmm(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%H:%M")


def _joined(watch: StuckWatch) -> tuple[str, int | None]:
    """``N members joined at HH:MM`` from the brokers' looks, else what the records tell: the
    members joined after the group emptied (when, the records cannot say)."""
    seen = watch.joined_ms
    if watch.joined_count and seen is not None:
        n = watch.joined_count
        return f"{n} member{'s' if n != 1 else ''} joined at {_hhmm(seen)}", seen
    if watch.emptied_ms is not None:
        return f"members joined after {_hhmm(watch.emptied_ms)}", watch.emptied_ms
    return "members joined", None


def _after_empty(watch: StuckWatch, snap: GroupSnapshot, cfg: DetectorConfig) -> list[Finding]:
    """The record after an empty generation: the rounds the members that joined since began,
    none of which completed."""
    emptied = watch.emptied_generation
    if emptied is None or snap.time_ms is None or watch.emptied_ms is None:
        return []
    skipped = snap.generation - emptied - 1
    silence = snap.time_ms - watch.emptied_ms
    # Members joining one by one each may begin a round that the next join voids: a healthy
    # start of N members skips up to about N - 1 generations, so a completed generation counts
    # as stuck only past the threshold plus its members.  An empty one had no healthy start.
    needed = cfg.stuck_skipped_generations + len(snap.members)
    if skipped < needed or silence < cfg.stuck_skipped_after_ms:
        return []
    joined, since = _joined(watch)
    over = snap.time_ms - (since if since is not None else watch.emptied_ms)
    ended = "completed" if snap.members else "emptied"
    then = (
        f"generation {snap.generation} then completed with {len(snap.members)} members"
        if snap.members
        else f"the group emptied again at generation {snap.generation}"
    )
    return [
        Finding(
            kind=KIND,
            group=snap.group,
            generation=emptied,
            detail=f"{joined} and no generation completed in {skipped} attempts over "
            f"{max(0, over) / 1000:g} seconds; {then} (it had emptied at generation {emptied}; "
            f"generations {emptied + 1}..{snap.generation - 1} skipped)",
            source=snap.source,
            members=(),
            evidence={
                "confirmed_by": "skipped_generations",
                "after_empty": True,
                "emptied_generation": emptied,
                "emptied_ms": watch.emptied_ms,
                "joined_count": watch.joined_count or None,
                "joined_seen_ms": since if watch.joined_count else None,
                "last_completed_generation": None,
                "skipped_generations": {
                    "first": emptied + 1,
                    "last": snap.generation - 1,
                    "count": skipped,
                },
                "next_generation": snap.generation,
                "ended": ended,
                "stuck_since_ms": watch.emptied_ms,
                "stuck_for_ms": silence,
                "last_commit_ms": watch.last_commit_ms,
                "member_count": len(snap.members),
            },
        )
    ]


def on_view(
    watch: StuckWatch, view: BrokerView, cfg: DetectorConfig
) -> tuple[StuckWatch, list[Finding]]:
    """The brokers' answer about the group: confirm a rebalance that lasts."""
    if view.state not in REBALANCING_STATES:
        if watch.rebalancing_seen_ms is None:
            return watch, []
        return replace(watch, rebalancing_seen_ms=None), []
    first = watch.rebalancing_seen_ms
    seen = replace(watch, rebalancing_seen_ms=view.time_ms if first is None else first)
    if watch.generation is None and watch.emptied_generation is not None:
        return _view_after_empty(watch, seen, view, cfg)
    idle = watch.idle_since_ms
    if watch.generation is None or first is None or idle is None or view.time_ms <= first:
        # Nothing completed with members to be stuck after, or a first look: a rebalance the
        # brokers report once may be over a moment later.
        return seen, []
    stuck_for = view.time_ms - idle
    if stuck_for < cfg.stuck_after_ms:
        return seen, []
    last = watch.generation
    finding = Finding(
        kind=KIND,
        group=view.group,
        generation=last,
        detail=f"the brokers report {view.state} (since at least {first} ms), no generation "
        f"completed after {last} and no commit for {stuck_for / 1000:g} s; members of "
        f"generation {last}: {_names(watch.members, watch.member_count)}; the brokers list "
        f"{_names(view.members[: cfg.max_named_members], len(view.members))}",
        source=view.source,
        members=watch.members,
        evidence={
            "confirmed_by": "brokers",
            "broker_state": view.state,
            "broker_members": list(view.members[: cfg.max_named_members]),
            "broker_member_count": len(view.members),
            "rebalancing_seen_ms": first,
            "looked_at_ms": view.time_ms,
            "last_completed_generation": last,
            "stuck_since_ms": idle,
            "stuck_for_ms": stuck_for,
            "last_commit_ms": watch.last_commit_ms,
            "member_count": watch.member_count,
        },
    )
    return seen, [finding]


def _view_after_empty(
    watch: StuckWatch, seen: StuckWatch, view: BrokerView, cfg: DetectorConfig
) -> tuple[StuckWatch, list[Finding]]:
    """The brokers report members rebalancing in a group whose last record emptied it."""
    if not view.members:
        # Nobody rebalancing: nothing joined yet.
        return replace(watch, rebalancing_seen_ms=None), []
    seen = replace(
        seen,
        joined_count=max(watch.joined_count, len(view.members)),
        joined_ms=view.time_ms if watch.joined_ms is None else watch.joined_ms,
    )
    first = watch.rebalancing_seen_ms
    if first is None or view.time_ms <= first:
        return seen, []  # a first look: a healthy start is a rebalance too
    # The records cannot say when the members joined (an empty group may sit for days before a
    # healthy start), so the rebalance timeout runs from the first look that saw them.
    stuck_for = view.time_ms - first
    if stuck_for < cfg.stuck_after_ms:
        return seen, []
    emptied = watch.emptied_generation
    assert emptied is not None
    named = view.members[: cfg.max_named_members]
    joined, _ = _joined(seen)
    emptied_at = f" at {_hhmm(watch.emptied_ms)}" if watch.emptied_ms is not None else ""
    finding = Finding(
        kind=KIND,
        group=view.group,
        generation=emptied,
        detail=f"{joined} and no generation completed over {stuck_for / 1000:g} seconds "
        f"(the brokers report {view.state} at two looks and no generation numbers); the group "
        f"had emptied at generation {emptied}{emptied_at}; the brokers list "
        f"{_names(named, len(view.members))}",
        source=view.source,
        members=tuple(m.split(" (", 1)[0] for m in named),
        evidence={
            "confirmed_by": "brokers",
            "after_empty": True,
            "broker_state": view.state,
            "broker_members": list(named),
            "broker_member_count": len(view.members),
            "rebalancing_seen_ms": first,
            "looked_at_ms": view.time_ms,
            "emptied_generation": emptied,
            "emptied_ms": watch.emptied_ms,
            "joined_count": seen.joined_count,
            "last_completed_generation": None,
            "stuck_since_ms": first,
            "stuck_for_ms": stuck_for,
            "last_commit_ms": watch.last_commit_ms,
            "member_count": len(view.members),
        },
    )
    return seen, [finding]
