"""What a real broker writes to ``__share_group_state``, read back and replayed.

A real share group (Kafka's Java ``KafkaShareConsumer``, explicit acknowledgement) on each of
the project's brokers, 4.3.1 and 4.4.0 (``any_broker``; the consumers are the same release's
clients, at ``share.version=2`` on 4.4.0): one consumer accepts every record of two partitions
but one, which it releases at each delivery until the broker archives it; more records arrive
while nobody consumes; a second consumer drains the topic (``groupwatch.share.ShareStateRun``).
Then every record of ``__share_group_state`` is read, decoded (none may fail, nor be read as a
newer Kafka's; nor any of ``__consumer_offsets``) and replayed up to the moment of each step,
where the state must say what the consumers did and what Kafka's Admin
(``listShareGroupOffsets``) said: the same start offset, the same lag.

In the same run a second share group's two consumers poll, acknowledge nothing and poll no more
while records wait: replayed up to that moment (both coordinators' topics) with the brokers' end
offsets then, each partition is ``share_partition_stalled`` at the start offset Admin reports,
naming the members the brokers describe as assigned it. Then that group is deleted (Admin
``deleteShareGroups``): its partitions' states are tombstoned, and the job's
``share_partition_state`` keeps no row of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groupwatch.cli import main
from groupwatch.detect import Analyzer, DetectorConfig
from groupwatch.detect.share.state import ARCHIVED, ShareStateBook
from groupwatch.protocol.command import decode_line
from groupwatch.protocol.jsonview import kafka_uuid
from groupwatch.protocol.specs import SHARE_STATE_TOPIC
from tests.jvm import run_java
from tests.realgroups import decode_dumped, dump_topic

pytestmark = [pytest.mark.broker, pytest.mark.oracle]

GROUP = "share-state-orders"
TOPIC = "share-state-orders"
PARTITIONS = 2
PER_PARTITION = 10
POISON = 3  # of partition 0
STALL_GROUP = "share-state-stalled"
STALL_TOPIC = "share-state-stalled"
HOLD_MS = 6000  # how long the stalled group's consumers hold their records unacknowledged
STALL_MS = 4000  # the stall threshold the test judges with (share_stall_ms)
MANY_BATCHES = 4  # at most about this many batches in the job's run in many


@pytest.fixture(scope="module")
def run(any_broker: tuple[str, str]) -> dict[str, Any]:
    version, broker = any_broker
    out = run_java(
        "groupwatch.share.ShareStateRun",
        broker,
        GROUP,
        TOPIC,
        str(PARTITIONS),
        str(PER_PARTITION),
        str(POISON),
        STALL_GROUP,
        STALL_TOPIC,
        str(HOLD_MS),
        timeout=240,
        kafka_version=version,
    )
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {
        "version": version,
        "broker": broker,
        "topic_id": next(e["topic_id"] for e in events if e["event"] == "topic"),
        "stall_topic_id": next(e["topic_id"] for e in events if e["event"] == "stall_topic"),
        "members": next(e["members"] for e in events if e["event"] == "members"),
        "accepted": next(e["accepted_partitions"] for e in events if e["event"] == "holding"),
        "offsets_dump": dump_topic(broker, "__consumer_offsets"),
        "deliveries": [e for e in events if e["event"] == "delivery"],
        "steps": {e["step"]: e for e in events if e["event"] == "step"},
        "deleted": [e["group"] for e in events if e["event"] == "deleted"],
        "dump": dump_topic(broker, SHARE_STATE_TOPIC),
    }


def _book_at(run: dict[str, Any], step: str) -> ShareStateBook:
    """The states as of the step: the records the state topic held when Admin answered."""
    ends = run["steps"][step]["state_end_offsets"]
    book = ShareStateBook()
    for line in run["dump"]:
        if line["offset"] < ends[str(line["partition"])]:
            book.add(decode_dumped(line))
    assert book.undecodable == 0
    return book


def test_every_record_the_broker_wrote_decodes(run: dict[str, Any]) -> None:
    records = [decode_dumped(line) for line in run["dump"]]
    ours = [r for r in records if r.group == GROUP]
    assert ours, "the broker wrote no share state for the group"
    assert [r.error for r in records if r.error is not None] == []
    assert {r.record_type for r in ours} >= {"share_snapshot", "share_update"}
    assert {(kafka_uuid(r.key.topic_id), r.key.partition) for r in ours} == {
        (run["topic_id"], p) for p in range(PARTITIONS)
    }
    # Kafka 4.3 writes the 4.2+ delivery-complete count in every update.
    assert all(
        r.value.delivery_complete_count >= 0 for r in ours if r.record_type == "share_update"
    )


def test_every_record_of_both_coordinators_topics_decodes_at_a_known_version(
    run: dict[str, Any],
) -> None:
    # Whatever the release writes, to either topic, is read whole: no error, none read as a
    # newer Kafka's (the share group's own records in __consumer_offsets included).
    records = [decode_dumped(line) for line in run["offsets_dump"] + run["dump"]]
    assert [(r.record_type, r.error) for r in records if r.error is not None] == []
    assert [(r.record_type, r.value_version) for r in records if r.newer is not None] == []
    share_types = {
        r.record_type for r in records if r.group == GROUP and r.topic != SHARE_STATE_TOPIC
    }
    assert {"share_group_metadata", "share_group_member_metadata"} <= share_types, share_types


@pytest.mark.parametrize("step", ["consumed", "produced", "drained"])
def test_start_offset_and_lag_equal_admins_at_each_step(run: dict[str, Any], step: str) -> None:
    book = _book_at(run, step)
    states = {s.key.partition: s for s in book.of_group(GROUP)}
    assert set(states) == set(range(PARTITIONS))
    at = run["steps"][step]
    for row in at["admin"]:
        s = states[row["partition"]]
        end = at["end_offsets"][str(row["partition"])]
        assert s.key.topic_id == run["topic_id"]
        assert (s.start_offset, s.lag(end)) == (row["start_offset"], row["lag"]), (step, row, s)
        assert s.leader_epoch == row["leader_epoch"]


def test_the_poison_record_is_archived_with_the_deliveries_the_consumer_saw(
    run: dict[str, Any],
) -> None:
    poison = [d for d in run["deliveries"] if (d["partition"], d["offset"]) == (0, POISON)]
    # The broker's default limit (group.share.delivery.count.limit) is five deliveries.
    assert [d["answer"] for d in poison] == ["release"] * 5
    assert [d["delivery_count"] for d in poison] == list(range(1, len(poison) + 1))
    consumed = {s.key.partition: s for s in _book_at(run, "consumed").of_group(GROUP)}
    p0 = consumed[0]
    assert p0.archived_ranges == ((POISON, POISON),)
    assert [b.delivery_count for b in p0.batches if b.state == ARCHIVED] == [len(poison)]
    assert p0.max_delivery_count == len(poison)
    assert p0.in_flight_records == 0
    assert consumed[1].archived_ranges == () and consumed[1].max_delivery_count == 1
    # Drained past it: the SPSO moved beyond the archived record, which leaves the state.
    drained = {s.key.partition: s for s in _book_at(run, "drained").of_group(GROUP)}
    assert drained[0].start_offset > POISON and drained[0].archived_ranges == ()


def test_the_deleted_groups_partitions_states_are_tombstoned(run: dict[str, Any]) -> None:
    """The stalled group deleted at the run's end (Admin ``deleteShareGroups``): the share
    coordinator wrote a tombstone of each partition's state it held, and a replay of the whole
    topic keeps no state of the group (the other group's stay)."""
    assert run["deleted"] == [STALL_GROUP]
    stall = [r for r in map(decode_dumped, run["dump"]) if r.group == STALL_GROUP]
    held = {(kafka_uuid(r.key.topic_id), r.key.partition) for r in stall if r.value is not None}
    gone = {(kafka_uuid(r.key.topic_id), r.key.partition) for r in stall if r.value is None}
    assert held and gone == held
    assert {t for t, _ in held} == {run["stall_topic_id"]}
    book = ShareStateBook()
    for line in run["dump"]:
        book.add(decode_dumped(line))
    assert list(book.of_group(STALL_GROUP)) == []
    assert {s.key.partition for s in book.of_group(GROUP)} == set(range(PARTITIONS))


def test_analyze_raises_the_archived_record_once_and_nothing_else(run: dict[str, Any]) -> None:
    """Both coordinators' topics through the analyzer: the share group's own records in
    ``__consumer_offsets`` (two consumers joining and leaving; its share state partition
    metadata names the topic id) and its state; the one archived record is the only finding
    above info."""
    broker = run["broker"]
    analyzer = Analyzer()
    lines = dump_topic(broker, "__consumer_offsets") + run["dump"]
    found = [f for line in lines for f in analyzer.feed(line)] + analyzer.finish()
    mine = [f for f in found if f.group == GROUP and f.severity != "info"]
    assert [(f.kind, f.topic, f.partition) for f in mine] == [
        ("share_records_archived", TOPIC, 0)
    ], [f.detail for f in mine]
    [f] = mine
    assert f.evidence["archived_offsets"] == [[POISON, POISON]]
    assert f.evidence["delivery_counts"] == [5]
    assert f"{TOPIC}-0 at offset(s) {POISON}:" in f.detail
    # The same records as `groupwatch decode` prints them: the same findings, the same name.
    decoded = Analyzer()
    again = [g for line in lines for g in decoded.feed(decode_line(json.dumps(line)))]
    again += decoded.finish()
    assert sorted(g.finding_id for g in again) == sorted(g.finding_id for g in found)
    assert [g.topic for g in again if g.kind == "share_records_archived"] == [TOPIC]


def test_analyze_with_the_broker_writes_share_lag_equal_to_admins(
    run: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``analyze --bootstrap-server --share-state``: the brokers name the topic id and give the
    end offsets; each share partition's lag is what Admin said after the drain."""
    broker = run["broker"]
    dump = tmp_path / "state.jsonl"
    dump.write_text("".join(json.dumps(line) + "\n" for line in run["dump"]), encoding="utf-8")
    out = tmp_path / "share.jsonl"
    args = ["analyze", str(dump), "--bootstrap-server", broker, "--share-state", str(out)]
    assert main(args) == 0
    capsys.readouterr()
    rows = {
        r["partition"]: r
        for r in map(json.loads, out.read_text().splitlines())
        if r["group"] == GROUP
    }
    drained = run["steps"]["drained"]
    for admin in drained["admin"]:
        row = rows[admin["partition"]]
        assert row["topic"] == TOPIC
        assert row["end_offset"] == drained["end_offsets"][str(admin["partition"])]
        assert (row["start_offset"], row["lag_records"]) == (admin["start_offset"], admin["lag"])


def test_consumers_that_stop_acknowledging_stall_their_partitions(run: dict[str, Any]) -> None:
    at = run["steps"]["stalled"]
    offsets, state = at["offsets_end_offsets"], at["state_end_offsets"]
    lines = [x for x in run["offsets_dump"] if x["offset"] < offsets[str(x["partition"])]]
    lines += [x for x in run["dump"] if x["offset"] < state[str(x["partition"])]]
    analyzer = Analyzer(DetectorConfig(share_stall_ms=STALL_MS))
    found = [f for line in lines for f in analyzer.feed(line)]
    # The records alone raise nothing: their stream time ends at the acknowledgement.
    assert [f for f in found if f.group == STALL_GROUP and f.severity != "info"] == []
    tid = run["stall_topic_id"]
    ends = {(tid, int(p)): end for p, end in at["end_offsets"].items()}
    found += analyzer.share_look(ends, at["time_ms"])
    # Admin: the first records of a partition accepted, the rest wait. (A partition nothing was
    # acknowledged of has no start offset written, and Admin reports none: not judged.)
    admin = {r["partition"]: r for r in at["admin"] if "start_offset" in r}
    assert set(admin) == set(run["accepted"]) and admin, at["admin"]
    assert all(r["lag"] > 0 for r in admin.values())
    assigned = {
        p: [
            m["member_id"]
            for m in sorted(run["members"], key=lambda m: m["member_id"])
            if p in m["partitions"]
        ]
        for p in range(PARTITIONS)
    }
    assert all(assigned.values()) and len(run["members"]) == 2
    stalls = [f for f in found if f.group == STALL_GROUP and f.severity != "info"]
    assert sorted(
        (f.kind, f.topic, f.partition, f.evidence["start_offset"], f.evidence["lag_records"])
        for f in stalls
    ) == [
        ("share_partition_stalled", STALL_TOPIC, p, r["start_offset"], r["lag"])
        for p, r in sorted(admin.items())
    ], [f.detail for f in stalls]
    for f in stalls:
        assert list(f.members) == assigned[f.partition] == f.evidence["members"]
        assert f.evidence["records_waiting_from"] == "end_offset"
        assert f.evidence["stalled_ms"] >= STALL_MS and f.evidence["topic_id"] == tid
    # Judged again, nothing new: raised once while the start offset stands.
    assert analyzer.share_look(ends, at["time_ms"] + 1000) == []


# --- the job over both topics ----------------------------------------------------------------


def _job(spark: Any, broker: str, root: Path, *extra: str) -> Any:
    from tests.realgroups import make_config, run_once

    cfg = make_config(broker, root, "validation.every_n_batches=0", *extra)
    run_once(spark, cfg)
    return cfg


def _rows(spark: Any, cfg: Any, name: str) -> list[dict[str, Any]]:
    return [
        r.asDict(recursive=True)
        for r in spark.read.format("delta").load(cfg.table_path(name)).collect()
    ]


@pytest.fixture(scope="module")
def job_tables(
    run: dict[str, Any],
    spark: Any,
    any_broker: tuple[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    """``groupwatch run --once`` over the broker (``source.share_state_topic`` at its default),
    in one batch and in many (``source.max_offsets_per_trigger``: the share state saved
    between them; by Spark's workers and writers), after the share groups' run."""
    broker = any_broker[1]
    one = _job(spark, broker, tmp_path_factory.mktemp("share-job-one"))
    # Many batches, the Python stage in Spark's workers and every table written by Spark (the
    # one-batch run's are on the driver, with delta-rs). Batches of 40 records (two alone),
    # or of a MANY_BATCHES-th of what the broker holds: the session's broker also holds the
    # records of every module that ran on it before, and a batch written by Spark costs
    # seconds.
    held = len(run["offsets_dump"]) + len(run["dump"])
    many = _job(
        spark,
        broker,
        tmp_path_factory.mktemp("share-job-many"),
        f"source.max_offsets_per_trigger={max(40, held // MANY_BATCHES)}",
        "job.driver_stage_rows=0",
        "delta.driver_write_rows=0",
    )
    commits = Path(many.checkpoint_path("groupwatch")) / "commits"
    batches = [p for p in commits.iterdir() if p.name.isdigit()]
    assert 2 <= len(batches) <= 3 * MANY_BATCHES, f"{len(batches)} batches of {held} records"
    names = ("share_partition_state", "share_partition_history", "findings", "quarantine")
    got: dict[str, Any] = {
        name: {t: _rows(spark, cfg, t) for t in names}
        for name, cfg in (("one", one), ("many", many))
    }
    got["configs"] = {"one": one, "many": many}
    return got


_STATE_COLUMNS = (
    "group",
    "topic",
    "partition",
    "start_offset",
    "state_epoch",
    "end_offset",
    "lag_records",
    "in_flight_records",
    "archived_records",
    "max_delivery_count",
)


@pytest.mark.spark
def test_the_job_keeps_each_share_partition_as_analyze_and_admin_see_it(
    run: dict[str, Any],
    job_tables: dict[str, Any],
    any_broker: tuple[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``share_partition_state``: one row per share partition of both share groups, equal to
    ``analyze --bootstrap-server --share-state`` over the same records, and the share lag
    Admin gave after the drain; ``share_partition_history`` holds a row per record."""
    broker = any_broker[1]
    dump = tmp_path / "state.jsonl"
    dump.write_text("".join(json.dumps(line) + "\n" for line in run["dump"]), encoding="utf-8")
    out = tmp_path / "share.jsonl"
    args = ["analyze", str(dump), "--bootstrap-server", broker, "--share-state", str(out)]
    assert main(args) == 0
    capsys.readouterr()
    want = {
        (r["group"], r["topic_id"], r["partition"]): r
        for r in map(json.loads, out.read_text().splitlines())
    }
    for name in ("one", "many"):
        got = {
            (r["group"], r["topic_id"], r["partition"]): r
            for r in job_tables[name]["share_partition_state"]
        }
        assert len(got) == len(job_tables[name]["share_partition_state"])  # one row each
        # The deleted group's rows went with its states' tombstones (in the one batch that
        # also held its states, and in a later batch than theirs, by Spark's MERGE).
        # (Other modules' share groups on this broker may be there too: judged by theirs.)
        groups = {k[0] for k in got}
        assert set(got) == set(want) and GROUP in groups and STALL_GROUP not in groups
        for k, row in got.items():
            assert {c: row[c] for c in _STATE_COLUMNS} == {c: want[k][c] for c in _STATE_COLUMNS}
            assert row["observed_at"] is not None and row["end_observed_at"] is not None
        history = job_tables[name]["share_partition_history"]
        assert len(history) == len(run["dump"])
        removed = {r["partition"] for r in history if r["group"] == STALL_GROUP and r["deleted"]}
        assert removed and removed <= set(range(PARTITIONS))
    drained = run["steps"]["drained"]
    for admin in drained["admin"]:
        [row] = [
            r
            for r in job_tables["one"]["share_partition_state"]
            if r["group"] == GROUP and r["partition"] == admin["partition"]
        ]
        assert (row["start_offset"], row["lag_records"]) == (admin["start_offset"], admin["lag"])


@pytest.mark.spark
def test_the_job_finds_the_poison_record_once_and_nothing_else(
    job_tables: dict[str, Any],
) -> None:
    for name in ("one", "many"):
        tables = job_tables[name]
        assert [q for q in tables["quarantine"] if q["source_topic"] == SHARE_STATE_TOPIC] == []
        mine = [f for f in tables["findings"] if f["group"] == GROUP and f["severity"] != "info"]
        assert [(f["kind"], f["topic"], f["partition"]) for f in mine] == [
            ("share_records_archived", TOPIC, 0)
        ], [f["detail"] for f in mine]
        evidence = json.loads(mine[0]["evidence"])
        assert evidence["archived_offsets"] == [[POISON, POISON]]
        assert f"{TOPIC}-0 at offset(s) {POISON}:" in mine[0]["detail"]
    assert sorted(f["finding_id"] for f in job_tables["one"]["findings"]) == sorted(
        f["finding_id"] for f in job_tables["many"]["findings"]
    )


@pytest.mark.spark
def test_a_share_state_topic_that_does_not_exist_does_not_stop_the_job(
    run: dict[str, Any], spark: Any, any_broker: tuple[str, str], tmp_path: Path
) -> None:
    """No share group ever (here: a share state topic nobody created, the broker creating no
    topic on a read): the job reads ``__consumer_offsets`` as before."""
    cfg = _job(spark, any_broker[1], tmp_path, "source.share_state_topic=no-share-state-here")
    snaps = _rows(spark, cfg, "group_snapshots")
    assert {s["group"] for s in snaps} >= {GROUP}
    assert _rows(spark, cfg, "share_partition_state") == []


@pytest.mark.spark
def test_a_restarted_job_shows_the_share_gauges_of_the_tables_at_once(
    run: dict[str, Any], spark: Any, job_tables: dict[str, Any]
) -> None:
    """A job started over the tables a run left sets the share gauges from
    ``share_partition_state`` before any batch (a share group at rest writes no state record
    that would set them): each (group, topic) the sums of its rows; the deleted group none."""
    from groupwatch.spark.metrics import JobMetrics
    from groupwatch.spark.query import GroupwatchQuery

    cfg = job_tables["configs"]["many"]
    metrics = JobMetrics()
    GroupwatchQuery.from_config(spark, cfg, metrics=metrics).ensure_tables()
    rows = job_tables["many"]["share_partition_state"]
    for name, column in (
        ("lag", "lag_records"),
        ("in_flight", "in_flight_records"),
        ("archived", "archived_records"),
    ):
        labels = {"group": GROUP, "topic": TOPIC}
        value = metrics.registry.get_sample_value(f"groupwatch_share_{name}_records", labels)
        assert value == sum(r[column] for r in rows if r["group"] == GROUP), name
        stalled = {"group": STALL_GROUP, "topic": STALL_TOPIC}
        assert (
            metrics.registry.get_sample_value(f"groupwatch_share_{name}_records", stalled) is None
        )
