"""The job's poll reads and writes its tables column by column (groupwatch.spark's lag_read,
lag_owners and lag_rows): the same values as a row at a time, over small tables written with
delta-rs."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import time
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from deltalake import write_deltalake

from groupwatch import config as config_mod
from groupwatch import tables
from groupwatch.delta.read import schema
from groupwatch.detect.lag.fleet import FleetKeeper, judge_rows, owners_table, rows_of
from groupwatch.detect.lag.judge import LagRules, judge
from groupwatch.detect.lag.model import Commit, EndOffset, Owner, PartitionLag
from groupwatch.spark.lag_owners import OwnerReader, read_owners
from groupwatch.spark.lag_read import read_commits
from groupwatch.spark.lag_rows import _arrow, partition_lag_table, timed
from groupwatch.tables import PARTITION_LAG

T0 = dt.datetime(2026, 11, 27, 6, 0, 0, 123456, tzinfo=dt.UTC)


def _ms(at: dt.datetime) -> int:
    return int(at.timestamp() * 1000)


def _write(root: Path, table: str, rows: list[dict[str, object]], mode: str = "append") -> None:
    """Rows (missing columns null) into the table as the job lays it out (its partitions)."""
    target = schema(table)
    full = [{f.name: r.get(f.name) for f in target} for r in rows]
    write_deltalake(
        str(root / table),
        pa.Table.from_pylist(full, schema=target),
        mode=mode,
        partition_by=list(tables.TABLES[table].partition_by) or None,
    )


def _config(root: Path) -> config_mod.Config:
    return config_mod.load(None, env={}, overrides=[f"delta.root={root}"])


def test_commits_are_read_with_their_times_in_milliseconds(tmp_path: Path) -> None:
    later = T0 + dt.timedelta(seconds=7, microseconds=999)
    _write(tmp_path, "committed_offsets", [
        {"group": "g", "topic": "t", "partition": 0, "committed_offset": 42, "leader_epoch": 3,
         "metadata_size": 5, "commit_time": later, "moved_time": T0},
        {"group": "g", "topic": "t", "partition": 1, "committed_offset": 7, "leader_epoch": None,
         "metadata_size": None, "commit_time": T0, "moved_time": None},
        # a row without an offset or a time is not a commit
        {"group": "g", "topic": "t", "partition": 2, "committed_offset": None,
         "commit_time": T0},
        {"group": "g", "topic": "t", "partition": 3, "committed_offset": 1, "commit_time": None},
    ])  # fmt: skip
    assert read_commits(_config(tmp_path)) == [
        Commit("g", "t", 0, 42, _ms(later), 3, 5, _ms(T0)),
        Commit("g", "t", 1, 7, _ms(T0), -1, 0, None),
    ]


def test_owners_are_the_open_intervals_with_each_members_newest_host(tmp_path: Path) -> None:
    _write(tmp_path, "partition_ownership", [
        {"group": "g", "topic": "t", "partition": 0, "member_id": "m1", "client_id": "c1",
         "from_generation": 4, "to_generation": None},
        {"group": "g", "topic": "t", "partition": 1, "member_id": "m1", "client_id": "c1",
         "from_generation": 4, "to_generation": None},
        {"group": "g", "topic": "t", "partition": 2, "member_id": "m2", "client_id": "c2",
         "from_generation": 2, "to_generation": 3},  # closed: nobody owns it now
        {"group": "h", "topic": "t", "partition": 0, "member_id": "m9", "client_id": None,
         "from_generation": 1, "to_generation": None},
    ])  # fmt: skip
    _write(tmp_path, "member_assignments", [
        {"group": "g", "member_id": "m1", "generation": 3, "client_host": "/10.0.0.1"},
        {"group": "g", "member_id": "m1", "generation": 4, "client_host": "/10.0.0.2"},
        {"group": "g", "member_id": "m1", "generation": 2, "client_host": "/10.0.0.3"},
    ])  # fmt: skip
    owners = read_owners(_config(tmp_path))
    m1 = Owner("m1", "c1", "/10.0.0.2", 4)
    assert owners == {
        "g": {("t", 0): m1, ("t", 1): m1},
        "h": {("t", 0): Owner("m9", None, None, 1)},
    }
    # The same as the columns the job's keeper judges.
    assert OwnerReader(_config(tmp_path)).read_table().equals(owners_table(owners))


def _row_by_row(rows: list[PartitionLag]) -> pa.Table:
    """The reference: each row's ``to_row``, its times as datetimes, through the catalogue."""
    out = []
    for r in rows:
        row = r.to_row()
        row["commit_time"] = tables.timestamp(r.commit_ms)
        row["observed_at"] = tables.timestamp(r.observed_ms)
        out.append(row)
    return _arrow(PARTITION_LAG, out)


