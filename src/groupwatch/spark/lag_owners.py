"""Who owns each committed partition now, for a lag poll's rows and findings: the open
intervals of ``partition_ownership``, each owner's newest host from ``member_assignments``;
read poll after poll by one reader that remembers what it read (:class:`OwnerReader`: both
tables grow with uptime).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupwatch import tables
from groupwatch.config import Config
from groupwatch.detect.lag.fleet import OWNER_SCHEMA
from groupwatch.detect.lag.model import Owner
from groupwatch.detect.lag.poll import TP
from groupwatch.spark import lag_store

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]


def read_owners(config: Config) -> dict[str, dict[TP, Owner]]:
    """group -> partition -> owner now (one reading, as a first poll makes it)."""
    return OwnerReader(config).read()


class OwnerReader:
    """group -> partition -> owner now, read poll after poll: ``partition_ownership``'s open
    intervals, each owner's newest host from ``member_assignments``.

    Both tables grow with uptime: ``partition_ownership`` keeps the closed intervals for
    ``upkeep.ownership_retention_days``, ``member_assignments`` a row per member per snapshot
    for ``upkeep.history_retention_days``.  Read whole at every poll they cost a poll more each
    day the job runs (a month of a busy cluster's snapshots is hundreds of millions of member
    rows).  So only the open intervals' partition is read (the closed ones are partitioned by
    the day they closed), and each file of ``member_assignments`` is read
    once: appends and compaction write new files, so a file already read holds nothing new (a
    compacted file's rows are read again, harmlessly).  The hosts are kept for the members that
    own a partition now, and for one poll more for the members of the files just read: a
    member that comes to own a partition does so by a snapshot (classic) or an assignment
    record (KIP-848), which writes its row anew, but a batch may commit that row before the
    interval it opens (the tables are committed one after the other while a poll reads).
    """

    def __init__(self, config: Config) -> None:
        self.config = config
        #: The current owners' newest generation and host: ``group``, ``member``,
        #: ``generation`` (-1 where unknown), ``host``; kept as columns (a fleet has hundreds
        #: of thousands of members, looked up for a million partitions at every poll).
        self._hosts: pa.Table | None = None
        #: The ``member_assignments`` files already read.
        self.seen: set[str] = set()
        #: Rows of ``member_assignments`` the last reading read (0: no new file).
        self.rows_read = 0

    @property
    def hosts(self) -> dict[tuple[str, str], tuple[int, str | None]]:
        """(group, member) -> (newest generation, host) of the members kept (inspection)."""
        if self._hosts is None:
            return {}
        return {
            (g, m): (gen, h)
            for g, m, gen, h in zip(
                *(self._hosts.column(c).to_pylist() for c in _HOST_COLUMNS), strict=True
            )
        }

    def read(self) -> dict[str, dict[TP, Owner]]:
        """:meth:`read_table` as group -> partition -> owner."""
        data = self.read_table()
        out: dict[str, dict[TP, Owner]] = {}
        owners: dict[tuple[str, str, str | None, str | None, int | None], Owner] = {}
        for group, topic, partition, member, client, host, since in zip(
            *(data.column(c).to_pylist() for c in data.column_names), strict=True
        ):
            who = (group, member, client, host, since)
            owner = owners.get(who)
            if owner is None:
                owner = owners[who] = Owner(member, client, host, since)
            out.setdefault(group, {})[(topic, partition)] = owner
        return out

    def read_table(self) -> pa.Table:
        """The owners now as the columns the keeper judges
        (:data:`~groupwatch.detect.lag.fleet.OWNER_SCHEMA`), in the table's order (a
        partition with two open intervals takes its last, as a dictionary built row by row
        does).  Columns throughout: a member's host is found by its key's position among the
        hosts kept (``index_in``), not by a join, which would reorder the rows."""
        import pyarrow as pa
        import pyarrow.compute as pc  # type: ignore[import-untyped]

        hosts, fresh = self._read_members()
        data = lag_store.read_columns(
            self.config,
            tables.PARTITION_OWNERSHIP,
            ["group", "topic", "partition", "member_id", "client_id", "from_generation"],
            pc.field("to_date").is_null() & pc.field("to_generation").is_null(),
        )
        if data is None or data.num_rows == 0:
            self._hosts = None if hosts is None else hosts.filter(pc.is_in(_who(hosts), fresh))
            return OWNER_SCHEMA.empty_table()
        data = pa.table(
            {
                "group": pc.cast(data["group"], pa.string()),
                "topic": pc.cast(data["topic"], pa.string()),
                "partition": pc.cast(data["partition"], pa.int32()),
                "member": pc.cast(data["member_id"], pa.string()),
                "client": pc.cast(data["client_id"], pa.string()),
                "generation": pc.cast(data["from_generation"], pa.int64()),
            }
        )
        if hosts is None:
            self._hosts = None
            host = pa.nulls(data.num_rows, pa.string())
        else:
            who = _who(data)
            # Kept: the hosts of the members that own a partition now or were just read.
            keep = pc.or_(pc.is_in(_who(hosts), pc.unique(who)), pc.is_in(_who(hosts), fresh))
            self._hosts = hosts = hosts.filter(keep)
            host = pc.take(hosts.column("host"), pc.index_in(who, _who(hosts)))
        return pa.table(
            {
                "group": data["group"],
                "topic": data["topic"],
                "partition": data["partition"],
                "member": data["member"],
                "client": data["client"],
                "host": host,
                "generation": data["generation"],
            },
            schema=OWNER_SCHEMA,
        )

    def _read_members(self) -> tuple[pa.Table | None, pa.Array]:
        """The hosts known, with the rows of the files not read before (per member the row
        of the newest generation, the later of equal ones); and the keys (:func:`_who`) of
        those rows."""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.dataset as ds  # type: ignore[import-untyped]
        from deltalake.exceptions import TableNotFoundError

        self.rows_read = 0
        hosts = self._hosts
        none = pa.array([], pa.string())
        try:
            dataset = lag_store.open_table(
                self.config, tables.MEMBER_ASSIGNMENTS
            ).to_pyarrow_dataset()
        except (TableNotFoundError, FileNotFoundError):
            return hosts, none
        fragments = list(dataset.get_fragments())
        fresh = [f for f in fragments if f.path not in self.seen]
        self.seen = {f.path for f in fragments}
        if not fresh:
            return hosts, none
        members = ds.FileSystemDataset(
            fresh, schema=dataset.schema, format=dataset.format, filesystem=dataset.filesystem
        ).to_table(columns=["group", "member_id", "generation", "client_host"])
        self.rows_read = members.num_rows
        if members.num_rows == 0:
            return hosts, none
        read = pa.table(
            {
                "group": pc.cast(members["group"], pa.string()),
                "member": pc.cast(members["member_id"], pa.string()),
                "generation": pc.fill_null(pc.cast(members["generation"], pa.int64()), -1),
                "host": pc.cast(members["client_host"], pa.string()),
            }
        )
        both = read if hosts is None else pa.concat_tables([hosts, read])
        # The row kept per member: the newest generation, and of equal ones the later row
        # (the kept one counts as read first), as a dictionary updated row by row would keep.
        order = pa.array(range(both.num_rows), pa.int64())
        rank = pc.add(pc.shift_left(pc.add(both["generation"], 1), 32), order)
        newest = (
            both.append_column("_rank", rank)
            .group_by(["group", "member"])
            .aggregate([("_rank", "max")])
        )
        rows = pc.bit_wise_and(newest["_rank_max"], 0xFFFFFFFF)
        return both.take(rows).select(list(_HOST_COLUMNS)), pc.unique(_who(read))


_HOST_COLUMNS = ("group", "member", "generation", "host")


def _who(table: pa.Table) -> pa.Array:
    """Each row's (group, member) as one string, the key the hosts are looked up by."""
    import pyarrow as pa
    import pyarrow.compute as pc

    joined = pc.binary_join_element_wise(table["group"], table["member"], "\x00")
    return joined.combine_chunks() if isinstance(joined, pa.ChunkedArray) else joined
