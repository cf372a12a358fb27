"""The newest ``group_state`` version of every group, held by the driver between batches.

Without it, each micro-batch scans every group's state in the table to find the few groups it
touches (and scans it again for the groups whose pending confirmation came due): on a cluster
of 10,000 groups that is hundreds of megabytes read per batch for a handful of groups.

The cache mirrors the table exactly up to a batch id (``through``): it is filled from the table
once, then each batch adds the versions it wrote, and state maintenance tells it which groups it
forgot.  A batch may use it only when it mirrors every version older than that batch and none of
its own: ``through == batch_id - 1``.  Anything else (a replay of a batch after a failure, a
batch that failed half-way, a restart) makes the caller reload it from the table, which holds
the truth.  So a batch reads the same state from the cache as it would from the table, and the
exactly-once argument of ``docs/job.md`` is unchanged.

Pure Python, so it is tested without Spark; the Spark side that fills it lives in
:mod:`groupwatch.spark.state_store`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from groupwatch.errors import GroupwatchError

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


class OverBudget(GroupwatchError):
    """The groups' newest state would exceed the cache's budget."""


class StateCache:
    """Every group's newest state version, mirroring ``group_state`` through batch ``through``."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        #: The table's versions with batch ids up to this one are all reflected; None: nothing.
        self.through: int | None = None
        self._newest: dict[str, Version] = {}
        #: Groups whose newest version awaits a confirmation (a subset of ``_newest``).
        self._pending: set[str] = set()
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

    def check_fits(self, groups: int, chars: int) -> None:
        """Raise :class:`OverBudget` unless ``groups`` versions of ``chars`` characters of
        state in all fit (counted as :attr:`Version.size` counts them)."""
        self._check(groups * ENTRY_OVERHEAD + chars)

    def reset(self, through: int, newest: Iterable[tuple[str, Version]]) -> None:
        """Fill it with the table's newest version per group among batches up to ``through``.

        Raises :class:`OverBudget` (leaving it empty) if they do not fit."""
        self.invalidate()
        self._add(newest)
        self.through = through

    def add(self, batch_id: int, written: Iterable[tuple[str, Version]]) -> None:
        """The versions batch ``batch_id`` wrote (each group's newest from now on).

        Raises :class:`OverBudget` (leaving it empty) if they do not fit."""
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

    def states(self, groups: Iterable[str]) -> list[tuple[str, str | None, int | None]]:
        """(group, state, last event ms) of those ``groups`` that have live state."""
        out = []
        for group in groups:
            version = self._newest.get(group)
            if version is not None and not version.deleted:
                out.append((group, version.state, version.last_event_ms))
        return out

    # -- internals ---------------------------------------------------------------------------
    def _add(self, versions: Iterable[tuple[str, Version]]) -> None:
        for group, version in versions:
            self._drop(group)
            self._newest[group] = version
            self._bytes += version.size
            if version.pending_until_ms is not None and not version.deleted:
                self._pending.add(group)
        try:
            self._check(self._bytes)
        except OverBudget:
            self.invalidate()
            raise

    def _check(self, needed: int) -> None:
        if needed > self.budget_bytes:
            raise OverBudget(
                f"the groups' newest state takes {needed / 1e6:.0f} MB, "
                f"over the cache's {self.budget_bytes / 1e6:.0f} MB"
            )

    def _drop(self, group: str) -> None:
        old = self._newest.pop(group, None)
        if old is not None:
            self._bytes -= old.size
            self._pending.discard(group)