def test_the_partition_lag_table_is_the_one_built_row_by_row() -> None:
    history = [EndOffset("o", 0, 0, 100, _ms(T0)), EndOffset("o", 0, 0, 200, _ms(T0) + 10_000)]
    owner = Owner("m-1", "billing-1", "/10.0.0.1", 7)
    rows = [
        judge(Commit("b", "o", 0, 150, _ms(T0) + 5_000), history, owner, LagRules()).row,
        judge(Commit("b", "o", 1, 5, _ms(T0) + 5_000), [], None, LagRules()).row,
        judge(Commit("c", "o", 0, 200, _ms(T0)), history, None, LagRules(), stale=True).row,
    ]
    assert partition_lag_table(rows).equals(_row_by_row(rows))
    assert partition_lag_table([]).equals(_row_by_row([]))


def test_the_keepers_columns_are_the_table_built_row_by_row() -> None:
    """``timed``: the fleet keeper's columns (times as epoch ms) as ``partition_lag``."""
    keeper = FleetKeeper(LagRules())
    keeper.observe([EndOffset("o", 0, 0, 100, _ms(T0))])
    keeper.observe([EndOffset("o", 0, 0, 200, _ms(T0) + 10_000)])
    owner = Owner("m-1", "billing-1", "/10.0.0.1", 7)
    commits = [
        Commit("b", "o", 0, 150, _ms(T0) + 5_000),
        Commit("b", "o", 1, 5, _ms(T0) + 5_000),  # never observed: nulls
        Commit("c", "o", 0, 200, _ms(T0)),
    ]
    result = judge_rows(keeper, commits, {"b": {("o", 0): owner}}, stale=True)
    rows = rows_of(result.table)
    assert [r.lag_records for r in rows] == [50, None, 0] and rows[0].owner == owner
    assert timed(result.table).equals(_row_by_row(rows))


@pytest.mark.parametrize("in_process", [False, True])
def test_a_slow_poll_stretches_the_interval_and_a_fast_one_restores_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    in_process: bool,
) -> None:
    """Judged in the driver, a slow poll keeps the next one off for twice its time (half of
    the interpreter stays the batches'); judged in a process of its own, for its own time
    only (one poll at a time, the next starting as this one ends)."""
    from groupwatch.detect.lag.poll import PollResult
    from groupwatch.spark.lag_judge import Judged
    from groupwatch.spark.lag_poller import LagPoller

    cfg = config_mod.load(
        None,
        env={},
        overrides=[
            f"delta.root={tmp_path}",
            "lag.poll_seconds=1",
            f"lag.judge_process={'true' if in_process else 'false'}",
        ],
    )
    poller = LagPoller(None, cfg)  # type: ignore[arg-type]  # the poll itself is replaced
    took = iter([1.5, 0.2])

    def judge(*_: object) -> Judged:
        time.sleep(next(took))
        return Judged(PollResult([], [], [], []), [])

    monkeypatch.setattr(poller, "_judge", judge)
    monkeypatch.setattr(poller, "_write", lambda *_: None)

    def poll() -> None:
        judged = poller.judge_due()
        assert judged is not None
        poller.write(judged)

    assert poller.due() and poller.interval() == 1.0
    with caplog.at_level("INFO", logger="groupwatch.job"):
        poll()
        if in_process:
            # the poll's own time, not twice it: due as soon as it ended
            assert 1.5 <= poller.interval() < 2.0 and poller.due()
            assert "polls are 2 s apart until one takes less than lag.poll_seconds" in caplog.text
        else:
            # lag.poll_seconds have passed since the poll began, twice its time not yet
            assert poller.interval() >= 3.0 and not poller.due()
            assert "polls are 3 s apart until one takes less than half of" in caplog.text
            time.sleep(1.7)
            assert poller.due()
        poll()
        assert poller.interval() == 1.0
        assert "apart again" in caplog.text


