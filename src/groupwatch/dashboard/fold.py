"""A reduction of a history table kept file by file, so that what the fleet page needs of a
month of history costs what the newest files add, not the month.

``group_snapshots`` and ``member_assignments`` gain rows with every batch and keep them
``upkeep.history_retention_days``; the fleet page needs a few of them (each group's newest
snapshot, say).  A :class:`Fold` keeps, for each data file of the table's current version, the
rows of that file a ``reduce`` keeps, and the reduction of all of them.  A Delta version adds
and removes whole files and never changes one, so a new version costs reading the files it
added; compaction and the retention's deletes, which remove files, cost combining the kept
per-file reductions again (no file is read twice).

``reduce`` must keep, of the union of two frames, what it keeps of the union of what it kept of
each (``reduce(a + b) == reduce(reduce(a) + reduce(b))``): newest-per-key and filters on a
row's own values do; :mod:`groupwatch.dashboard.views.fleet_table` says why its reductions
leave the fleet page unchanged, and the tests hold them to it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pandas as pd  # type: ignore[import-untyped]

from groupwatch.delta.read import WHOLE, DeltaStore, FileRead

Reduce = Callable[[pd.DataFrame], pd.DataFrame]


class Fold:
    """``reduce`` of ``table``, kept per data file and combined once per table version."""

    def __init__(
        self,
        store: DeltaStore,
        table: str,
        reduce: Reduce,
        how: FileRead = WHOLE,
    ) -> None:
        self.store = store
        self.table = table
        self.reduce = reduce
        #: What of each file is read at all (``reduce`` must not need more): a reduction that
        #: keeps few rows of a file is mostly the cost of turning the file into pandas.
        self.how = how
        self._version: int | None = None
        self._frame: pd.DataFrame | None = None
        self._files: dict[str, pd.DataFrame] = {}
        self._lock = threading.Lock()
        #: Files read, over the fold's life (what a test and a benchmark look at).
        self.files_read = 0

    def frame(self) -> pd.DataFrame:
        """The reduction of the table at its newest version."""
        newest = self.store.version(self.table)
        with self._lock:
            if newest is None:
                self._forget()
                return self.reduce(self.store.empty(self.table))
            if self._frame is not None and newest == self._version:
                return self._frame
            listing = self.store.files(self.table)
            if listing is None:
                # Files that cannot be read one by one: the whole table, reduced.
                self._forget()
                return self.reduce(self.store.read(self.table))
            version, files = listing
            now = {f.path: f for f in files}
            gone = [p for p in self._files if p not in now]
            added = [f for p, f in now.items() if p not in self._files]
            for path in gone:
                del self._files[path]
            fresh = []
            for data_file in added:
                part = self.reduce(self.store.read_file(self.table, data_file, self.how))
                self._files[data_file.path] = part
                fresh.append(part)
                self.files_read += 1
            if self._frame is None or gone:
                pieces = list(self._files.values())
            else:
                pieces = [self._frame, *fresh]
            self._frame = self.reduce(_concat(pieces, self.store.empty(self.table)))
            self._version = version
            return self._frame

    def _forget(self) -> None:
        self._files.clear()
        self._frame = None
        self._version = None


def _concat(pieces: list[pd.DataFrame], empty: pd.DataFrame) -> pd.DataFrame:
    pieces = [p for p in pieces if not p.empty]
    if not pieces:
        return empty
    if len(pieces) == 1:
        return pieces[0]
    return pd.concat(pieces, ignore_index=True)
