"""The fleet page reads a reduction of the history tables kept file by file
(:mod:`groupwatch.dashboard.fold`): it must show what a reading of every row shows, and a new
version must cost the files it added.  Real Delta tables, written with delta-rs."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet
import pytest
from deltalake import DeltaTable, write_deltalake

from groupwatch.dashboard import views
from groupwatch.dashboard.filters import Filters
from groupwatch.dashboard.fold import Fold
from groupwatch.dashboard.views.fleet_table import (
    MODERN_ROWS,
    TOPIC_PAIRS,
    fleet_members,
    fleet_snapshots,
    topic_pairs,
)
from groupwatch.dashboard.views.health import RECORD_TIMES, records_per_minute
from groupwatch.delta.read import DeltaStore, schema
from groupwatch.tables import TABLES
from tests.dashboard import fleet_scenario, modern_scenario
from tests.dashboard.scenario import tps, write


def _history(root: Path, groups: int, days: int, now: datetime) -> None:
    """``days`` days of earlier generations of classic groups ``h000``..., a day per append,
    and a group that became a KIP-848 consumer group (``conv``) half-way."""
    for back in range(days, 0, -1):
        at = now - timedelta(days=back)
        snaps: list[dict[str, Any]] = []
        members: list[dict[str, Any]] = []
        for i in range(groups):
            g = f"h{i:03d}"
            where = {
                "source_topic": "__consumer_offsets",
                "source_partition": i % 3,
                "source_offset": back * 1000 + i,
                "source_timestamp": at + timedelta(seconds=i),
                "snapshot_date": at.date(),
            }
            snaps.append(
                {"group": g, "generation": 100 - back, "protocol": "range",
                 "member_count": 1 + (back + i) % 3, "tombstone": False,
                 "group_type": "classic" if back % 2 else None, **where}
            )  # fmt: skip
            for m in range(1 + (back + i) % 3):
                members.append(
                    {"group": g, "generation": 100 - back, "member_id": f"{g}-m{m}",
                     "topics": [f"t{(back + m) % 4}"], "assignment": tps((f"t{m}", m)), **where}
                )  # fmt: skip
        where = {
            "source_topic": "__consumer_offsets",
            "source_partition": 9,
            "source_offset": back,
            "source_timestamp": at,
            "snapshot_date": at.date(),
        }
        modern = back <= days // 2
        # The newest group epoch has no target assignment yet: the assignment epoch shown is
        # an older row's.
        snaps.append(
            {"group": "conv", "generation": 50 - back, "tombstone": False,
             "group_type": "consumer" if modern else "classic",
             "assignment_epoch": 50 - back if modern and back > 1 else None,
             "member_count": None if modern else 1, **where}
        )  # fmt: skip
        # A group whose rows say modern, then classic, then nothing (a table written before
        # the column): classic, as its newest typed row says.
        flip = "consumer" if back == days else "classic" if back == days - 1 else None
        snaps.append(
            {"group": "flip", "generation": 10 - back, "tombstone": False, "group_type": flip,
             "member_count": 1, **where, "source_offset": 100 + back}
        )  # fmt: skip
        members.append(
            {"group": "conv", "member_id": f"conv-{back % 2}", "topics": ["c"],
             "group_type": "consumer" if modern else None,
             "member_epoch": 50 - back if modern else None, "member_state": "STABLE",
             "assignment": tps(("c", 0)), **where}
        )  # fmt: skip
        write(root, "group_snapshots", snaps, mode="append")
        write(root, "member_assignments", members, mode="append")


def _roots(tmp: Path) -> dict[str, Path]:
    now = datetime.now(UTC).replace(microsecond=0)
    roots = {name: tmp / name for name in ("modern", "fleet", "legacy")}
    modern_scenario.build(roots["modern"], now)
    _history(roots["modern"], 12, 6, now)
    fleet_scenario.build(roots["fleet"], groups=60, big=30, generation=20)
    _history(roots["fleet"], 20, 4, now)
    modern_scenario.legacy(roots["modern"], roots["legacy"])
    return roots


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _roots(tmp_path_factory.mktemp("fold"))


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Two frames with the same rows, whatever their order and index."""
    key = list(a.columns)
    assert list(b.columns) == key
    # A column's dtype may differ where one side has no null (int against float): values count.
    norm = [
        f.apply(lambda c: c.astype("float64") if pd.api.types.is_numeric_dtype(c) else c)
        .astype(str)
        .sort_values(key)
        .reset_index(drop=True)
        for f in (a, b)
    ]
    pd.testing.assert_frame_equal(norm[0], norm[1])