def test_the_notifier_resolves_the_same_lag_alerts_from_the_alerting_rows_alone() -> None:
    """The job hands the notifier only the alerting partitions of a poll (``alerting_rows``):
    the alerts that resolve, and those that stay open, are those of the whole table."""
    from groupwatch.detect.findings import Finding, Source
    from groupwatch.notify import Notifier, NotifierConfig
    from groupwatch.notify.routing import Rule
    from groupwatch.rows.findings import finding_row
    from groupwatch.spark.lag_rows import alerting_rows, lag_row

    def row(partition: int, status: str) -> PartitionLag:
        return PartitionLag(
            "g",
            "t",
            partition,
            5,
            0,
            9,
            4,
            1.0,
            False,
            status,
            None,
            1,  # type: ignore[arg-type]
        )

    kinds = ["consumer_stopped", "consumer_stalled", "offset_rewound", "consumer_lagging"] * 2
    findings = [
        finding_row(Finding(kind=k, group="g", generation=None, detail="d",
                            source=Source(timestamp=0), topic="t", partition=p,
                            id_extra=str(p)), T0)
        for p, k in enumerate(kinds)
    ]  # fmt: skip
    # Partition by partition: still alerting as opened, another alerting status, ok, idle,
    # and gone from the table.
    now = [row(0, "stopped"), row(1, "stopped"), row(2, "ok"), row(3, "idle"), row(4, "stopped")]
    now += [row(5, "stalled"), row(6, "rewound"), row(9, "lagging")]
    outcomes = []
    for rows in ([lag_row(r) for r in now], alerting_rows(now)):
        n = Notifier(NotifierConfig(rules=(Rule("all"),)))
        n.process(findings)
        events = n.process([], [], rows, whole_lag=True)
        outcomes.append(
            (sorted(e.finding_id for e in events), sorted(a.finding_id for a in n.active()))
        )
    assert outcomes[0] == outcomes[1]
    resolved, still = outcomes[0]
    assert len(resolved) == 4 and len(still) == 4  # partitions 1, 2, 3, 7 end; 0, 4, 5, 6 hold


def test_a_partitions_lag_row_is_its_row_in_the_table() -> None:
    """``lag_row`` (what the notifier is handed) holds the values ``partition_lag`` is written
    with, times and a missing owner included."""
    from groupwatch.spark.lag_rows import alerting_rows, lag_row

    history = [EndOffset("o", 0, 0, 100, _ms(T0)), EndOffset("o", 0, 0, 200, _ms(T0) + 10_000)]
    owner = Owner("m-1", "billing-1", "/10.0.0.1", 7)
    rows = [
        judge(Commit("b", "o", 0, 150, _ms(T0) + 5_000), history, owner, LagRules()).row,
        judge(Commit("b", "o", 1, 5, _ms(T0) + 5_000), [], None, LagRules()).row,
        judge(Commit("c", "o", 0, 200, _ms(T0)), history, None, LagRules(), stale=True).row,
    ]
    rows.append(dataclasses.replace(rows[0], partition=1, status="stopped"))
    typed = [lag_row(r) for r in rows]
    assert [dataclasses.asdict(t) for t in typed] == partition_lag_table(rows).to_pylist()
    assert typed[1].owner_member is None and typed[1].end_offset is None
    assert typed[0].commit_time == tables.timestamp(_ms(T0) + 5_000)
    assert alerting_rows(rows) == typed[3:]


def test_the_consumers_answer_is_read_back_partition_by_partition() -> None:
    """``endOffsets``' text: a topic name may hold ``-`` and digits; the partition is the
    number after its last ``-``."""
    from groupwatch.spark.lag_answer import parse_offsets, partitions_json

    text = "{orders-eu-2024-12=41250, a.b_c-0=0, t-1=-1}"
    assert parse_offsets(text) == {("orders-eu-2024", 12): 41250, ("a.b_c", 0): 0, ("t", 1): -1}
    assert parse_offsets("{}") == {}
    kept = [("orders-eu-2024", 12), ("orders-eu-2024", 3), ("t", 0)]
    assert json.loads(partitions_json(kept)) == {"orders-eu-2024": [12, 3], "t": [0]}


def _interval(
    partition: int, member: str, since: int, until: int | None = None
) -> dict[str, object]:
    return {"group": "g", "topic": "t", "partition": partition, "member_id": member,
            "client_id": f"c-{member}", "from_generation": since,
            "to_generation": until}  # fmt: skip


def _member(member: str, generation: int | None, host: str, day: int = 1) -> dict[str, object]:
    return {"group": "g", "member_id": member, "generation": generation, "client_host": host,
            "snapshot_date": dt.date(2026, 11, day)}  # fmt: skip


