"""Reads the Delta tables with delta-rs into pandas, once per table version.

The dashboard and the notifier both read the tables the job writes; this module sits below
both (it imports neither), so the dashboard may use the notifier and never the other way round.

Table names come only from ``groupwatch.tables.TABLES``;
nothing a user types reaches a path.
A table that does not exist yet reads as an empty frame with the declared columns, so every
page renders on a fresh install (before the job has written anything); a column declared after
a table was written reads as null.  The Arrow types come from the same catalogue's Spark DDL,
so delta-rs readers and writers agree with the tables Spark writes (timestamps are microseconds
in UTC, as Delta stores them).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pandas as pd  # type: ignore[import-untyped]
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.fs as pafs  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from groupwatch import clustering, locations, storage
from groupwatch.config import ConfigError, StorageConfig
from groupwatch.tables import TABLES, Column, group_bucket

log = logging.getLogger(__name__)

_SCALARS: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "boolean": pa.bool_(),
    "double": pa.float64(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "date": pa.date32(),
    "binary": pa.binary(),
}


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside ``<...>``."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def arrow_type(ddl: str) -> pa.DataType:
    """The Arrow type of one Spark DDL type, e.g. ``array<struct<topic: string>>``."""
    ddl = ddl.strip()
    lowered = ddl.lower()
    if lowered in _SCALARS:
        return _SCALARS[lowered]
    if lowered.startswith("array<") and ddl.endswith(">"):
        return pa.list_(arrow_type(ddl[6:-1]))
    if lowered.startswith("struct<") and ddl.endswith(">"):
        fields = []
        for part in _split_top(ddl[7:-1]):
            name, _, inner = part.partition(":")
            fields.append(pa.field(name.strip().strip("`"), arrow_type(inner)))
        return pa.struct(fields)
    raise ValueError(f"unsupported Spark DDL type {ddl!r}")


def columns(table: str) -> tuple[Column, ...]:
    """A table's columns, from the catalogue (``groupwatch.tables``)."""
    if table in TABLES:
        return TABLES[table].columns
    raise KeyError(f"unknown table {table!r}")


def schema(table: str) -> pa.Schema:
    """The Arrow schema of one table declared in ``groupwatch.tables`` (or a lag table)."""
    return pa.schema([pa.field(c.name, arrow_type(c.ddl)) for c in columns(table)])


@dataclass(frozen=True, slots=True)
class DataFile:
    """One data file of a table's current version: its path under the table and the values
    of the table's partition columns for it, from the file's add action in the log (typed by
    the log's schema, which the job keeps the catalogue's).  Every partition column is here,
    ``None`` for a null value."""

    path: str
    partition: tuple[tuple[str, object], ...]


def _frame(table: str, arrow: pa.Table) -> pd.DataFrame:
    """An Arrow read of ``table`` as the pages use it: every declared column (a column declared
    after the rows were written reads as null), timestamps in UTC."""
    frame: pd.DataFrame = arrow.to_pandas()
    for col in columns(table):
        # Tables written before a column was declared (the modern-group columns, say) lack
        # it: it reads as null, which every page takes as "classic" / "not known".
        if col.name not in frame:
            frame[col.name] = None
        if col.ddl == "timestamp" and col.name in frame:
            frame[col.name] = pd.to_datetime(frame[col.name], utc=True)
    return frame


