"""A fleet's partitions judged as columns: the same verdicts as :class:`LagKeeper`'s loop,
with Python only for the partitions whose verdict needs more than arithmetic.

At every poll the job judges every committed partition (1.2 million in the cluster model).
Judged one by one in Python that cost about 15 s a poll, plus 8 s to turn the tables into
objects and 2 s to turn the verdicts back into columns (bench/HISTORY.md, "A poll judged as
columns").  Nearly every partition of a fleet is in the same plain case at every poll: its
consumer keeps up or is
idle, or is behind by less than ``lag.warn_seconds``, and nothing alarms and nothing is open.
Here those partitions are judged as arrays (NumPy over the Arrow columns read from the
tables), with the arithmetic of :func:`judge` and
:func:`seconds_behind` done in the same order, so the same floats come out; every other
partition (a wait above ``warn``, whose window may become ``lagging``, a status that alarms,
an open finding, a poll that judges the same answer again) goes through :func:`judge` itself,
with its commit, owner and track rebuilt.

The property test (``tests/unit/lag/test_fleet.py``) holds this keeper to :class:`LagKeeper`,
row for row, finding for finding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from groupwatch.detect.findings import Finding
from groupwatch.detect.lag.judge import LagRules, Track, judge
from groupwatch.detect.lag.model import (
    RANK,
    WORST_FIRST,
    Commit,
    EndOffset,
    Owner,
    PartitionLag,
)
from groupwatch.detect.lag.poll import TP, LagKeeper, PollResult, TopicLag, cut, mark_of

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]

KEYS = ["group", "topic", "partition"]
#: The commits a poll judges (``committed_offsets``, times as epoch milliseconds).
COMMIT_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("commit_ms", pa.int64()),
        ("leader_epoch", pa.int64()),
        ("metadata_size", pa.int64()),
        ("moved_ms", pa.int64()),
    ]
)
#: Each partition's owner now (one row a partition).
OWNER_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("member", pa.string()),
        ("client", pa.string()),
        ("host", pa.string()),
        ("generation", pa.int64()),
    ]
)
_OWNER_COLUMNS = ("member", "client", "host", "generation")
_READ_COLUMNS = ("offset", "commit_ms", "leader_epoch", "metadata_size", "moved_ms")
#: A status's code is its rank (worst first): a topic's status is its partitions' smallest.
_IDLE, _OK = RANK["idle"], RANK["ok"]
_STATUS_NAMES = pa.array(list(WORST_FIRST), pa.string())


def commits_table(commits: Iterable[Commit]) -> pa.Table:
    """Commits as the columns :meth:`FleetKeeper.judge_table` takes (tests, small inputs)."""
    cs = list(commits)
    return pa.table(
        {
            "group": [c.group for c in cs],
            "topic": [c.topic for c in cs],
            "partition": [c.partition for c in cs],
            "offset": [c.offset for c in cs],
            "commit_ms": [c.commit_ms for c in cs],
            "leader_epoch": [c.leader_epoch for c in cs],
            "metadata_size": [c.metadata_size for c in cs],
            "moved_ms": [c.moved_ms for c in cs],
        },
        schema=COMMIT_SCHEMA,
    )


def owners_table(owners: Mapping[str, Mapping[TP, Owner]]) -> pa.Table:
    """group -> partition -> owner as the columns :meth:`FleetKeeper.judge_table` takes."""
    rows = [(g, tp, o) for g, by in owners.items() for tp, o in by.items()]
    return pa.table(
        {
            "group": [g for g, _, _ in rows],
            "topic": [tp[0] for _, tp, _ in rows],
            "partition": [tp[1] for _, tp, _ in rows],
            "member": [o.member for _, _, o in rows],
            "client": [o.client for _, _, o in rows],
            "host": [o.host for _, _, o in rows],
            "generation": [o.generation for _, _, o in rows],
        },
        schema=OWNER_SCHEMA,
    )


def rows_of(table: pa.Table) -> list[PartitionLag]:
    """``FleetKeeper``'s current view as :class:`PartitionLag` values (tests, per-partition
    metrics, the alerting rows)."""
    cols = {name: table.column(name).to_pylist() for name in table.column_names}
    out = []
    for i in range(table.num_rows):
        member = cols["owner_member"][i]
        owner = (
            None
            if member is None
            else Owner(
                member,
                cols["owner_client"][i],
                cols["owner_host"][i],
                cols["owner_generation"][i],
            )
        )
        out.append(
            PartitionLag(
                cols["group"][i],
                cols["topic"][i],
                cols["partition"][i],
                cols["committed_offset"][i],
                cols["commit_time"][i],
                cols["end_offset"][i],
                cols["lag_records"][i],
                cols["lag_seconds"][i],
                cols["lag_seconds_at_least"][i],
                cols["status"][i],
                owner,
                cols["observed_at"][i],
                cols["stale"][i],
                cols["retired"][i],
            )
        )
    return out


def _np(array: Any, fill: int = -1) -> I64:
    """An integer column as int64, nulls as ``fill``."""
    return np.asarray(pc.fill_null(array, fill).to_numpy(zero_copy_only=False), dtype=np.int64)


def _valid(array: Any) -> B:
    return np.asarray(pc.is_valid(array).to_numpy(zero_copy_only=False), dtype=np.bool_)


def _take(values: Any, index: I64) -> Any:
    """``values[index]``, null where ``index`` is -1."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if len(values) == 0:
        return pa.nulls(len(index), values.type)
    # A null index takes a null: one pass, where taking a stand-in and masking it after
    # copied a million strings twice (a third of a poll's judgement at fleet scale).
    return pc.take(values, pa.array(index, pa.int64(), mask=index < 0))


