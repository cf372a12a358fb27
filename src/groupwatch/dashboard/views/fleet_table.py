"""The fleet page's table: one row per group with its health now, the ones that need attention
first.  A group's health is the worst of its open findings: those of its latest generation (a
modern group's: of its current group epoch).

Built for fleets of 100,000 groups: :func:`fleet_base` computes what depends only on the tables
in whole-table operations (sort once, group once; no filter of a table per group), so the pages
keep it per table version; :func:`fleet_rows` applies a request's filters, window and order to
it.  :func:`fleet` is both in one call.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd  # type: ignore[import-untyped]
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from groupwatch.dashboard import modern
from groupwatch.dashboard.filters import Filters, in_window
from groupwatch.dashboard.frames import is_null
from groupwatch.dashboard.views import lag
from groupwatch.delta.read import FileRead
from groupwatch.notify.kinds import HEALTHY, SEVERITIES, rank

#: The columns of :func:`fleet`'s rows.
COLUMNS = [
    "group",
    "group_type",
    "health",
    "last_generation",
    "assignment_epoch",
    "member_count",
    "protocol",
    "last_seen",
    "rebalances_last_hour",
    "open_findings",
    "critical",
    "error",
    "warning",
    "info",
    *lag.GROUP_COLUMNS,
]
#: What depends on the tables only (:func:`fleet_base`).
BASE_COLUMNS = [
    "group",
    "group_type",
    "health",
    "last_generation",
    "assignment_epoch",
    "member_count",
    "protocol",
    "last_seen",
    "open_findings",
]
#: The orders the fleet page offers: ``attention`` (the default) puts the groups needing
#: attention first.
SORTS: dict[str, tuple[list[str], list[bool]]] = {
    "attention": (
        ["_k", "open_findings", "rebalances_last_hour", "group"],
        [True, False, False, True],
    ),
    "group": (["group"], [True]),
    "members": (["member_count", "group"], [False, True]),
    "rebalances": (["rebalances_last_hour", "group"], [False, True]),
    "last_seen": (["last_seen", "group"], [False, True]),
    # Lag: most seconds behind first (then records); by status: the worst first. Groups whose
    # lag is not known go last.
    "lag": (["lag_seconds", "lag_records", "group"], [False, False, True]),
    "lag_records": (["lag_records", "lag_seconds", "group"], [False, False, True]),
    "lag_status": (["_lag_k", "lag_seconds", "lag_records", "group"], [True, False, False, True]),
}
_WINDOW_SEVERITIES = ("critical", "error", "warning", "info")


def _latest_snapshots(snapshots: pd.DataFrame) -> pd.DataFrame:
    s = snapshots.sort_values(["source_timestamp", "source_partition", "source_offset"])
    return s.groupby("group", sort=False).tail(1).set_index("group")


def open_findings(findings: pd.DataFrame, snapshots: pd.DataFrame) -> pd.DataFrame:
    """Findings of each group's latest generation: what is wrong right now.

    A later healthy generation closes a group's earlier findings (the notifier resolves alerts
    the same way); a deleted group has none open.
    """
    if findings.empty or snapshots.empty:
        return findings.iloc[0:0]
    latest = _latest_snapshots(snapshots)
    live = latest[~latest["tombstone"].fillna(False).astype(bool)]
    last_gen = live["generation"]
    kinds = modern.group_types(snapshots)
    # A null generation (or a group with no live snapshot) matches nothing, as NaN never
    # equals NaN.
    mask = (findings["group"].map(last_gen) == findings["generation"]).fillna(False)
    mask = mask.astype(bool)
    # A modern group's findings carry member epochs too: they are open while the group is
    # still at the group epoch they were raised at (a new group epoch is a new assignment).
    modern_groups = {g for g, t in kinds.items() if modern.is_modern(t)}
    mine_of = findings[findings["group"].isin(modern_groups)].groupby("group").indices
    if mine_of:
        snaps_of = snapshots[snapshots["group"].isin(set(mine_of))].groupby("group").indices
        for group, at_rows in mine_of.items():
            rows = findings.iloc[at_rows]
            at = modern.finding_epochs(rows, snapshots.iloc[snaps_of[group]], str(group))
            last = last_gen.get(group)
            mask.iloc[at_rows] = [last is not None and not is_null(last) and e == last for e in at]
    return findings[mask]


def group_topics(members: pd.DataFrame) -> pd.DataFrame:
    """Every (group, topic) a member of the group subscribed to, in any of its records."""
    if members.empty:
        return pd.DataFrame({"group": pd.Series(dtype=object), "topic": pd.Series(dtype=object)})
    pairs = members[["group", "topics"]].explode("topics").dropna()
    pairs = pairs.rename(columns={"topics": "topic"}).drop_duplicates()
    return pairs.reset_index(drop=True)


def topic_pairs(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`group_topics` as a reduction: of ``member_assignments`` rows, or of pairs it
    returned before (a :class:`~groupwatch.dashboard.fold.Fold` combines those)."""
    if "topics" in frame:
        return group_topics(frame)
    return frame[["group", "topic"]].drop_duplicates().reset_index(drop=True)