@pytest.mark.parametrize("name", ["modern", "fleet", "legacy"])
def test_the_fleet_on_the_reduced_rows_is_the_fleet_on_every_row(
    roots: dict[str, Path], name: str
) -> None:
    store = DeltaStore(roots[name])
    s, f, m = (store.read(t) for t in ("group_snapshots", "findings", "member_assignments"))
    now = datetime.now(UTC)
    reduced_s, reduced_m = fleet_snapshots(s, now), fleet_members(m)
    assert len(reduced_s) < len(s) and len(reduced_m) < len(m)  # it does leave rows out
    whole = views.fleet_base(s, f, m)
    _same(views.fleet_base(reduced_s, f, reduced_m), whole)
    # Without the last hour's rows (the row per group does not depend on them).
    later = fleet_snapshots(s, now + timedelta(days=1))
    _same(views.fleet_base(later, f, reduced_m), whole)
    for filters in (Filters(), Filters(sort="rebalances"), Filters(topic="t1")):
        expect = views.fleet_rows(whole, s, f, views.group_topics(m), filters, now)
        got = views.fleet_rows(whole, reduced_s, f, topic_pairs(m), filters, now)
        _same(got, expect)


@pytest.mark.parametrize("name", ["modern", "fleet"])
def test_reducing_parts_then_the_union_is_reducing_the_whole(
    roots: dict[str, Path], name: str
) -> None:
    store = DeltaStore(roots[name])
    s, f, m = (store.read(t) for t in ("group_snapshots", "findings", "member_assignments"))
    rng = random.Random(7)
    now = datetime.now(UTC)
    for _ in range(5):
        cut_s = [rng.randrange(4) for _ in range(len(s))]
        cut_m = [rng.randrange(4) for _ in range(len(m))]
        parts_s = [fleet_snapshots(s[[c == k for c in cut_s]], now) for k in range(4)]
        parts_m = [fleet_members(m[[c == k for c in cut_m]]) for k in range(4)]
        pairs = [topic_pairs(m[[c == k for c in cut_m]]) for k in range(4)]
        again_s = fleet_snapshots(pd.concat(parts_s, ignore_index=True), now)
        again_m = fleet_members(pd.concat(parts_m, ignore_index=True))
        _same(views.fleet_base(again_s, f, again_m), views.fleet_base(s, f, m))
        _same(topic_pairs(pd.concat(pairs, ignore_index=True)), views.group_topics(m))
        counts = [records_per_minute(s[[c == k for c in cut_s]]) for k in range(4)]
        whole = s["source_timestamp"].dt.floor("1min").value_counts().sort_index()
        got = records_per_minute(pd.concat(counts, ignore_index=True))
        assert got.set_index("minute")["records"].sort_index().to_dict() == whole.to_dict()


def test_a_fold_reads_each_new_file_once_through_appends_compaction_and_deletes(
    tmp_path: Path,
) -> None:
    root = tmp_path / "delta"
    now = datetime.now(UTC).replace(microsecond=0)
    store = DeltaStore(root)
    fold = Fold(store, "group_snapshots", lambda frame: fleet_snapshots(frame, now))
    # As the pages read them: only the columns a reduction needs, rows filtered in the scan.
    pairs = Fold(store, "member_assignments", topic_pairs, TOPIC_PAIRS)
    modern = Fold(store, "member_assignments", fleet_members, MODERN_ROWS)
    minutes = Fold(store, "group_snapshots", records_per_minute, RECORD_TIMES)

    def check() -> None:
        _same(fold.frame(), fleet_snapshots(store.read("group_snapshots"), now))
        _same(minutes.frame(), records_per_minute(store.read("group_snapshots")))
        _same(pairs.frame(), views.group_topics(store.read("member_assignments")))
        _same(modern.frame(), fleet_members(store.read("member_assignments")))
        assert not modern.frame().empty

    assert fold.frame().empty  # no table yet
    for table in ("group_snapshots", "member_assignments"):  # partitioned as the job's
        write_deltalake(
            str(root / table),
            schema(table).empty_table(),
            partition_by=list(TABLES[table].partition_by),
        )
    _history(root, 5, 3, now - timedelta(days=2))
    check()
    assert all("snapshot_date=" in f.path for f in store.files("group_snapshots")[1])
    files = len(DeltaTable(str(root / "group_snapshots")).file_uris())
    assert fold.files_read == files
    _history(root, 5, 1, now)  # one more day: one more file
    check()
    assert fold.files_read == files + 1
    read_before = fold.files_read
    assert fold.frame() is fold.frame()  # same version: nothing read, nothing combined
    assert fold.files_read == read_before
    for table in ("group_snapshots", "member_assignments"):
        DeltaTable(str(root / table)).optimize.compact()
    check()
    compacted = set(DeltaTable(str(root / "group_snapshots")).file_uris())
    assert fold.files_read <= read_before + len(compacted)
    # The history retention's delete of the oldest day, as upkeep does it.
    oldest = min(store.read("group_snapshots")["snapshot_date"])
    for table in ("group_snapshots", "member_assignments"):
        DeltaTable(str(root / table)).delete(f"snapshot_date = '{oldest}'")
    check()
    assert oldest not in set(fold.frame()["snapshot_date"])