def _same(a: Any, b: Any) -> B:
    """Element-wise equality where two nulls are equal (``==`` of the dataclasses)."""
    eq = pc.fill_null(pc.equal(a, b), False)
    both = pc.and_(pc.is_null(a), pc.is_null(b))
    return np.asarray(pc.or_(eq, both).to_numpy(zero_copy_only=False), dtype=np.bool_)


def _index(left: pa.Table, right: pa.Table, keys: list[str], column: str) -> I64:
    """For each row of ``left`` (its keys), ``right``'s ``column`` (an int) where the keys
    match, -1 elsewhere; in ``left``'s order."""
    n = left.num_rows
    if n == 0 or right.num_rows == 0:
        return np.full(n, -1, dtype=np.int64)
    probe = left.select(keys).append_column("_i", pa.array(np.arange(n, dtype=np.int64)))
    joined = probe.join(right.select([*keys, column]), keys, join_type="inner")
    out = np.full(n, -1, dtype=np.int64)
    out[_np(joined.column("_i"))] = _np(joined.column(column))
    return out


def _last_per_key(owners: pa.Table) -> pa.Table:
    """Each partition's last owner row (``_o``: its index), as a dictionary built row by row
    keeps it (a partition two members claim has two open ownership intervals)."""
    numbered = owners.append_column("_o", pa.array(np.arange(owners.num_rows, dtype=np.int64)))
    last = numbered.group_by(KEYS).aggregate([("_o", "max")])
    return pa.table({**{k: last.column(k) for k in KEYS}, "_o": last.column("_o_max")})


#: A key as one int64: group id << 40 | topic id << 20 | partition, the ids small integers
#: kept from poll to poll (:class:`_KeyCodes`).  Joined as sorted integers a poll's keys cost
#: a tenth of Arrow's hash joins and group-bys of their strings (1.2 M rows: most of a
#: second each, a poll making four).  A fleet beyond the bits is joined by its strings.
_G_BITS, _T_BITS, _P_BITS = 23, 20, 20


