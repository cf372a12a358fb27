"""Reads the Delta tables with delta-rs into pandas, once per table version.

Table names come only from ``groupwatch.tables.TABLES``; nothing a user types reaches a path.
A table that does not exist yet reads as an empty frame with the declared columns, so every
page renders on a fresh install (before the job has written anything); a column declared after
a table was written reads as null.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

import pandas as pd  # type: ignore[import-untyped]
import pyarrow as pa  # type: ignore[import-untyped]
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from groupwatch import locations
from groupwatch.config import ConfigError
from groupwatch.dashboard.arrow import schema
from groupwatch.tables import TABLES

log = logging.getLogger(__name__)


@dataclass
class _Cached:
    version: int
    frame: pd.DataFrame


class DeltaStore:
    """Read-only access to the tables under one ``delta.root``."""

    def __init__(self, root: str | Path) -> None:
        # A file:// URI (as the job may be configured on a cluster) reads as its local path.
        local = locations.local_path(str(root))
        if local is None:
            raise ConfigError(
                f"delta.root: {root}: the dashboard and the notifier read tables on this "
                "machine only (a path or a file:// URI)"
            )
        self.root = local
        self._cache: dict[str, _Cached] = {}
        self._lock = threading.Lock()

    def path(self, table: str) -> Path:
        if table not in TABLES:
            raise KeyError(f"unknown table {table!r}")
        return self.root / table

    def empty(self, table: str) -> pd.DataFrame:
        frame: pd.DataFrame = schema(table).empty_table().to_pandas()
        return frame

    def read(self, table: str) -> pd.DataFrame:
        """The whole table as pandas (nested values as lists and dicts); cached per version."""
        path = self.path(table)
        if not (path / "_delta_log").is_dir():
            return self.empty(table)
        try:
            dt = DeltaTable(str(path))
            version = dt.version()
            with self._lock:
                hit = self._cache.get(table)
            if hit is not None and hit.version == version:
                return hit.frame
            arrow: pa.Table = dt.to_pyarrow_table()
        except (DeltaError, OSError) as exc:
            log.warning("cannot read %s: %s", path, exc)
            return self.empty(table)
        frame = arrow.to_pandas()
        for col in TABLES[table].columns:
            # Tables written before a column was declared (the modern-group columns, say) lack
            # it: it reads as null, which every page takes as "classic" / "not known".
            if col.name not in frame:
                frame[col.name] = None
            if col.ddl == "timestamp" and col.name in frame:
                frame[col.name] = pd.to_datetime(frame[col.name], utc=True)
        with self._lock:
            self._cache[table] = _Cached(version, frame)
        return frame