def test_owners_read_poll_after_poll_are_those_of_a_whole_reading(tmp_path: Path) -> None:
    """The job's reader reads each ``member_assignments`` file once and keeps the hosts of the
    owners: poll after poll it gives what a reading of the whole tables gives, through
    rebalances, a member whose row lands a poll before its interval, and compaction."""
    from deltalake import DeltaTable

    from groupwatch.spark.lag_owners import OwnerReader

    cfg = _config(tmp_path)
    reader = OwnerReader(cfg)
    intervals = [_interval(0, "m1", 4), _interval(1, "m2", 4)]
    _write(tmp_path, "partition_ownership", intervals, mode="overwrite")
    _write(tmp_path, "member_assignments", [
        _member("m1", 4, "/h1"), _member("m2", 4, "/h2"), _member("m3", 4, "/h3"),
    ])  # fmt: skip

    def poll() -> dict[str, dict[tuple[str, int], Owner]]:
        owners = reader.read()
        assert owners == read_owners(cfg)
        return owners

    assert poll()["g"][("t", 1)] == Owner("m2", "c-m2", "/h2", 4)
    assert reader.rows_read == 3 and set(reader.hosts) == {("g", "m1"), ("g", "m2"), ("g", "m3")}
    # Nothing new: no file read again; m3 (no partition, not just read) is forgotten.
    poll()
    assert reader.rows_read == 0 and set(reader.hosts) == {("g", "m1"), ("g", "m2")}
    # A rebalance: m2 hands partition 1 to m4, whose row is committed a poll before its
    # interval; m1 keeps partition 0 and moves host.
    _write(
        tmp_path, "member_assignments", [_member("m1", 5, "/h1b", 2), _member("m4", 5, "/h4", 2)]
    )
    poll()
    intervals = [_interval(0, "m1", 4), _interval(1, "m2", 4, 5), _interval(1, "m4", 5)]
    _write(tmp_path, "partition_ownership", intervals, mode="overwrite")
    owners = poll()
    assert owners["g"] == {("t", 0): Owner("m1", "c-m1", "/h1b", 4),
                           ("t", 1): Owner("m4", "c-m4", "/h4", 5)}  # fmt: skip
    # An older row read later (a backlog) does not win over the newest generation.
    _write(tmp_path, "member_assignments", [_member("m4", 3, "/old", 1)])
    assert poll()["g"][("t", 1)].host == "/h4"
    # Compaction rewrites the files: their rows are read again, with the same outcome.
    DeltaTable(str(tmp_path / "member_assignments")).optimize.compact()
    poll()
    assert reader.rows_read > 0
    poll()
    assert reader.rows_read == 0


def test_a_poll_judges_with_a_short_switch_interval_and_restores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch beside a poll judged in a driver thread waits for the interpreter after each JVM
    call: up to the switch interval, which the poll shortens while it judges and gives back
    after, even on failure (judged in a process of its own, the driver's is left alone)."""
    import sys

    from groupwatch.detect.lag.poll import PollResult
    from groupwatch.spark.lag_judge import Judged
    from groupwatch.spark.lag_poller import POLL_SWITCH_INTERVAL, LagPoller

    cfg = config_mod.load(
        None, env={}, overrides=[f"delta.root={tmp_path}", "lag.judge_process=false"]
    )
    poller = LagPoller(None, cfg)  # type: ignore[arg-type]  # the poll itself is replaced
    seen: list[float] = []

    def judge(*_: object) -> Judged:
        seen.append(sys.getswitchinterval())
        if len(seen) == 2:
            raise RuntimeError("the brokers went away")
        return Judged(PollResult([], [], [], []), [])

    monkeypatch.setattr(poller, "_judge", judge)
    before = sys.getswitchinterval()
    assert before > POLL_SWITCH_INTERVAL
    assert poller.judge_due() is not None
    poller._polled_at = None
    with pytest.raises(RuntimeError):
        poller.judge_due()
    assert seen == pytest.approx([POLL_SWITCH_INTERVAL, POLL_SWITCH_INTERVAL])
    assert sys.getswitchinterval() == before
    default = config_mod.load(None, env={}, overrides=[f"delta.root={tmp_path}"])
    apart = LagPoller(None, default)  # type: ignore[arg-type]  # the poll itself is replaced
    monkeypatch.setattr(apart, "_judge", judge)
    seen.clear()
    assert apart.judge_due() is not None
    assert seen == [before]


def test_the_partitions_asked_for_are_those_committed_to_in_order() -> None:
    """``committed_partitions`` (columns) is the keys' ``by_topic(sorted(...))``, a partition
    once however many groups commit to it, topics in code-point order (names beyond ASCII
    too)."""
    import random

    from groupwatch.detect.lag.fleet import commits_table, floors_of
    from groupwatch.spark.lag_answer import by_topic, committed_partitions

    rng = random.Random(7)
    topics = ["orders", "Orders", "zé", "z", "ünï", "a-1", "a_1", "日本", "🙂x"]
    for _ in range(30):
        commits = [
            Commit(f"g{rng.randrange(5)}", rng.choice(topics), rng.randrange(12), 5, 0)
            for _ in range(rng.randrange(0, 80))
        ]
        table = commits_table(commits)
        want = by_topic(sorted(floors_of(table)))
        assert committed_partitions(table) == want
        assert list(want) == sorted({c.topic for c in commits})