class _Ids:
    """A small integer per string, the same from poll to poll."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        #: Distinct strings encoded since the count was last reset (``_KeyCodes.worn``).
        self.seen = 0

    def codes(self, column: Any) -> I64:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        encoded = pc.dictionary_encode(column)
        ids = self.ids
        values = encoded.dictionary.to_pylist()
        self.seen += len(values)
        lut = np.fromiter((ids.setdefault(v, len(ids)) for v in values), np.int64, len(values))
        idx = _np(encoded.indices)
        return np.where(idx < 0, -1, lut[np.where(idx < 0, 0, idx)] if len(lut) else -1)

    def code(self, value: str) -> int:
        return self.ids.setdefault(value, len(self.ids))


class _KeyCodes:
    """(group, topic, partition) and (topic, partition) as int64s (:data:`_G_BITS`)."""

    def __init__(self) -> None:
        self.groups = _Ids()
        self.topics = _Ids()

    def worn(self) -> bool:
        """Whether the ids kept are far more than the strings a poll encoded (groups and
        topics that are gone): then they are made anew, and the last poll's keys with them.
        Counts from here on."""
        kept = len(self.groups.ids) + len(self.topics.ids)
        worn = kept > 4 * (self.groups.seen + self.topics.seen) + 4096
        self.groups.seen = self.topics.seen = 0
        return worn

    def reset(self) -> None:
        self.groups, self.topics = _Ids(), _Ids()

    def encode(self, table: pa.Table) -> tuple[I64, I64] | None:
        """Each row's (group, topic, partition) and (topic, partition) key; None where a
        value does not fit its bits (or is null)."""
        g = self.groups.codes(table.column("group"))
        t = self.topics.codes(table.column("topic"))
        part = _np(table.column("partition"))
        if len(part) and (
            g.min() < 0
            or t.min() < 0
            or part.min() < 0
            or g.max() >> _G_BITS
            or t.max() >> _T_BITS
            or part.max() >> _P_BITS
        ):
            return None
        return (g << (_T_BITS + _P_BITS)) | (t << _P_BITS) | part, (t << 32) | part


def _lookup(probe: I64, keys: I64) -> I64:
    """For each of ``probe``, the index of the last of ``keys`` equal to it (as
    :func:`_last_per_key` keeps a key's last row), -1 where none is."""
    if len(keys) == 0 or len(probe) == 0:
        return np.full(len(probe), -1, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    last = np.ones(len(ordered), dtype=np.bool_)
    last[:-1] = ordered[1:] != ordered[:-1]
    unique, at = ordered[last], order[last]
    pos = np.minimum(np.searchsorted(unique, probe), len(unique) - 1)
    return np.where(unique[pos] == probe, at[pos], -1).astype(np.int64)


def _owner_marks(members: Any, generations: Any, known: dict[str, int] | None = None) -> I64:
    """``poll._owner_mark`` for each row (its text made as there), computed once per distinct
    owner; -1 for none.  ``known``: marks already computed, by text (updated): a fleet's
    owners are nearly all the same from one poll to the next."""
    text = pc.binary_join_element_wise(
        members, pc.fill_null(pc.cast(generations, pa.string()), "None"), "\x00"
    )
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    encoded = pc.dictionary_encode(text)
    known = {} if known is None else known
    texts = encoded.dictionary.to_pylist()
    for s in texts:
        if s not in known:
            known[s] = mark_of(s)
    marks = np.array([known[s] for s in texts], dtype=np.int64)
    if len(known) > 2 * len(texts) + 1024:
        # Owners come and go: the marks of those gone are dropped now and then.
        kept = dict(zip(texts, marks.tolist(), strict=True))
        known.clear()
        known.update(kept)
    idx = _np(encoded.indices)
    return np.where(idx < 0, -1, marks[np.where(idx < 0, 0, idx)] if len(marks) else -1)


def _first(pair: tuple[I64, I64] | None) -> I64 | None:
    return None if pair is None else pair[0]


def _same_owner_keys(joins: _Joins, owner_keys: pa.Table, owner_key64: I64 | None) -> bool:
    """Whether the owners' keys are the last poll's, row for row."""
    if owner_key64 is not None and joins.owner_key64 is not None:
        return bool(np.array_equal(joins.owner_key64, owner_key64))
    return _equal(joins.owner_keys, owner_keys)


def _history_index(commits: pa.Table, h_keys: list[TP], tp64: I64 | None, topics: _Ids) -> I64:
    """Each commit's partition's place in ``h_keys`` (the keeper's history), -1 for none."""
    if tp64 is not None:
        code = topics.code
        hk = np.fromiter(((code(t) << 32) | p for t, p in h_keys), np.int64, len(h_keys))
        return _lookup(tp64, hk)
    h_table = pa.table(
        {
            "topic": pa.array([tp[0] for tp in h_keys], pa.string()),
            "partition": pa.array([tp[1] for tp in h_keys], pa.int32()),
            "k": pa.array(np.arange(len(h_keys), dtype=np.int64)),
        }
    )
    return _index(commits, h_table, ["topic", "partition"], "k")


def _key_list(commits: pa.Table) -> list[tuple[str, str, int]]:
    """Each row's (group, topic, partition), for the rows judged one by one."""
    return list(zip(*(commits.column(k).to_pylist() for k in KEYS), strict=True))


def _equal(a: pa.Table, b: pa.Table) -> bool:
    return bool(a.num_rows == b.num_rows and a.equals(b))


@dataclass(frozen=True, slots=True)
class _Joins:
    """The last poll's joins and what they were made of."""

    owner_keys: pa.Table
    owner_key64: I64 | None
    oi: I64
    whose: pa.Table
    marks: I64
    h_keys: list[TP]
    k: I64


@dataclass
class _State:
    """Every judged partition's memory, as columns in the order of the last poll's commits."""

    keys: pa.Table  # group, topic, partition, j
    #: The keys as int64s (:class:`_KeyCodes`), None where they did not fit.
    key64: I64 | None
    read: pa.Table  # the commit as read: _READ_COLUMNS
    owner: pa.Table  # the owner as read: _OWNER_COLUMNS
    offset: I64
    moved: I64
    rewound_from: I64  # -1: none
    rewound_ms: I64
    mark: I64  # -1: none (the generation the advanced commit carries)
    #: A track of low judgements only (no open finding): up to two (at, seconds) points.
    t_n: I64
    t_at1: I64
    t_pt1: F64
    t_at2: I64
    t_pt2: F64
    #: Any other track, by row (its (group, topic, partition) is the row's).
    tracks: dict[tuple[str, str, int], Track]


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A poll's commits and owners, joined and advanced (:meth:`FleetKeeper.prepare`)."""

    commits: pa.Table
    state: _State | None
    same_keys: bool
    o: I64
    c: I64
    has_owner: B
    owner_cols: dict[str, Any]
    j: I64
    prev: B
    p_tn: I64
    p_at1: I64
    p_at2: I64
    p_pt1: F64
    p_pt2: F64
    moved: I64
    rwf: I64
    rwms: I64
    gen: I64
    owner_keys: pa.Table
    owner_key64: I64 | None
    oi: I64
    whose: pa.Table
    owner_marks: I64
    #: The commits' (group, topic, partition) and (topic, partition) as int64s, or None.
    key64: I64 | None
    tp64: I64 | None


class FleetKeeper(LagKeeper):
    """:class:`LagKeeper` (compact, its history trimmed) judging a whole poll as columns:
    :meth:`judge_table`, not :meth:`LagKeeper.judge` (the two keep different memories)."""

    def __init__(self, rules: LagRules, *, trim: bool = True, row_ms: int = 0) -> None:
        super().__init__(rules, compact=True, trim=trim, row_ms=row_ms)
        self._state: _State | None = None
        self._joins: _Joins | None = None
        self._prepared: _Prepared | None = None
        self._codes = _KeyCodes()
        #: Owners' marks by their text (``_owner_marks``).
        self._marks: dict[str, int] = {}
        #: Partitions judged by :func:`judge` itself at the last poll (tests, benchmarks).
        self.judged_one_by_one = 0

    @property
    def tracks(self) -> dict[tuple[str, str, int], Track]:
        """Each partition's judgement memory, as :attr:`LagKeeper.tracks` gives it (for tests
        and inspection: the columns made into values)."""
        state = self._state
        if state is None:
            return {}
        out: dict[tuple[str, str, int], Track] = {}
        for i, key in enumerate(_key_list(state.keys)):
            track = state.tracks.get(key)
            if track is None:
                n = int(state.t_n[i])
                at1, pt1, at2, pt2 = state.t_at1[i], state.t_pt1[i], state.t_at2[i], state.t_pt2[i]
                track = Track(_points(n, at1, pt1, at2, pt2))
            out[key] = track
        return out

    def judge_table(
        self,
        commits: pa.Table,
        owners: pa.Table,
        *,
        stale: bool = False,
        known_ms: int | None = None,
    ) -> PollResult:
        """:meth:`LagKeeper.judge` of ``commits`` (:data:`COMMIT_SCHEMA`) and ``owners``
        (:data:`OWNER_SCHEMA`, one row a partition): the rows as ``table`` (``partition_lag``'s
        columns, times as epoch milliseconds), ``rows`` only those that alert."""
        self.prepare(commits, owners)
        return self.judge_prepared(stale=stale, known_ms=known_ms)

    def prepare(self, commits: pa.Table, owners: pa.Table) -> None:
        """The part of :meth:`judge_table` that does not need the brokers' answer: the owners
        joined to the commits, the commits advanced against the last poll's memory.  A poll
        does it before it asks, so that what follows the answer (and ages it) is only the
        verdict: at a fleet's scale the owners' side is most of a judgement (their strings
        taken for a million partitions, compared with the last poll's)."""
        self._prepared = self._prepare(commits, owners)

    def unbracketed(self, ends: Sequence[EndOffset]) -> dict[TP, list[int]]:
        """The committed offsets of the prepared commits whose oldest waiting record no
        observation brackets (the history, with ``ends``, starts past them), where that record's
        time can decide a verdict: the commit or its last move is ``stop`` old or older at the
        answer (younger, neither ``stopped`` nor ``stalled`` can be, and ``lagging`` needs a
        window of polls).  Each offset once: the record's time, once learnt, is history."""
        prepared = self._prepared
        if prepared is None or not ends:
            return {}
        answer = {(e.topic, e.partition): e for e in ends}
        observed = max(e.observed_ms for e in ends)
        for tp in [tp for tp in self.asked if tp not in self.history]:
            del self.asked[tp]  # its history went: asked afresh if it matters again
        commits = prepared.commits
        since = np.minimum(prepared.moved, prepared.c)
        rows = np.flatnonzero(observed - since >= self.rules.stop_ms)
        if len(rows) == 0:
            return {}
        topics = commits.column("topic").take(pa.array(rows)).to_pylist()
        partitions = commits.column("partition").take(pa.array(rows)).to_pylist()
        out: dict[TP, set[int]] = {}
        for topic, partition, offset in zip(
            topics, partitions, prepared.o[rows].tolist(), strict=True
        ):
            tp = (topic, partition)
            e = answer.get(tp)
            if e is None or e.end_offset <= offset:
                continue  # nothing waits
            history = self.history.get(tp)
            first = history[0].end_offset if history else e.end_offset
            if first <= offset or offset in self.asked.get(tp, ()):
                continue
            out.setdefault(tp, set()).add(offset)
        return {tp: sorted(v) for tp, v in sorted(out.items())}

    def judge_prepared(self, *, stale: bool = False, known_ms: int | None = None) -> PollResult:
        """The verdict of the commits and owners :meth:`prepare` was given, on the history the
        brokers' answers made (:meth:`LagKeeper.observe` since)."""
        prepared, self._prepared = self._prepared, None
        if prepared is None:
            raise RuntimeError("judge_prepared: nothing prepared (prepare comes first)")
        return self._verdict(prepared, stale=stale, known_ms=known_ms)

    def _prepare(self, commits: pa.Table, owners: pa.Table) -> _Prepared:
        commits = commits.cast(COMMIT_SCHEMA) if commits.schema != COMMIT_SCHEMA else commits
        owners = owners.cast(OWNER_SCHEMA) if owners.schema != OWNER_SCHEMA else owners
        n = commits.num_rows
        state = self._state if self._state is not None and self._state.keys.num_rows else None

        # -- inputs, in the commits' order -------------------------------------------------
        o = _np(commits.column("offset"))
        c = _np(commits.column("commit_ms"))
        m_in = _np(commits.column("moved_ms"))
        m_has = _valid(commits.column("moved_ms"))
        # The joins by key are kept while their keys are the same as at the last poll (a
        # fleet's commits and owners are read in the same order poll after poll): a join of
        # 1.2 M rows costs most of a second.
        keys = commits.select(KEYS)
        joins = self._joins
        owner_keys = owners.select(KEYS)
        codes = self._codes
        coded, owner_coded = codes.encode(commits), codes.encode(owners)
        if codes.worn():
            codes.reset()
            coded, owner_coded = codes.encode(commits), codes.encode(owners)
            if state is not None:  # its keys in the new ids
                state.key64 = _first(codes.encode(state.keys))
            joins = self._joins = None
        key64, tp64 = coded if coded is not None else (None, None)
        owner_key64 = _first(owner_coded)
        if state is None:
            same_keys = False
        elif key64 is not None and state.key64 is not None:
            same_keys = bool(np.array_equal(state.key64, key64))
        else:
            same_keys = _equal(state.keys.select(KEYS), keys)
        if same_keys and joins is not None and _same_owner_keys(joins, owner_keys, owner_key64):
            oi = joins.oi
        elif key64 is not None and owner_key64 is not None:
            oi = _lookup(key64, owner_key64)
        else:
            oi = _index(commits, _last_per_key(owners), KEYS, "_o")
        whose = owners.select(["member", "generation"])
        if joins is not None and _equal(joins.whose, whose):
            owner_marks = joins.marks
        else:
            owner_marks = _owner_marks(
                owners.column("member"), owners.column("generation"), self._marks
            )
        has_owner = oi >= 0
        owner_cols = {name: _take(owners.column(name), oi) for name in _OWNER_COLUMNS}
        mark = np.where(has_owner, owner_marks[np.where(has_owner, oi, 0)], -1) if len(
            owner_marks) else np.full(n, -1, dtype=np.int64)  # fmt: skip
        if state is None:
            j = np.full(n, -1, dtype=np.int64)
        elif same_keys:
            j = np.arange(n, dtype=np.int64)
        elif key64 is not None and state.key64 is not None:
            j = _lookup(key64, state.key64)
        else:
            j = _index(commits, state.keys, KEYS, "j")
        prev = j >= 0
        js = np.where(prev, j, 0)

        # -- the commits advanced (``book.advance``), as the keeper's loop does -------------
        if state is None:
            zeros = np.zeros(n, dtype=np.int64)
            p_off = p_moved = p_rwf = p_rwms = p_mark = zeros - 1
            p_tn = zeros.copy()
            p_at1 = p_at2 = zeros
            p_pt1 = p_pt2 = np.zeros(n, dtype=np.float64)
            skip = np.zeros(n, dtype=np.bool_)
        else:
            p_off, p_moved = state.offset[js], state.moved[js]
            p_rwf, p_rwms, p_mark = state.rewound_from[js], state.rewound_ms[js], state.mark[js]
            p_tn, p_at1, p_at2 = state.t_n[js], state.t_at1[js], state.t_at2[js]
            p_pt1, p_pt2 = state.t_pt1[js], state.t_pt2[js]
            p_tn = np.where(prev, p_tn, 0)
            skip = prev.copy()

            def before(column: Any) -> Any:
                # In the same order as the last poll the last values are the column itself.
                return column if same_keys else _take(column, j)

            for name in _READ_COLUMNS:
                skip &= _same(before(state.read.column(name)), commits.column(name))
            for name in _OWNER_COLUMNS:
                skip &= _same(before(state.owner.column(name)), owner_cols[name])
        p_rwf = np.where(prev, p_rwf, -1)
        moved, rwf, rwms, gen = _advance(
            prev, skip, p_off, p_moved, p_rwf, p_rwms, p_mark, o, c, m_in, m_has, mark, has_owner
        )

        return _Prepared(
            commits, state, same_keys, o, c, has_owner, owner_cols, j, prev,
            p_tn, p_at1, p_at2, p_pt1, p_pt2, moved, rwf, rwms, gen,
            owner_keys, owner_key64, oi, whose, owner_marks, key64, tp64,
        )  # fmt: skip

    def _verdict(self, prepared: _Prepared, *, stale: bool, known_ms: int | None) -> PollResult:
        rules = self.rules
        commits, state, same_keys = prepared.commits, prepared.state, prepared.same_keys
        n = commits.num_rows
        o, c, has_owner = prepared.o, prepared.c, prepared.has_owner
        owner_cols = prepared.owner_cols
        prev = prepared.prev
        p_tn, p_at1, p_at2 = prepared.p_tn, prepared.p_at1, prepared.p_at2
        p_pt1, p_pt2 = prepared.p_pt1, prepared.p_pt2
        moved, rwf, rwms, gen = prepared.moved, prepared.rwf, prepared.rwms, prepared.gen
        joins = self._joins

        # -- the history: each partition's oldest and newest point -------------------------
        hist = self.history
        h_keys = list(hist)
        pts = list(hist.values())
        if same_keys and joins is not None and joins.h_keys == h_keys:
            k = joins.k
        else:
            k = _history_index(commits, h_keys, prepared.tp64, self._codes.topics)
        self._joins = _Joins(
            prepared.owner_keys,
            prepared.owner_key64,
            prepared.oi,
            prepared.whose,
            prepared.owner_marks,
            h_keys,
            k,
        )
        has_h = k >= 0
        ks = np.where(has_h, k, 0)
        e1 = np.array([p[-1].end_offset for p in pts] or [0], dtype=np.int64)[ks]
        at = np.array([p[-1].observed_ms for p in pts] or [0], dtype=np.int64)[ks]
        e0 = np.array([p[0].end_offset for p in pts] or [0], dtype=np.int64)[ks]
        m0 = np.array([p[0].observed_ms for p in pts] or [0], dtype=np.int64)[ks]

        # -- the verdict (``judge``), where it is plain arithmetic ----------------------------
        upto = at if known_ms is None else np.minimum(at, known_ms)
        unseen_s = (at - upto) / 1000.0
        lag = np.maximum(0, e1 - o)
        seconds, at_least = _seconds_behind(pts, k, o, e1, at, e0, m0)
        waited = seconds * 1000.0
        retired = ~has_owner & (upto - c >= rules.retire_ms)
        lagging_s = np.maximum(0.0, seconds - unseen_s)
        point = np.where(lag != 0, lagging_s, 0.0)
        low = point * 1000.0 <= rules.warn_ms
        idle = (lag == 0) | retired
        alarm = ~idle & (
            ((upto - c >= rules.stop_ms) & (waited >= rules.stop_ms))
            | ((upto - moved >= rules.stop_ms) & (waited >= rules.stop_ms))
            | ((rwf >= 0) & (o < rwf))
        )
        last_at = np.where(p_tn >= 1, p_at2, np.iinfo(np.int64).min)
        simple_track = np.ones(n, dtype=np.bool_)
        keys_py: list[tuple[str, str, int]] | None = None
        if state is not None and state.tracks:
            keys_py = _key_list(commits)
            for i in map(int, np.flatnonzero(prev)):
                if keys_py[i] in state.tracks:
                    simple_track[i] = False
        # The same answer judged again (the brokers did not answer, or no newer answer came)
        # replaces the last judgement instead of following it: plain too, the memory below.
        again = has_h & (last_at == at)
        plain = simple_track & (~has_h | ((last_at <= at) & low & ~alarm))
        status = np.where(idle, _IDLE, _OK).astype(np.int64)
        status = np.where(has_h, status, _IDLE)

        # -- the new memory ------------------------------------------------------------------
        # A new low judgement keeps the one before it (``_after_low``); one that replaces the
        # last keeps the one before that, if any.
        t_n = np.where(again, p_tn, np.where(has_h, np.minimum(p_tn + 1, 2), p_tn))
        t_at1 = np.where(has_h & ~again, p_at2, p_at1)
        t_pt1 = np.where(has_h & ~again, p_pt2, p_pt1)
        t_at2 = np.where(has_h, at, p_at2)
        t_pt2 = np.where(has_h, point, p_pt2)
        tracks: dict[tuple[str, str, int], Track] = {}

        # -- the rest, one by one, through ``judge`` itself -----------------------------------
        out_end, out_lag, out_sec, out_obs = e1.copy(), lag.copy(), seconds.copy(), at.copy()
        out_least = at_least & has_h
        out_retired = retired & has_h
        #: Where each column has a value (a partition never observed has none).
        end_ok, lag_ok, sec_ok, obs_ok = (has_h.copy() for _ in range(4))
        opened: list[Finding] = []
        resolved: list[tuple[str, str]] = []
        rest = np.flatnonzero(~plain)
        self.judged_one_by_one = len(rest)
        if len(rest):
            if keys_py is None:
                keys_py = _key_list(commits)
            epochs = commits.column("leader_epoch").to_pylist()
            sizes = commits.column("metadata_size").to_pylist()
            members = owner_cols["member"].to_pylist()
            clients = owner_cols["client"].to_pylist()
            hosts = owner_cols["host"].to_pylist()
            gens = owner_cols["generation"].to_pylist()
            for i in map(int, rest):
                key = keys_py[i]
                owner = Owner(members[i], clients[i], hosts[i], gens[i]) if has_owner[i] else None
                commit = Commit(
                    key[0], key[1], key[2], int(o[i]), int(c[i]),
                    epochs[i], sizes[i], int(moved[i]),
                    None if rwf[i] < 0 else int(rwf[i]),
                    None if rwf[i] < 0 else int(rwms[i]),
                    None if gen[i] < 0 else int(gen[i]),
                )  # fmt: skip
                track: Track | None = None
                if state is not None and prev[i]:
                    track = state.tracks.get(key)
                if track is None:
                    track = Track(_points(int(p_tn[i]), p_at1[i], p_pt1[i], p_at2[i], p_pt2[i]))
                v = judge(
                    commit,
                    hist.get((key[1], key[2]), []),
                    owner,
                    rules,
                    track,
                    stale=stale,
                    known_ms=known_ms,
                    compact=True,
                )
                row = v.row
                if v.opened is not None:
                    opened.append(v.opened)
                if v.resolved is not None:
                    resolved.append(v.resolved)
                status[i] = RANK[row.status]
                end_ok[i] = row.end_offset is not None
                out_end[i] = row.end_offset or 0
                lag_ok[i] = row.lag_records is not None
                out_lag[i] = row.lag_records or 0
                sec_ok[i] = row.lag_seconds is not None
                out_sec[i] = row.lag_seconds or 0.0
                obs_ok[i] = row.observed_ms is not None
                out_obs[i] = row.observed_ms or 0
                out_least[i] = row.lag_seconds_at_least
                out_retired[i] = row.retired
                simple = _simple(v.track, rules)
                if simple is None:
                    tracks[key] = v.track
                    t_n[i] = 0
                else:
                    t_n[i] = len(simple)
                    pts2 = ((0, 0.0),) * (2 - len(simple)) + simple
                    (t_at1[i], t_pt1[i]), (t_at2[i], t_pt2[i]) = pts2

        # -- partitions no longer committed: an open finding ends with them ----------------
        if state is not None and state.tracks:
            seen = set(keys_py or ())
            for key, track in state.tracks.items():
                if key not in seen and track.open_id is not None and track.open_kind is not None:
                    resolved.append((track.open_id, track.open_kind))

        self._state = _State(
            keys=commits.select(KEYS).append_column("j", pa.array(np.arange(n, dtype=np.int64))),
            key64=prepared.key64,
            read=commits.select(list(_READ_COLUMNS)).combine_chunks(),
            owner=pa.table(owner_cols),
            offset=o, moved=moved, rewound_from=rwf, rewound_ms=rwms, mark=gen,
            t_n=t_n, t_at1=t_at1, t_pt1=t_pt1, t_at2=t_at2, t_pt2=t_pt2, tracks=tracks,
        )  # fmt: skip
        if self.trim:
            self._trim_columns(h_keys, pts, k, o)

        # -- the rows and the topics ---------------------------------------------------------
        table = pa.table(
            {
                "group": commits.column("group"),
                "topic": commits.column("topic"),
                "partition": commits.column("partition"),
                "committed_offset": commits.column("offset"),
                "commit_time": commits.column("commit_ms"),
                "end_offset": pa.array(out_end, pa.int64(), mask=~end_ok),
                "lag_records": pa.array(out_lag, pa.int64(), mask=~lag_ok),
                "lag_seconds": pa.array(out_sec, pa.float64(), mask=~sec_ok),
                "lag_seconds_at_least": pa.array(out_least),
                "status": pc.take(_STATUS_NAMES, pa.array(status)),
                "owner_member": owner_cols["member"],
                "owner_client": owner_cols["client"],
                "owner_host": owner_cols["host"],
                "owner_generation": owner_cols["generation"],
                "observed_at": pa.array(out_obs, pa.int64(), mask=~obs_ok),
                "stale": pa.array(np.full(n, stale, dtype=np.bool_)),
                "retired": pa.array(out_retired),
            }
        )
        alerting = np.flatnonzero(status < _OK)
        rows = rows_of(table.take(pa.array(alerting))) if len(alerting) else []
        topics = _topics(table, status)
        return PollResult(rows, topics, opened, resolved, table=table)

    def _trim_columns(
        self, h_keys: list[TP], pts: list[list[EndOffset]], k: I64, offsets: I64
    ) -> None:
        """:meth:`LagKeeper._trim`, each partition's smallest committed offset taken as
        arrays (``k``: each commit's partition in ``h_keys``), Python only for the histories
        it cuts."""
        top = np.iinfo(np.int64).max
        floor = np.full(len(h_keys), top, dtype=np.int64)
        has = k >= 0
        np.minimum.at(floor, k[has], offsets[has])
        second = np.array([p[1].end_offset if len(p) > 1 else top for p in pts] or [top])
        history, written = self.history, self.written
        for i in map(int, np.flatnonzero(floor == top)):
            del history[h_keys[i]]  # no group commits to it any more
            written.pop(h_keys[i], None)
        for i in map(int, np.flatnonzero((floor != top) & (second[: len(h_keys)] <= floor))):
            cut(pts[i], int(floor[i]))


def floors_of(commits: pa.Table) -> dict[TP, int]:
    """:func:`~groupwatch.detect.lag.poll.commit_floors` of commits as columns."""
    if commits.num_rows == 0:
        return {}
    floors = commits.group_by(["topic", "partition"]).aggregate([("offset", "min")])
    return dict(
        zip(
            zip(
                floors.column("topic").to_pylist(),
                floors.column("partition").to_pylist(),
                strict=True,
            ),
            floors.column("offset_min").to_pylist(),
            strict=True,
        )
    )


def _advance(
    prev: B,
    skip: B,
    p_off: I64,
    p_moved: I64,
    p_rwf: I64,
    p_rwms: I64,
    p_mark: I64,
    o: I64,
    c: I64,
    m_in: I64,
    m_has: B,
    mark: I64,
    has_owner: B,
) -> tuple[I64, I64, I64, I64]:
    """:func:`~groupwatch.detect.lag.book.advance` of every row, as the keeper's loop calls it
    (the table's ``moved_time`` taken at a first sight or an unchanged offset; a read equal to
    the last poll's, ``skip``, not advanced again): the commits' moved time, rewound-from
    offset and time (-1: none) and owner mark (-1: none).  ``p_*``: the advanced commit of the
    last poll (where ``prev``); ``o``, ``c``, ``m_in``/``m_has``: the commit read."""
    same = prev & (o == p_off)
    forward = prev & (o > p_off)
    back = prev & (o < p_off)
    # A rewind lasts until the group is back where it was (forward), or is carried (same).
    still = forward & (p_rwf >= 0) & (o < p_rwf)
    keep_rw = same | still
    # A move back is the group's own doing without an owner, or across owners / generations.
    own_doing = ~has_owner | (p_mark < 0) | (mark != p_mark)
    rewind = back & ~own_doing
    back_to = np.maximum(p_off, np.where(p_rwf >= 0, p_rwf, p_off))
    rwf = np.where(keep_rw, p_rwf, np.where(rewind, back_to, -1))
    rwms = np.where(keep_rw, p_rwms, np.where(rewind, c, -1))
    gen = np.where(same & (mark < 0), p_mark, mark)
    moved = np.where(same, p_moved, c)
    # The table knows when the offset last moved better than two polls do.
    moved = np.where(m_has & (~prev | (o == p_off)), m_in, moved)
    return (
        np.where(skip, p_moved, moved),
        np.where(skip, p_rwf, rwf),
        np.where(skip, p_rwms, rwms),
        np.where(skip, p_mark, gen),
    )


def _seconds_behind(
    pts: list[list[EndOffset]], k: I64, o: I64, e1: I64, at: I64, e0: I64, m0: I64
) -> tuple[F64, B]:
    """:func:`~groupwatch.detect.lag.estimate.seconds_behind` of every row (``k``: its
    partition's history in ``pts``, -1 for none; ``e1``/``at`` and ``e0``/``m0`` the newest
    and oldest point), with the same arithmetic in the same order.  The first point past the
    committed offset is found by a binary search of all rows at once, over the histories of
    the partitions that need one laid end to end (most rows need none: nothing waits, the
    record is older than the history, or it lies in the history's last step)."""
    n = len(k)
    seconds = np.zeros(n, dtype=np.float64)
    waiting = (k >= 0) & (e1 > o)
    older = waiting & (o < e0)  # the first point kept is past it: "at least" the span
    seconds[older] = (at[older] - m0[older]) / 1000.0
    inside = np.flatnonzero(waiting & ~older)
    if len(inside) == 0:
        return seconds, older
    # The histories of the partitions some row searches, end to end.
    wanted, where = np.unique(k[inside], return_inverse=True)
    lists = [pts[int(i)] for i in wanted]
    sizes = np.array([len(p) for p in lists], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    ends = np.fromiter((e.end_offset for p in lists for e in p), np.int64, int(sizes.sum()))
    times = np.fromiter((e.observed_ms for p in lists for e in p), np.int64, int(sizes.sum()))
    lo = starts[where]
    hi = lo + sizes[where] - 1
    c = o[inside]
    # ``seconds_behind``'s loop, every row a step at a time: the first point past ``c``.
    while True:
        open_ = lo < hi
        if not open_.any():
            break
        mid = (lo + hi) // 2
        past = ends[mid] > c
        hi = np.where(open_ & past, mid, hi)
        lo = np.where(open_ & ~past, mid + 1, lo)
    before, after = lo - 1, lo  # ``c`` is at or past the first point: ``lo`` is not it
    share = (c + 1 - ends[before]) / (ends[after] - ends[before])
    written = times[before] + share * (times[after] - times[before])
    seconds[inside] = np.maximum(0.0, (at[inside] - written) / 1000.0)
    return seconds, older


def _points(n: int, at1: Any, pt1: Any, at2: Any, pt2: Any) -> tuple[tuple[int, float | None], ...]:
    both = ((int(at1), float(pt1)), (int(at2), float(pt2)))
    return both[2 - n :] if n else ()


def _simple(track: Track, rules: LagRules) -> tuple[tuple[int, float], ...] | None:
    """A track the columns hold: no open finding, at most two judgements, all low."""
    if track.open_kind is not None or track.open_id is not None or len(track.recent) > 2:
        return None
    out = []
    for at, seconds in track.recent:
        if seconds is None or seconds * 1000.0 > rules.warn_ms:
            return None
        out.append((at, seconds))
    return tuple(out)


def _topics(table: pa.Table, status: I64) -> list[TopicLag]:
    """``lag_history``'s rows: each (group, topic)'s partitions summed (as ``_TopicSum``)."""
    if table.num_rows == 0:
        return []
    data = pa.table(
        {
            "group": table.column("group"),
            "topic": table.column("topic"),
            "records": pc.fill_null(table.column("lag_records"), 0),
            "seconds": table.column("lag_seconds"),
            "observed": table.column("observed_at"),
            "rank": pa.array(status),
        }
    )
    sums = (
        data.group_by(["group", "topic"])
        .aggregate(
            [
                ("records", "count"),
                ("records", "sum"),
                ("seconds", "max"),
                ("observed", "max"),
                ("rank", "min"),
            ]
        )
        .sort_by([("group", "ascending"), ("topic", "ascending")])
    )
    return [
        TopicLag(g, t, obs, count, records, seconds, WORST_FIRST[rank])
        for g, t, count, records, seconds, obs, rank in zip(
            sums.column("group").to_pylist(),
            sums.column("topic").to_pylist(),
            sums.column("records_count").to_pylist(),
            sums.column("records_sum").to_pylist(),
            sums.column("seconds_max").to_pylist(),
            sums.column("observed_max").to_pylist(),
            sums.column("rank_min").to_pylist(),
            strict=True,
        )
    ]


def judge_rows(
    keeper: FleetKeeper,
    commits: Sequence[Commit],
    owners: Mapping[str, Mapping[TP, Owner]],
    **kwargs: Any,
) -> PollResult:
    """:meth:`FleetKeeper.judge_table` of Python values (tests)."""
    return keeper.judge_table(commits_table(commits), owners_table(owners), **kwargs)


__all__ = [
    "COMMIT_SCHEMA",
    "OWNER_SCHEMA",
    "FleetKeeper",
    "EndOffset",
    "commits_table",
    "floors_of",
    "judge_rows",
    "owners_table",
    "rows_of",
]
