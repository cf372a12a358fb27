"""The newest ``group_state`` version of every group, held by the driver between batches.

Without it, each micro-batch scans every group's state in the table to find the few groups it
touches (and scans it again for the groups whose pending confirmation came due): on a cluster
of 10,000 groups that is hundreds of megabytes read per batch for a handful of groups.

The cache mirrors the table exactly up to a batch id (``through``): it is filled from the table
once, then each batch adds the versions it wrote, and state maintenance tells it which groups it
forgot.

What it holds of a version comes in two parts.  Its key, times and timer (the batch that wrote it,
whether the group is gone, the last event, the confirmation it awaits) cost about
``ENTRY_OVERHEAD`` bytes a group and are always held: they answer which groups a batch's clocks
make due, and which version of a group a batch reads.  Its state text (25 KB a group on average
on the cluster model, megabytes for the largest) is held while the budget allows: over it, the
texts written longest ago are dropped first, and a batch that asks for such a group reads that
one version from the table by its key (:meth:`StateCache.split`).  A live batch touches few
groups, mostly ones that changed lately, so its texts are the ones held; a fleet whose texts
outgrow the budget (100,000 groups: 2.5 GB) keeps its keys (20 MB) and no batch scans the table
for them.  A batch may use it only when it mirrors every version older than that batch and none of
its own: ``through == batch_id - 1``.  Anything else (a replay of a batch after a failure, a
batch that failed half-way, a restart) makes the caller reload it from the table, which holds
the truth.  So a batch reads the same state from the cache as it would from the table, and the
exactly-once argument of ``docs/job.md`` is unchanged.

Pure Python, so it is tested without Spark; the Spark side that fills it lives in
:mod:`groupwatch.spark.state_store`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

#: Bytes counted per cached group besides its state text (keys, the version's fields).
ENTRY_OVERHEAD = 200


@dataclass(frozen=True, slots=True)
class Version:
    """A group's newest state version (a ``group_state`` row, times as epoch milliseconds)."""

    batch_id: int
    deleted: bool
    state: str | None
    last_event_ms: int | None
    pending_until_ms: int | None
    pending_partition: int | None

    @property
    def size(self) -> int:
        return ENTRY_OVERHEAD + (len(self.state) if self.state is not None else 0)


@dataclass(frozen=True, slots=True)
class Key:
    """A group's newest version whose text the cache does not hold: read from the table by it."""

    group: str
    batch_id: int
    last_event_ms: int | None


