"""What the pages compute from the tables, kept per Delta table version.

A page needs aggregates over whole tables (the fleet's row per group, each table's rows by
group); they change only when the job commits a new version of a table they are made from.
:class:`Memo` keeps each one under the versions of its tables (and its arguments), so a request
that finds the same versions reuses it, and a refresh with no new version costs a directory
listing per table.  A few recent entries are kept: the newest versions' and those of pages
users keep open (a group, a generation).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np
import pandas as pd  # type: ignore[import-untyped]

from groupwatch.dashboard.fold import Fold, Reduce
from groupwatch.delta.read import WHOLE, DeltaStore, FileRead

T = TypeVar("T")

#: The tables that keep history (``upkeep.history_retention_days``, ``lag.history_hours``, the
#: ownership intervals' retention): a page reads one group's rows of them, not the table.
SCANNED = frozenset({"group_snapshots", "member_assignments", "partition_ownership", "lag_history"})
#: Entries kept: the fleet's and the group index of each table, plus recent groups' pages.
SIZE = 48


class Memo:
    """Aggregates of the tables in ``store``, computed once per version of their tables."""

    def __init__(self, store: DeltaStore, size: int = SIZE) -> None:
        self.store = store
        self.size = size
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        # One computation per key at a time: a second request waits for the first's result
        # rather than computing it again next to it (two cores, several users).
        self._computing: dict[Hashable, threading.Lock] = {}
        self._folds: dict[tuple[str, str], Fold] = {}

    def fold(
        self,
        name: str,
        table: str,
        reduce: Reduce,
        how: FileRead = WHOLE,
    ) -> pd.DataFrame:
        """``reduce`` of ``table`` at its newest version, kept file by file (:class:`Fold`):
        what a page needs of a long history, paid per file the job adds."""
        with self._lock:
            fold = self._folds.get((name, table))
            if fold is None:
                fold = Fold(self.store, table, reduce, how)
                self._folds[(name, table)] = fold
        return fold.frame()

    def read(self, table: str) -> pd.DataFrame:
        return self.store.read(table)

    def get(
        self, name: str, tables: tuple[str, ...], compute: Callable[[], T], *args: Hashable
    ) -> T:
        """``compute()`` for ``name`` over ``tables`` at their newest versions (and ``args``),
        computed once per versions."""
        key = (name, self.store.versions(*tables), args)
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                value: T = self._entries[key]
                return value
            gate = self._computing.setdefault(key, threading.Lock())
        with gate:
            with self._lock:
                if key in self._entries:
                    self._entries.move_to_end(key)
                    hit: T = self._entries[key]
                    return hit
            value = compute()
            with self._lock:
                self._entries[key] = value
                self._computing.pop(key, None)
                while len(self._entries) > self.size:
                    self._entries.popitem(last=False)
        return value

    def rows(self, table: str, group: str) -> pd.DataFrame:
        """``table``'s rows of one group (in table order).  A history table
        (:data:`SCANNED`) is scanned for the group's rows once per version: reading all of a
        month of it to index it by group would cost every new version the month.  Any other
        table is indexed by group once per version: no scan per request."""
        if table in SCANNED:
            return self.get(
                "group-rows",
                (table,),
                lambda: self.store.read_rows(table, "group", group),
                table,
                group,
            )
        # The frame is kept with its index: a version committed in between never pairs one
        # version's positions with another's rows.
        frame, index = self.get("by-group", (table,), lambda: _by_group(self.read(table)), table)
        at = index.get(group)
        if at is None:
            return frame.iloc[0:0]
        return frame.iloc[at]


def _by_group(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, np.ndarray[Any, Any]]]:
    if frame.empty:
        return frame, {}
    return frame, {str(g): i for g, i in frame.groupby("group", sort=False).indices.items()}