def test_throughput_over_a_month_draws_a_days_worth_of_points_and_keeps_the_records() -> None:
    start = pd.Timestamp("2026-10-01", tz="UTC")
    minutes = pd.date_range(start, periods=30 * 1440, freq="1min")
    per_minute = pd.DataFrame(
        {"minute": minutes, "records": [1 + i % 7 for i in range(len(minutes))]}
    )
    none = pd.DataFrame(
        {c: pd.Series(dtype=object) for c in ("finding_id", "source", "detected_at")}
    )
    none["detected_at"] = pd.to_datetime(none["detected_at"], utc=True)
    month = views.throughput(per_minute, none, Filters())
    assert 700 <= len(month) <= 1440  # hours: 720 points, each records per minute on average
    assert month["records"].sum() * 60 == pytest.approx(per_minute["records"].sum())
    day = views.throughput(per_minute.tail(1440), none, Filters())
    assert len(day) == 1440 and day["records"].tolist() == per_minute["records"].tail(1440).tolist()


def test_a_groups_lag_history_is_read_from_its_partition_alone(tmp_path: Path) -> None:
    """``lag_history`` is partitioned by a hash of the group: one group's rows are read from
    its partition, the others not even opened (one of them is made unreadable to prove it)."""
    from groupwatch.tables import group_bucket

    root = tmp_path / "delta"
    now = datetime.now(UTC).replace(microsecond=0)
    groups = [f"grp-{i}" for i in range(40)]
    rows = [
        {"group": g, "topic": f"t{k % 2}", "observed_at": now - timedelta(seconds=15 * k),
         "partitions": 3, "lag_records": k, "lag_seconds": float(k), "status": "ok",
         "group_bucket": group_bucket(g)}
        for g in groups for k in range(5)
    ]  # fmt: skip
    sch = schema("lag_history")
    table = pa.table({f.name: [r[f.name] for r in rows] for f in sch}, schema=sch)
    write_deltalake(str(root / "lag_history"), table, partition_by=["group_bucket"])
    store = DeltaStore(root)
    whole = store.read("lag_history")
    mine = groups[7]
    broken = next(g for g in groups if group_bucket(g) != group_bucket(mine))
    folder = root / "lag_history" / f"group_bucket={group_bucket(broken)}"
    for data in folder.glob("*.parquet"):
        data.write_bytes(b"not parquet")
    got = store.read_rows("lag_history", "group", mine)
    _same(got, whole[whole["group"] == mine])
    assert len(got) == 5
    with pytest.raises(Exception):  # noqa: B017 - any error: the damaged partition is read
        store.read_rows("lag_history", "group", broken)


def test_rows_in_files_a_delta_rs_merge_wrote_are_found(tmp_path: Path) -> None:
    """A MERGE by delta-rs (the job's small batches) writes strings as ``string_view``, which
    pyarrow's scan filters cannot compare: a group's rows and a fold's filtered rows are still
    found in such files."""
    root = tmp_path / "delta"
    now = datetime.now(UTC).replace(microsecond=0)
    _history(root, 6, 1, now)
    path = str(root / "member_assignments")
    rows = [
        {"group": g, "member_id": f"{g}-x", "group_type": "consumer", "member_epoch": 3,
         "topics": ["m"], "source_partition": 1, "source_offset": 10**6 + i,
         "source_timestamp": now, "snapshot_date": now.date()}
        for i, g in enumerate(["h001", "merged-only"])
    ]  # fmt: skip
    sch = schema("member_assignments")
    source = pa.table({f.name: [r.get(f.name) for r in rows] for f in sch}, schema=sch)
    (
        DeltaTable(path)
        .merge(source, "t.source_offset = s.source_offset", "s", "t")
        .when_not_matched_insert_all()
        .execute()
    )
    merged = [f for f in DeltaTable(path).file_uris() if "part-" in f]
    views_of = {str(pa.parquet.read_schema(f).field("group").type) for f in merged}
    assert "string_view" in views_of  # what the test is about
    store = DeltaStore(root)
    got = store.read_rows("member_assignments", "group", "merged-only")
    assert got["member_id"].tolist() == ["merged-only-x"]
    whole = store.read("member_assignments")
    two = store.read_rows("member_assignments", "group", {"h001", "merged-only"})
    _same(two, whole[whole["group"].isin({"h001", "merged-only"})])
    fold = Fold(store, "member_assignments", fleet_members, MODERN_ROWS)
    _same(fold.frame(), fleet_members(store.read("member_assignments")))
    assert set(fold.frame()["member_id"]) >= {"merged-only-x", "h001-x"}