def _as_declared(arrow: pa.Table, declared: pa.Schema) -> pa.Table:
    """A file's columns in the declared types: another writer's physical types (Spark's INT96
    timestamps; delta-rs's ``string_view``, which pyarrow's comparisons do not take)."""
    for i, name in enumerate(arrow.column_names):
        if name in declared.names and arrow.schema.field(i).type != declared.field(name).type:
            try:
                arrow = arrow.set_column(i, name, arrow.column(i).cast(declared.field(name).type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass  # read as written: the frame's post-processing copes
    return arrow


def _with_partition(
    arrow: pa.Table,
    data_file: DataFile,
    declared: pa.Schema,
    names: tuple[str, ...] | None = None,
) -> pa.Table:
    """A file's rows with its partition values as columns (those of ``names``, if given): the
    values live in the log (:func:`_stored` never reads them from the file)."""
    for name, value in data_file.partition:
        if name in declared.names and (names is None or name in names):
            column = pa.array([value] * arrow.num_rows, declared.field(name).type)
            at = arrow.schema.get_field_index(name)
            arrow = (
                arrow.append_column(name, column) if at < 0 else arrow.set_column(at, name, column)
            )
    return arrow


def _open(path: Path | str, *, pre_buffer: bool = False, fs: Any = None) -> pq.ParquetFile:
    """A data file opened as the file it is.  Not ``pq.read_table(path)``: that reads a path
    as a dataset and adds a column for every ``name=value`` directory above the file (as
    dictionary-encoded strings), which clashes with the typed partition column a file Spark
    wrote carries inside (``snapshot_date`` as a date): Delta says a file's partition values
    are its add action's, whatever the directories are called.  ``fs``: the object store's
    file system the path is on (``None``: this machine's)."""
    if fs is not None:
        return pq.ParquetFile(fs.open_input_file(str(path)), pre_buffer=pre_buffer)
    return pq.ParquetFile(path, pre_buffer=pre_buffer)


def _stored(source: pq.ParquetFile, data_file: DataFile) -> list[str]:
    """The columns of a data file its rows are read from: those inside it but the table's
    partition columns, whose values are the add action's (:func:`_with_partition`).  Spark
    writes a partition column into the file as well, delta-rs (the driver's writes, upkeep's
    compaction and clustering) does not; either way the log's value is the one read (the two
    agree, as Delta requires)."""
    partition = {name for name, _ in data_file.partition}
    return [n for n in source.schema_arrow.names if n not in partition]


def _holding(rows: Any, column: str, values: pa.Array) -> Any:
    """The rows (a table or a batch) whose string ``column`` is one of ``values``, compared
    as plain strings: delta-rs writes them as ``string_view``, which ``is_in`` does not take."""
    found = rows.column(rows.schema.get_field_index(column))
    if found.type != pa.string():
        found = found.cast(pa.string())
    return rows.filter(pc.is_in(found, value_set=values))


#: Rows :meth:`DeltaStore.read_rows` keeps of the files it read (a month of a 2,000-member
#: group's member rows is about 240,000).
ROWS_KEPT = 1_000_000
#: Files :meth:`DeltaStore.read_rows` reads at a time (one pool for the process's stores).
READERS = 4
_readers: ThreadPoolExecutor | None = None
_readers_lock = threading.Lock()


def _reader_pool() -> ThreadPoolExecutor:
    global _readers
    with _readers_lock:
        if _readers is None:
            _readers = ThreadPoolExecutor(READERS, thread_name_prefix="deltaread")
        return _readers


@dataclass(frozen=True)
class FileRead:
    """What :meth:`DeltaStore.read_file` reads of a data file, before anything becomes pandas:
    only ``columns`` (``None``: all); only the rows for which ``where`` holds (it reads
    ``where_columns``); and with ``shape``, what it makes of the file's Arrow table instead of
    the rows (a reduction cheaper in Arrow than in pandas)."""

    columns: tuple[str, ...] | None = None
    where: pc.Expression | None = None
    where_columns: tuple[str, ...] = ()
    shape: Callable[[pa.Table], pa.Table] | None = None


#: A file read whole.
WHOLE = FileRead()


@dataclass
class _Cached:
    version: int
    frame: pd.DataFrame


@dataclass
class _Handle:
    """A table's log as loaded, and the commit file of the version it was loaded to, as it
    was on disk then (:func:`_commit_file`)."""

    table: DeltaTable
    commit: tuple[int, int, int] | None


def _commit_file(table_path: Path, version: int) -> tuple[int, int, int] | None:
    """Which file holds commit ``version`` (inode, size, modification time), ``None`` if none
    does: a table deleted and written again holds another file there, or none yet."""
    try:
        stat = os.stat(table_path / "_delta_log" / f"{version:020}.json")
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


class StorageError(ConfigError):
    """The object store under ``delta.root`` cannot be read as configured (wrong secret,
    unreachable endpoint, missing bucket): the message names the storage and what failed."""


def _s3_filesystem(config: StorageConfig) -> Any:
    """pyarrow's S3 file system as ``[storage]`` addresses the bucket; credentials from the
    AWS chain (environment, profile, instance role), as delta-rs takes them."""
    endpoint = config.endpoint or None
    scheme = "https"
    if endpoint is not None and "://" in endpoint:
        scheme, _, rest = endpoint.partition("://")
        endpoint = rest.rstrip("/")
    return pafs.S3FileSystem(
        region=config.region or None,
        endpoint_override=endpoint,
        scheme=scheme,
        force_virtual_addressing=not config.path_style,
        connect_timeout=5,
        request_timeout=30,
        retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=2),
    )


#: What pyarrow's and delta-rs's S3 errors say, lower case, and what it means to the user.
_FAILURES = (
    (
        ("access_denied", "accessdenied", "access denied", "signature", "invalidaccesskeyid",
         "forbidden", "403"),
        "access denied (wrong or missing credentials: the AWS chain, AWS_ACCESS_KEY_ID/"
        "AWS_SECRET_ACCESS_KEY)",
    ),
    (("nosuchbucket", "no such bucket", "bucket not found"), "the bucket does not exist"),
    (
        ("curl", "connect", "timed out", "timeout", "resolve", "network", "unreachable"),
        "the endpoint does not answer",
    ),
)  # fmt: skip


def _storage_failure(root: str, exc: BaseException, key: str = "delta.root") -> StorageError:
    """One line naming the storage and what failed, from pyarrow's or delta-rs's words."""
    text = " ".join(str(exc).split())
    lowered = text.lower()
    what = next(
        (meaning for words, meaning in _FAILURES if any(w in lowered for w in words)),
        "cannot be read",
    )
    return StorageError(f"{key}: {root}: {what} ({text[:300]})")


def _check_bucket(fs: Any, base: str, location: str, key: str = "delta.root") -> None:
    bucket = base.split("/", 1)[0]
    try:
        if fs.get_file_info(bucket).type == pafs.FileType.NotFound:
            raise StorageError(f"{key}: {location}: bucket {bucket!r} does not exist")
        fs.get_file_info(pafs.FileSelector(base, allow_not_found=True))
    except OSError as exc:
        raise _storage_failure(location, exc, key) from None


def check_location(location: str, storage_config: StorageConfig, key: str) -> None:
    """Whether the object store under ``location`` (``key``: the setting naming it) answers
    with the AWS chain's credentials and holds its bucket (a local path passes): the job
    asks before it starts Spark, so a wrong secret writes nothing anywhere."""
    if not storage.is_s3(location):
        return
    base = storage.for_delta_rs(location).split("://", 1)[1].rstrip("/")
    _check_bucket(_s3_filesystem(storage_config), base, location, key)


class DeltaStore:
    """Read-only access to the tables under one ``delta.root``."""

    def __init__(self, root: str | Path, storage_config: StorageConfig | None = None) -> None:
        # A file:// URI (as the job may be configured on a cluster) reads as its local path;
        # an s3a:// or s3:// one through pyarrow's and delta-rs's S3 clients, as [storage] says.
        text = str(root)
        local = locations.local_path(text)
        self.location = text
        self._fs: Any = None
        self._options: dict[str, str] = {}
        if local is None:
            if not storage.is_s3(text):
                raise ConfigError(
                    f"delta.root: {root}: the dashboard, the notifier and groupwatch lag read "
                    "a path, a file:// URI or an S3 location (s3a://, s3://)"
                )
            settings = storage_config or StorageConfig()
            self._fs = _s3_filesystem(settings)
            self._options = storage.delta_rs_options(settings, text)
            # "bucket/prefix", as pyarrow's S3 file system names objects.
            self._base = storage.for_delta_rs(text).split("://", 1)[1].rstrip("/")
            self._check()
            local = Path(self._base)
        self.root = local
        self._cache: dict[str, _Cached] = {}
        self._lock = threading.Lock()
        # read_rows's rows per (table, file, column, values, columns): files never change.
        self._file_rows: OrderedDict[Hashable, pa.Table] = OrderedDict()
        self._rows_kept = 0
        # Each table's log as last loaded, brought up to date by the commits since (_loaded).
        self._handles: dict[str, _Handle] = {}
        self._handle_locks: dict[str, threading.Lock] = {}

    def _check(self) -> None:
        """The bucket answers with these credentials: a wrong secret, an unreachable endpoint
        or a missing bucket is one error at start-up, not a warning on every page."""
        _check_bucket(self._fs, self._base, self.location)

    @property
    def remote(self) -> bool:
        """Whether the tables are on an object store (read through its client)."""
        return self._fs is not None

    def path(self, table: str) -> Path:
        columns(table)  # an unknown name raises KeyError: nothing a user types reaches a path
        return self.root / table

    def uri(self, table: str) -> str:
        """The table's location as delta-rs opens it."""
        path = self.path(table)
        return f"s3://{path.as_posix()}" if self.remote else str(path)

    def open_table(self, table: str) -> DeltaTable:
        """The table's log loaded by delta-rs, with the store's options."""
        return DeltaTable(self.uri(table), storage_options=self._options or None)

    def _log_names(self, table: str) -> list[str] | None:
        """The file names in the table's ``_delta_log``; ``None`` when there is none."""
        log_dir = self.path(table) / "_delta_log"
        if not self.remote:
            try:
                return os.listdir(log_dir)
            except OSError:
                return None
        try:
            infos = self._fs.get_file_info(
                pafs.FileSelector(log_dir.as_posix(), allow_not_found=True)
            )
        except OSError as exc:
            log.warning("cannot list %s: %s", self.uri(table), exc)
            return None
        return [i.base_name for i in infos] or None

    def _commit_stamp(self, table: str, version: int) -> tuple[int, int, int] | None:
        """:func:`_commit_file` for this store (an object's size and time on S3)."""
        if not self.remote:
            return _commit_file(self.path(table), version)
        target = (self.path(table) / "_delta_log" / f"{version:020}.json").as_posix()
        try:
            info = self._fs.get_file_info(target)
        except OSError:
            return None
        if info.type == pafs.FileType.NotFound:
            return None
        return 0, int(info.size or 0), int(info.mtime_ns or 0)

    def _data_file(self, table: str, relative: str) -> tuple[str, Any]:
        """A data file's path and the file system it is read from (``None``: this machine's)."""
        target = self.path(table) / relative
        return (target.as_posix(), self._fs) if self.remote else (str(target), None)

    def empty(self, table: str) -> pd.DataFrame:
        frame: pd.DataFrame = schema(table).empty_table().to_pandas()
        return frame

    def version(self, table: str) -> int | None:
        """The table's newest Delta version, ``None`` before it exists.

        A directory listing, not a load of the log: every commit is a new
        ``<version>.json`` (written whole by the writer's put-if-absent), so the highest one
        is the newest version, and a refresh that finds it unchanged reads nothing else.
        """
        names = self._log_names(table)
        if names is None:
            return None
        versions = [int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit()]
        return max(versions) if versions else None

    def versions(self, *tables: str) -> tuple[int | None, ...]:
        """The newest version of each of ``tables``: the key of whatever is computed from
        them."""
        return tuple(self.version(t) for t in tables)

    def created(self, table: str) -> pd.Timestamp | None:
        """When the table was created (its metadata's ``createdTime``, kept in every
        checkpoint, whatever log retention removed), ``None`` before it exists or if its
        writer did not say: the first write of the job that writes it."""
        if self.version(table) is None:
            return None
        try:
            with self._handle_lock(table):
                ms = self._loaded(table).metadata().created_time
        except (DeltaError, OSError) as exc:
            log.warning("cannot read %s: %s", self.path(table), exc)
            return None
        return None if ms is None else pd.Timestamp(int(ms), unit="ms", tz="UTC")

    def read(self, table: str) -> pd.DataFrame:
        """The whole table as pandas (nested values as lists and dicts); cached per version."""
        path = self.path(table)
        newest = self.version(table)
        if newest is None:
            return self.empty(table)
        with self._lock:
            hit = self._cache.get(table)
        if hit is not None and hit.version == newest:
            return hit.frame
        try:
            with self._handle_lock(table):
                dt = self._loaded(table)
                version = dt.version()
                if hit is not None and hit.version == version:
                    return hit.frame
                arrow: pa.Table = dt.to_pyarrow_table()
        except (DeltaError, OSError) as exc:
            log.warning("cannot read %s: %s", path, exc)
            return self.empty(table)
        frame = _frame(table, arrow)
        with self._lock:
            self._cache[table] = _Cached(version, frame)
        return frame

    def read_rows(
        self,
        table: str,
        column: str,
        value: str | set[str],
        columns: tuple[str, ...] | None = None,
    ) -> pd.DataFrame:
        """The rows of ``table`` whose ``column`` is ``value`` (one group's; or any of a set),
        only ``columns`` of them (the others read as null): nothing else of the table becomes
        pandas.

        Read file by file (:meth:`files`): of each file only the row groups whose statistics
        can hold a value (a past day that upkeep sorted by group gives one or two), of a table
        partitioned by ``group_bucket`` only the values' buckets.  What a file gave is kept
        (files never change; :data:`ROWS_KEPT` rows at most, the least recently read dropped
        first), so a page read again after the job's next batch reads only the files that
        batch added."""
        listing = self.files(table)
        if listing is None:
            return self._read_rows_scanned(table, column, value, columns)
        _, data_files = listing
        wanted = tuple(sorted(value if isinstance(value, set) else {value}))
        declared = schema(table)
        buckets = (
            {group_bucket(g) for g in wanted}
            if column == "group" and "group_bucket" in declared.names
            else None
        )
        names = None if columns is None else tuple(dict.fromkeys((*columns, column)))
        found: dict[Hashable, pa.Table | None] = {}
        missing: list[tuple[Hashable, DataFile]] = []
        for data_file in data_files:
            partition = dict(data_file.partition)
            if (
                buckets is not None
                and "group_bucket" in partition
                and partition["group_bucket"] not in buckets
            ):
                continue  # another bucket's partition (``lag_history``): not opened
            key = (table, data_file.path, column, wanted, names)
            with self._lock:
                kept = self._file_rows.get(key)
                if kept is not None:
                    self._file_rows.move_to_end(key)
            if kept is None:
                missing.append((key, data_file))
            found[key] = kept
        try:
            # Files read side by side: a file's read is mostly fixed costs per column in
            # Arrow's reader, which runs outside the interpreter's lock.
            read = _reader_pool().map(
                lambda item: self._file_rows_of(table, item[1], column, wanted, names, declared),
                missing,
            )
            for (read_key, _), rows in zip(missing, read, strict=True):
                found[read_key] = rows
                with self._lock:
                    self._file_rows[read_key] = rows
                    self._rows_kept += rows.num_rows
                    while self._rows_kept > ROWS_KEPT and len(self._file_rows) > 1:
                        _, dropped = self._file_rows.popitem(last=False)
                        self._rows_kept -= dropped.num_rows
        except OSError as exc:  # a file VACUUM removed since the listing, say
            log.warning("cannot read %s: %s", self.path(table), exc)
            return self.empty(table)
        parts = [rows for rows in found.values() if rows is not None and rows.num_rows]
        if not parts:
            empty = declared if names is None else pa.schema([declared.field(n) for n in names])
            return _frame(table, empty.empty_table())
        return _frame(table, pa.concat_tables(parts, promote_options="permissive"))

    def _file_rows_of(
        self,
        table: str,
        data_file: DataFile,
        column: str,
        wanted: tuple[str, ...],
        names: tuple[str, ...] | None,
        declared: pa.Schema,
    ) -> pa.Table:
        """One file's rows whose ``column`` is one of ``wanted``, in the declared types and
        column order, partition values filled in."""
        where, fs = self._data_file(table, data_file.path)
        with _open(where, fs=fs) as source:
            stored = _stored(source, data_file)
            at = clustering.row_groups(
                clustering.row_group_bounds(source.metadata, column),
                [w.encode() for w in wanted],
            )
            if not at or column not in stored:
                return pa.table({})  # no row of this file can hold the values
            read = stored if names is None else [n for n in names if n in stored]
            arrow = _as_declared(source.read_row_groups(at, columns=read), declared)
        # The rows first, then the partition values for those alone (a row group of a past day
        # holds thousands of other groups' rows).
        arrow = _holding(arrow, column, pa.array(wanted, pa.string()))
        arrow = _with_partition(arrow, data_file, declared, names)
        present = set(arrow.column_names)
        return arrow.select([n for n in declared.names if n in present])

    def _read_rows_scanned(
        self,
        table: str,
        column: str,
        value: str | set[str],
        columns: tuple[str, ...] | None = None,
    ) -> pd.DataFrame:
        """:meth:`read_rows` over delta-rs's dataset, for a table whose files cannot be read
        one by one (:meth:`files`)."""
        path = self.path(table)
        if self.version(table) is None:
            return self.empty(table)
        values = pa.array(sorted(value if isinstance(value, set) else {value}), pa.string())
        try:
            delta = self.open_table(table)
            parts = None
            if column == "group" and "group_bucket" in delta.metadata().partition_columns:
                # The group's partitions alone (``lag_history``): the others are not opened.
                buckets = sorted({group_bucket(str(g)) for g in values.to_pylist()})
                parts = pc.field("group_bucket").isin(buckets)
            dataset = delta.to_pyarrow_dataset()
            names = None if columns is None else [c for c in columns if c in dataset.schema.names]
            if names is not None and column not in names:
                names.append(column)
            kept = []
            # The rows are filtered as each batch is read, not by the scanner: files delta-rs
            # writes (a MERGE) store strings as ``string_view``, which its filter does not
            # compare; a partition filter on an integer column it does apply.
            for batch in dataset.to_batches(columns=names, filter=parts):
                kept.append(_holding(batch, column, values))
            arrow: pa.Table = pa.Table.from_batches(
                kept,
                schema=dataset.schema
                if names is None
                else pa.schema([dataset.schema.field(n) for n in names]),
            )
        except (DeltaError, OSError) as exc:
            log.warning("cannot read %s: %s", path, exc)
            return self.empty(table)
        return _frame(table, arrow)

    def files(self, table: str) -> tuple[int, list[DataFile]] | None:
        """The table's newest version and its data files, for readers that keep something per
        file (a file never changes: a new version adds and removes whole files).  ``None``
        when the table does not exist or its files cannot be read one by one (deletion
        vectors, which the job's tables do not use, say a file's rows are not all live)."""
        path = self.path(table)
        if self.version(table) is None:
            return None
        try:
            with self._handle_lock(table):
                dt = self._loaded(table)
                if "deletionVectors" in (dt.protocol().writer_features or []):
                    return None
                actions = pa.table(dt.get_add_actions(flatten=True))
                version = dt.version()
        except (DeltaError, OSError) as exc:
            log.warning("cannot list %s: %s", path, exc)
            return None
        parts = [c for c in actions.column_names if c.startswith("partition.")]
        values = {c: actions.column(c).to_pylist() for c in parts}
        out = []
        for i, file_path in enumerate(actions.column("path").to_pylist()):
            if "://" in str(file_path) or os.path.isabs(str(file_path)):
                return None  # a file outside the table (a shallow clone): read it whole
            partition = tuple((c[len("partition.") :], values[c][i]) for c in parts)
            # Paths in the log are URIs relative to the table: partition values are escaped.
            out.append(DataFile(unquote(str(file_path)), partition))
        return version, out

    def _handle_lock(self, table: str) -> threading.Lock:
        """The lock held while ``table``'s kept log is read forward or read from."""
        with self._lock:
            return self._handle_locks.setdefault(table, threading.Lock())

    def _loaded(self, table: str) -> DeltaTable:
        """``table``'s log loaded up to its newest version (the caller holds
        :meth:`_handle_lock`).  The log as loaded before is kept and read forward by the commits
        since: a load from scratch reads the newest checkpoint and every commit after it (about
        40 ms a history table at fleet scale, at every version the job commits), reading
        forward only the new commits (a few ms).  It is loaded from scratch when the commit it
        was loaded to is no longer the file it was (the table deleted and written again; or
        the commit cut from the log after a long idle), or reading forward fails."""
        path = self.path(table)
        kept = self._handles.get(table)
        if kept is not None and kept.commit is not None:
            if self._commit_stamp(table, kept.table.version()) == kept.commit:
                try:
                    kept.table.update_incremental()
                    kept.commit = self._commit_stamp(table, kept.table.version())
                    return kept.table
                except (DeltaError, OSError) as exc:
                    log.info("reloading %s: %s", path, exc)
        dt = self.open_table(table)
        self._handles[table] = _Handle(dt, self._commit_stamp(table, dt.version()))
        return dt

    def read_file(self, table: str, data_file: DataFile, how: FileRead = WHOLE) -> pd.DataFrame:
        """One data file of ``table`` (:meth:`files`) as :meth:`read` would show its rows, read
        as ``how`` says (columns not read read as null).  A file that lacks a column the filter
        reads (written before it was declared) is read whole: the caller's reduction
        decides.  The partition columns are the add action's values whoever wrote the file
        (:func:`_stored`), never the directory's name."""
        declared = schema(table)
        partition = {name for name, _ in data_file.partition if name in declared.names}
        # One footer read for the schema, the filter's columns and the rest; buffered as the
        # dataset reader of ``pq.read_table`` buffers (a file's column chunks read at once).
        target, fs = self._data_file(table, data_file.path)
        with _open(target, pre_buffer=True, fs=fs) as source:
            stored = _stored(source, data_file)
            present = set(stored) | partition
            wanted = stored if how.columns is None else [c for c in how.columns if c in stored]
            where = how.where if all(c in present for c in how.where_columns) else None
            if where is not None:
                # The filter's columns first: a file with no row for it is not read further (a
                # month of a classic fleet's member rows holds none of a modern group's).
                probe = _with_partition(
                    _as_declared(
                        source.read(columns=[c for c in how.where_columns if c in stored]),
                        declared,
                    ),
                    data_file,
                    declared,
                    how.where_columns,
                )
                if probe.filter(where).num_rows == 0:
                    return self._shaped(table, declared.empty_table(), how)
            arrow = _as_declared(source.read(columns=wanted), declared)
        arrow = _with_partition(arrow, data_file, declared, how.columns)
        if where is not None:
            # After the types are the declared ones: files delta-rs writes (a MERGE) store
            # strings as ``string_view``, which pyarrow's comparisons do not take.
            arrow = arrow.filter(where)
        return self._shaped(table, arrow, how)

    @staticmethod
    def _shaped(table: str, arrow: pa.Table, how: FileRead) -> pd.DataFrame:
        if how.shape is not None:
            shaped: pd.DataFrame = how.shape(arrow).to_pandas()
            return shaped
        return _frame(table, arrow)