#: How far back the fleet's per-request figures look (``rebalances_last_hour``).
RECENT = timedelta(hours=1)


def fleet_snapshots(snapshots: pd.DataFrame, now: datetime | None = None) -> pd.DataFrame:
    """The rows of ``group_snapshots`` that the fleet page reads (:func:`fleet_base` and
    :func:`fleet_rows` give the same on them as on every row): each group's newest row and its
    newest row stating a type, every row of a modern group type (a modern group's members and
    epochs are read from its rows since its last tombstone), and the rows of the last
    :data:`RECENT` before ``now`` (the rebalances of the last hour).

    Newest-per-group and a row's own values decide, so it can be applied per data file and
    again to the union (:class:`~groupwatch.dashboard.fold.Fold`): a classic group's month of
    generations costs the fleet one row.  The cut-off moves with the clock and only ever
    leaves out rows the last hour no longer holds."""
    if snapshots.empty:
        return snapshots
    now = now or datetime.now(UTC)
    s = snapshots.sort_values(modern.POSITION, kind="stable")
    newest = ~s["group"].duplicated(keep="last")
    typed = s["group_type"].notna() if "group_type" in s else pd.Series(False, index=s.index)
    # Untyped rows' groups are null here: they only ever repeat each other.
    newest_typed = typed & ~s["group"].where(typed).duplicated(keep="last")
    kept = modern.types(s).map(modern.is_modern).astype(bool)
    recent = (s["source_timestamp"] >= pd.Timestamp(now - RECENT)).fillna(False).astype(bool)
    return s[newest | newest_typed | kept | recent]


#: :func:`fleet_members`'s rows as a file is read: a type that is not classic (null and empty
#: are classic, as :func:`modern.type_of` reads them).
MODERN_ROWS = FileRead(
    where=pc.field("group_type").is_valid()
    & (pc.field("group_type") != modern.CLASSIC)
    & (pc.field("group_type") != ""),
    where_columns=("group_type",),
)


def arrow_topic_pairs(rows: pa.Table) -> pa.Table:
    """:func:`group_topics` of a file's ``group`` and ``topics`` in Arrow (a month of member
    rows' lists made Python objects first cost most of a cold fleet page)."""
    if "topics" not in rows.column_names:
        return pa.table({"group": pa.array([], pa.string()), "topic": pa.array([], pa.string())})
    topics = rows.column("topics")
    flat = pc.list_flatten(topics)
    groups = pc.take(rows.column("group"), pc.list_parent_indices(topics))
    pairs = pa.table({"group": groups, "topic": flat}).filter(pc.is_valid(flat))
    return pairs.group_by(["group", "topic"]).aggregate([])


#: What :func:`topic_pairs` reads of a file: two columns, made pairs in Arrow.
TOPIC_PAIRS = FileRead(columns=("group", "topics"), shape=arrow_topic_pairs)


#: The tables the fleet reads only the group names of: a group with rows in one of them alone
#: (intervals left in ``partition_ownership``, the job's ``group_state``, the offsets of a
#: group that commits without ever joining, or whose metadata records expired) is still listed.
NAMED_ONLY = (
    "partition_ownership",
    "group_state",
    "group_offsets",
    "committed_offsets",
    "committed_changes",
)


def arrow_group_names(rows: pa.Table) -> pa.Table:
    """The distinct group names of a file's ``group`` column, in Arrow."""
    if "group" not in rows.column_names:
        return pa.table({"group": pa.array([], pa.string())})
    names = pc.unique(rows.column("group").cast(pa.string()))
    return pa.table({"group": names.filter(pc.is_valid(names))})