class StateCache:
    """Every group's newest state version, mirroring ``group_state`` through batch ``through``."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        #: The table's versions with batch ids up to this one are all reflected; None: nothing.
        self.through: int | None = None
        self._newest: dict[str, Version] = {}
        #: Groups whose newest version awaits a confirmation (a subset of ``_newest``).
        self._pending: set[str] = set()
        #: Groups whose version holds its text, the one written longest ago first (the first
        #: dropped over the budget); the others' versions keep ``state`` None.
        self._held: dict[str, None] = {}
        #: Texts dropped over the budget since the cache was filled.
        self.dropped_texts = 0
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._newest)

    @property
    def size_bytes(self) -> int:
        """The cache's size as counted against its budget."""
        return self._bytes

    def covers(self, batch_id: int) -> bool:
        """Whether it holds exactly the table's versions older than ``batch_id``."""
        return self.through is not None and self.through == batch_id - 1

    @property
    def holds_all_texts(self) -> bool:
        """Whether every live version's text is held (nothing to read by key)."""
        return len(self._held) == len(self._newest)

    def fits(self, groups: int, chars: int) -> bool:
        """Whether ``groups`` versions with ``chars`` characters of state in all fit with their
        texts (counted as :attr:`Version.size` counts them); False if only their keys."""
        return groups * ENTRY_OVERHEAD + chars <= self.budget_bytes

    def reset(
        self,
        through: int,
        newest: Iterable[tuple[str, Version]],
        *,
        keys_only: Iterable[tuple[str, Version]] = (),
    ) -> None:
        """Fill it with the table's newest version per group among batches up to ``through``:
        ``newest`` with their texts (held in that order: the first are the first dropped over
        the budget), ``keys_only`` read without them (none held)."""
        self.invalidate()
        self._add(keys_only, texts=False)
        self._add(newest)
        self.through = through

    def texts_to_hold(self, sizes: Iterable[tuple[str, int, int]]) -> set[str]:
        """Of the groups whose newest versions are ``sizes`` ((group, batch id, characters of
        state)), those whose texts a load holds: all if they fit, else the most recently
        written that fit beside every group's key (none if the keys alone are over)."""
        listed = list(sizes)
        room = self.budget_bytes - len(listed) * ENTRY_OVERHEAD
        held: set[str] = set()
        for group, _, chars in sorted(listed, key=lambda s: (-s[1], s[0])):
            if chars > room:
                break
            room -= chars
            held.add(group)
        return held

    def add(self, batch_id: int, written: Iterable[tuple[str, Version]]) -> None:
        """The versions batch ``batch_id`` wrote (each group's newest from now on), with their
        texts: held, and the texts written longest ago dropped if over the budget."""
        if not self.covers(batch_id):
            raise ValueError(f"batch {batch_id} does not follow batch {self.through}")
        self._add(written)

    def forget(self, groups: Iterable[str], before: int) -> None:
        """State maintenance deleted these groups' versions older than ``before``."""
        for group in groups:
            version = self._newest.get(group)
            if version is not None and version.batch_id < before:
                self._drop(group)

    def settle(self, batch_id: int) -> None:
        """Batch ``batch_id`` completed: the cache now mirrors the table through it."""
        if self.through is not None and self.through <= batch_id:
            self.through = batch_id

    def invalidate(self) -> None:
        """Forget everything (the next batch reloads from the table)."""
        self.through = None
        self._newest.clear()
        self._pending.clear()
        self._held.clear()
        self.dropped_texts = 0
        self._bytes = 0

    def due(self, clocks: Mapping[int, int]) -> list[str]:
        """Groups whose pending confirmation the batch's clocks (source partition -> newest
        record time, ms) make due: a pending partition's own clock, or the newest of all when
        the version names no partition; a partition the batch did not read is not due."""
        if not clocks:
            return []
        newest_clock = max(clocks.values())
        due = []
        for group in self._pending:
            version = self._newest[group]
            assert version.pending_until_ms is not None
            clock = (
                newest_clock
                if version.pending_partition is None
                else clocks.get(version.pending_partition)
            )
            if clock is not None and version.pending_until_ms <= clock:
                due.append(group)
        return sorted(due)

    def split(
        self, groups: Iterable[str]
    ) -> tuple[list[tuple[str, str | None, int | None]], list[Key]]:
        """Those ``groups`` that have live state: (group, state, last event ms) of those whose
        text is held, and the keys of those whose text must be read from the table."""
        held: list[tuple[str, str | None, int | None]] = []
        by_key: list[Key] = []
        for group in groups:
            version = self._newest.get(group)
            if version is None or version.deleted:
                continue
            if group in self._held:
                held.append((group, version.state, version.last_event_ms))
            else:
                by_key.append(Key(group, version.batch_id, version.last_event_ms))
        return held, by_key

    # -- internals ---------------------------------------------------------------------------
    def _add(self, versions: Iterable[tuple[str, Version]], *, texts: bool = True) -> None:
        for group, version in versions:
            self._drop(group)
            if not texts:
                version = dataclasses.replace(version, state=None)
            self._newest[group] = version
            self._bytes += version.size
            if texts:
                self._held[group] = None
            if version.pending_until_ms is not None and not version.deleted:
                self._pending.add(group)
        # Over the budget the texts written longest ago go first (dicts keep insertion order,
        # and a group written again was dropped and inserted anew, at the end).
        while self._bytes > self.budget_bytes and self._held:
            self._unhold(next(iter(self._held)))

    def _unhold(self, group: str) -> None:
        del self._held[group]
        version = self._newest[group]
        if version.state is not None:
            self._bytes -= len(version.state)
            self._newest[group] = dataclasses.replace(version, state=None)
        self.dropped_texts += 1

    def _drop(self, group: str) -> None:
        old = self._newest.pop(group, None)
        if old is not None:
            self._bytes -= old.size
            self._pending.discard(group)
            self._held.pop(group, None)