#: What :func:`group_names` reads of a file: the group column alone, made distinct in Arrow.
GROUP_NAMES = FileRead(columns=("group",), shape=arrow_group_names)


def group_names(frame: pd.DataFrame) -> pd.DataFrame:
    """The distinct group names of a table's rows (``group``), as a reduction: of the rows or of
    names it returned before, so that it is kept file by file."""
    return frame[["group"]].dropna().drop_duplicates().reset_index(drop=True)


def fleet_members(members: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``member_assignments`` that :func:`fleet_base` reads: a modern group type's
    (a classic group's member count is its snapshot's). A row's own type decides, so it can be
    applied per data file."""
    if members.empty:
        return members
    return members[modern.types(members).map(modern.is_modern).astype(bool)]


def groups_with_topic(members: pd.DataFrame, topic: str) -> set[str]:
    pairs = group_topics(members)
    return set(pairs.loc[pairs["topic"] == topic, "group"])


def _after(
    a: tuple[pd.Series, pd.Series, pd.Series], b: tuple[pd.Series, pd.Series, pd.Series]
) -> pd.Series:
    """Row-wise ``a > b`` of record positions (timestamp, partition, offset); false where
    ``b`` is missing."""
    (ts, p, o), (bts, bp, bo) = a, b
    return ((ts > bts) | ((ts == bts) & ((p > bp) | ((p == bp) & (o > bo))))).fillna(False)


def _modern_now(
    snapshots: pd.DataFrame, members: pd.DataFrame, kinds: dict[str, str]
) -> pd.DataFrame:
    """Each modern group at its newest group epoch: its assignment epoch and its members.

    Every group at once, what :func:`modern.epochs` and :func:`modern.members_at` give one
    group: the group-epoch rows of the group's type in record order; the newest epoch's last
    row; from the last tombstone up to it (``since``) to the row after it (``until``); each
    member's newest row in between, those with a member epoch counted.
    """
    out = pd.DataFrame(
        {"assignment_epoch": pd.Series(dtype=object), "members": pd.Series(dtype="int64")}
    )
    wanted = {g for g, t in kinds.items() if modern.is_modern(t)}
    if not wanted:
        return out
    s = snapshots[snapshots["group"].isin(wanted)]
    s = s[modern.types(s) == s["group"].map(kinds)]
    if s.empty:
        return out
    s = s.sort_values(["group", *modern.POSITION], kind="stable").reset_index(drop=True)
    by = s["group"]
    i = s.groupby("group", sort=False).cumcount()
    gen = s["generation"].astype("float64")
    top = gen.groupby(by).transform("max")
    last = i.where(gen == top).groupby(by).max().dropna()
    s = s[by.isin(last.index)]
    i, by = i[s.index], s["group"]
    last_i = by.map(last)
    upto = i <= last_i
    tomb = s["tombstone"].fillna(False).astype(bool)
    pos = modern.POSITION
    since = s[upto & tomb].groupby("group", sort=False).tail(1).set_index("group")[pos]
    until = s[i == last_i + 1].set_index("group")[pos]
    known = s[upto & s["assignment_epoch"].notna()]
    assignment = known.groupby("group", sort=False)["assignment_epoch"].last()
    m = members[members["group"].isin(set(last.index))]
    m = m[modern.types(m) == m["group"].map(kinds)]
    row = (m["source_timestamp"], m["source_partition"], m["source_offset"])

    def bound(b: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
        g = m["group"]
        return (g.map(b[pos[0]]), g.map(b[pos[1]]), g.map(b[pos[2]]))

    lo, hi = bound(since), bound(until)
    keep = (lo[0].isna() | _after(row, lo)) & (hi[0].isna() | _after(hi, row))
    newest = m[keep].sort_values(pos, kind="stable").groupby(["group", "member_id"]).tail(1)
    counted = newest[newest["member_epoch"].notna()].groupby("group").size()
    out = pd.DataFrame(index=pd.Index(last.index, name="group"))
    out["assignment_epoch"] = [
        None if is_null(a) else int(a) for a in assignment.reindex(out.index)
    ]
    out["members"] = counted.reindex(out.index).fillna(0).astype("int64")
    return out


def _worst_of(severities: pd.Series, groups: pd.Series) -> pd.Series:
    """The worst severity per group (an unknown severity ranks after info)."""
    ranks = severities.map(rank)
    best = ranks.groupby(groups).min()
    names = {rank(s): s for s in SEVERITIES}
    first_unknown = {r: s for s, r in zip(severities, ranks, strict=True) if r not in names}
    return best.map(lambda r: names.get(r, first_unknown.get(r, HEALTHY)))


def fleet_base(
    snapshots: pd.DataFrame, findings: pd.DataFrame, members: pd.DataFrame
) -> pd.DataFrame:
    """One row per group with what depends only on the tables (:data:`BASE_COLUMNS`), by
    group name; what depends on the time or the filters is :func:`fleet_rows`'."""
    if snapshots.empty:
        return pd.DataFrame(columns=BASE_COLUMNS)
    latest = _latest_snapshots(snapshots).sort_index()
    kinds = modern.group_types(snapshots)
    opened = open_findings(findings, snapshots)
    groups = latest.index.to_series()
    deleted = latest["tombstone"].fillna(False).astype(bool)
    gtype = groups.map(lambda g: kinds.get(str(g), modern.CLASSIC))
    now = _modern_now(snapshots, members, kinds)
    worst = _worst_of(opened["severity"], opened["group"]) if not opened.empty else pd.Series()
    health = groups.map(worst).fillna(HEALTHY).where(~deleted, "deleted")
    count = latest["member_count"].astype("float64")
    counted = groups.map(now["members"]).astype("float64")
    # Group-epoch records state no member count: a modern group's members are counted from
    # their own records (not for a deleted group).
    use = gtype.map(modern.is_modern).astype(bool) & count.isna() & ~deleted
    count = count.where(~use, counted).fillna(0).astype("int64")
    epoch = groups.map(now["assignment_epoch"]).where(gtype.map(modern.is_modern).astype(bool))
    n_open = opened.groupby("group").size() if not opened.empty else pd.Series(dtype="int64")
    out = pd.DataFrame(
        {
            "group": groups.values,
            "group_type": gtype.values,
            "health": health.values,
            "last_generation": [None if is_null(g) else int(g) for g in latest["generation"]],
            "assignment_epoch": [None if is_null(e) else int(e) for e in epoch],
            "member_count": count.values,
            "protocol": latest["protocol"].values,
            "last_seen": latest["source_timestamp"].values,
            "open_findings": groups.map(n_open).fillna(0).astype("int64").values,
        },
        columns=BASE_COLUMNS,
    )
    out["last_seen"] = pd.to_datetime(out["last_seen"], utc=True)
    return out


def with_every_group(
    base: pd.DataFrame, findings: pd.DataFrame, others: pd.Series | None = None
) -> pd.DataFrame:
    """:func:`fleet_base`'s rows and a row for each group that has rows in another table
    (``findings``, or the names in ``others``: ``member_assignments``, ``partition_lag`` and
    the tables of :data:`NAMED_ONLY`) but no snapshot left: no group falls out of the fleet
    because one table lost or never had it.

    Such a group's findings at its newest generation among them are its open ones (there is no
    snapshot to say it moved on), and give it its health.  Whole-column steps over a
    10,000-group fleet's names (the pages take them once per table version)."""
    if "group" not in findings:
        findings = pd.DataFrame(columns=["group", "generation", "severity"])
    named = [findings["group"]] + ([others] if others is not None else [])
    names = pd.Index(pd.concat(named, ignore_index=True).dropna().astype(str).unique())
    missing = sorted(names.difference(pd.Index(base["group"].astype(str))))
    if not missing:
        return base
    mine = findings[findings["group"].isin(missing)]
    newest = mine.groupby("group")["generation"].max() if not mine.empty else pd.Series()
    at_newest = (
        mine[
            (mine["generation"] == mine["group"].map(newest)).fillna(False).astype(bool)
            | mine["group"].map(newest).isna()
        ]
        if not mine.empty
        else mine
    )
    worst = (
        _worst_of(at_newest["severity"], at_newest["group"]) if not at_newest.empty else pd.Series()
    )
    n_open = at_newest.groupby("group").size() if not at_newest.empty else pd.Series()
    groups = pd.Series(missing, dtype=object)
    extra = pd.DataFrame(
        {
            "group": missing,
            "group_type": modern.CLASSIC,
            "health": groups.map(worst).fillna(HEALTHY).values,
            "last_generation": [
                None if is_null(newest.get(g)) else int(newest[g]) for g in missing
            ],
            "assignment_epoch": None,
            "member_count": 0,
            "protocol": None,
            "last_seen": pd.NaT,
            "open_findings": groups.map(n_open).fillna(0).astype("int64").values,
        },
        columns=BASE_COLUMNS,
    )
    extra["last_seen"] = pd.to_datetime(extra["last_seen"], utc=True)
    if base.empty:
        return extra
    return pd.concat([base, extra], ignore_index=True)


def window_counts(findings: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    """Per group, its findings in the filters' window by severity (by when they were
    detected)."""
    window = in_window(findings, "detected_at", filters)
    sev = window["severity"].where(window["severity"].isin(_WINDOW_SEVERITIES))
    counts = pd.crosstab(window["group"], sev) if not window.empty else pd.DataFrame()
    return counts.reindex(columns=list(_WINDOW_SEVERITIES), fill_value=0)


def rebalances_last_hour(snapshots: pd.DataFrame, now: datetime) -> pd.Series:
    """Per group, the generations (group epochs) seen in the hour before ``now``."""
    hour_ago = pd.Timestamp(now - timedelta(hours=1))
    recent = snapshots[
        (snapshots["source_timestamp"] >= hour_ago)
        & ~snapshots["tombstone"].fillna(False).astype(bool)
    ]
    return recent.groupby("group")["generation"].nunique()


def fleet_rows(
    base: pd.DataFrame,
    snapshots: pd.DataFrame,
    findings: pd.DataFrame,
    topics: pd.DataFrame,
    filters: Filters,
    now: datetime | None = None,
    group_lag: pd.DataFrame | None = None,
    complete: bool = False,
) -> pd.DataFrame:
    """:func:`fleet_base`'s rows that match ``filters`` (group, name, type, health, lag status,
    topic, severity, window), with the window's counts and the groups' lag
    (:func:`lag.group_lag`; ``None``: not known), in the filters' order (default: needing
    attention first).  Every group ``findings``, ``topics`` or ``group_lag`` holds is among
    them (:func:`with_every_group`); ``complete``: ``base`` has them already (the pages add
    them once per table version, the names of :data:`NAMED_ONLY`'s tables too)."""
    now = now or datetime.now(UTC)
    if not complete:
        others = [topics["group"]] if "group" in topics else []
        if group_lag is not None and not group_lag.empty:
            others.append(group_lag.index.to_series())
        base = with_every_group(base, findings, pd.concat(others) if others else None)
    out = lag.with_group_lag(base, group_lag)
    if filters.group:
        out = out[out["group"] == filters.group]
    if filters.name:
        out = out[out["group"].str.contains(filters.name, case=False, regex=False)]
    if filters.type:
        out = out[out["group_type"] == filters.type]
    if filters.health:
        out = out[out["health"] == filters.health]
    if filters.lag:
        out = out[out["lag_status"] == filters.lag]
    if filters.topic:
        out = out[out["group"].isin(topics.loc[topics["topic"] == filters.topic, "group"])]
    if filters.severity:
        out = out[out["health"].map(rank) <= rank(filters.severity)]
    start = filters.since_time(now)
    if start is not None:
        out = out[out["last_seen"] >= pd.Timestamp(start)]
    out = out.copy()
    out["rebalances_last_hour"] = (
        out["group"].map(rebalances_last_hour(snapshots, now)).fillna(0).astype("int64")
    )
    counts = window_counts(findings, filters)
    for sev in _WINDOW_SEVERITIES:
        out[sev] = out["group"].map(counts[sev]).fillna(0).astype("int64")
    out["_k"] = out["health"].map(lambda h: rank(h) if h != "deleted" else 99)
    out["_lag_k"] = lag.status_ranks(out["lag_status"])
    by, ascending = SORTS.get(filters.sort or "attention", SORTS["attention"])
    out = out.sort_values(by, ascending=ascending, kind="stable", na_position="last")
    return out[COLUMNS].reset_index(drop=True)


def fleet(
    snapshots: pd.DataFrame,
    findings: pd.DataFrame,
    members: pd.DataFrame,
    filters: Filters,
    now: datetime | None = None,
) -> pd.DataFrame:
    """One row per group, the ones that need attention first."""
    base = fleet_base(snapshots, findings, members)
    return fleet_rows(base, snapshots, findings, group_topics(members), filters, now)
