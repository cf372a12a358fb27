"""Healthy KIP-848 consumer groups raise no alarm, in ``groupwatch analyze`` and in the job.

Seven groups of Kafka's Java client on ``group.protocol=consumer`` (``scenarios.py``) live on the
test broker at the same time: the uniform and the range server assignors, a client-side and a
broker-side regex with a matching topic created later, static members with a restart, a member
removed when it stops polling, and a classic group upgraded member by member.  With the groups
at rest, every ``__consumer_offsets`` partition they live on is carried past the moment every
check of theirs can be decided (a commit of a clock group, see ``_carry_clocks``); the topic is
then dumped once, analysed once and read by the job once.

The records must prove that each scenario happened (its record types, tombstones, MemberEpoch
-2, the conversion's GroupMetadata tombstone ...) and that each group ended at rest; then
neither ``analyze`` nor the job may raise anything above ``info`` for these groups.
``GROUPWATCH_MODERN_DUMP=FILE`` keeps a copy of the dump.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.structs import OffsetAndMetadata

from groupwatch_dev.demo.traffic import create_topic
from tests import verdicts
from tests.modern import records as rec
from tests.modern.members import ModernMembers, missing_harness
from tests.modern.scenarios import (
    FENCE_MAX_POLL_MS,
    FENCED,
    GROUPS,
    PREFIX,
    RANGE,
    REGEX_BROKER,
    REGEX_CLIENT,
    STATIC,
    UNIFORM,
    UPGRADE,
    GroupSpec,
    Timeline,
    produce_everywhere,
    run_groups,
)
from tests.realgroups import dump_consumer_offsets, make_config, run_once

pytestmark = [pytest.mark.fleet, pytest.mark.broker]

by_group = pytest.mark.parametrize("spec", GROUPS, ids=lambda s: s.group)
#: how often the clocks are carried forward again if a group wrote once more meanwhile
CLOCK_ROUNDS = 4


@dataclass(frozen=True)
class ModernRun:
    timelines: dict[str, Timeline] = field(repr=False)
    dump: Path
    records: rec.Dump = field(repr=False)
    seconds: float
    waited: float


# -- the clocks: a commit on each of the groups' partitions, after every deadline -------------
def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(group: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group`` (Kafka: ``Utils.abs(hash) % n``)."""
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def clock_group(partition: int, partitions: int) -> str:
    """A group id of our own that lives on ``partition``."""
    for i in range(100_000):
        name = f"{PREFIX}clock-{i}"
        if coordinator_partition(name, partitions) == partition:
            return name
    raise AssertionError(f"no clock group name for partition {partition}")


def offsets_topic_partitions(broker: str) -> int:
    admin = KafkaAdminClient(bootstrap_servers=broker)
    try:
        (topic,) = admin.describe_topics(["__consumer_offsets"])
        return len(topic["partitions"])
    finally:
        admin.close()


def _carry_clocks(broker: str, partitions: Mapping[int, int]) -> None:
    """Commit offset 0 of a topic of ours for one clock group per partition in ``partitions``
    (partition -> the stream time it must reach), once the wall clock has passed it."""
    wait = max(partitions.values()) / 1000 + 0.5 - time.time()
    if wait > 0:
        time.sleep(wait)
    count = offsets_topic_partitions(broker)
    admin = KafkaAdminClient(bootstrap_servers=broker)
    try:
        tp = TopicPartition(UNIFORM.group, 0)
        for p in sorted(partitions):
            errors = admin.alter_group_offsets(
                clock_group(p, count), {tp: OffsetAndMetadata(0, "clock", -1)}
            )
            assert all(e.errno == 0 for e in errors.values()), f"clock commit failed: {errors}"
    finally:
        admin.close()


def _until_decided(broker: str) -> tuple[list[dict[str, Any]], float]:
    """Dump ``__consumer_offsets`` once every group's partition is past its deadline."""
    started = time.monotonic()
    for _ in range(CLOCK_ROUNDS):
        raw = dump_consumer_offsets(broker)
        dump = rec.Dump.of(raw)
        home = rec.groups_by_partition(dump.decoded)
        clocks = rec.latest_by_partition(dump.decoded)
        needed: dict[int, int] = {}
        for spec in GROUPS:
            if spec.group not in home:
                continue  # a group that never formed fails its own tests
            due = rec.deadline(dump.group(spec.group)).time_ms
            p = home[spec.group]
            if clocks.get(p, 0) < due:
                needed[p] = max(needed.get(p, 0), due)
        if not needed:
            return raw, time.monotonic() - started
        _carry_clocks(broker, needed)
    raise AssertionError(f"the groups kept writing for {CLOCK_ROUNDS} rounds of clocks")


# -- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def modern_run(broker: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModernRun]:
    missing = missing_harness()
    if missing:
        pytest.fail(missing)  # never a skip: a missing harness is a broken setup
    work = tmp_path_factory.mktemp("modern")
    topics = {t: n for spec in GROUPS for t, n in spec.topics.items()}
    for topic, partitions in topics.items():
        create_topic(broker, topic, partitions)
    produce_everywhere(broker, topics)
    started = time.monotonic()
    host = ModernMembers(broker, work / "members.log")
    try:
        timelines = run_groups(host, broker)
        seconds = time.monotonic() - started
        # The members stay up: the groups are dumped at rest.
        raw, waited = _until_decided(broker)
        dump = verdicts.write_dump(raw, work, "GROUPWATCH_MODERN_DUMP")
        print(
            f"\nmodern groups: {len(GROUPS)} groups lived in {seconds:.0f}s, then {waited:.0f}s "
            f"until every check could be decided; dump: {dump} ({len(raw)} records)"
        )
        for tl in timelines:
            verdicts.print_life(f"{tl.spec.group}: {tl.spec.shows}", tl)
        run = ModernRun(
            {tl.spec.group: tl for tl in timelines}, dump, rec.Dump.of(raw), seconds, waited
        )
        _print_figures(run)
        yield run
    finally:
        host.close()


def _print_figures(run: ModernRun) -> None:
    total: dict[str, int] = defaultdict(int)
    members = 0
    print("  records per group and type (N- = tombstones):")
    for spec in GROUPS:
        records = run.records.group(spec.group)
        counts = rec.type_counts(records)
        for k, v in counts.items():
            total[k] += v
        ids = {rec.member_id(d) for d in records if d["record_type_id"] == 5} - {None}
        members += len(ids)
        shown = ", ".join(f"{k}: {counts[k]}" for k in sorted(counts, key=_type_order))
        print(f"    {spec.group} ({len(ids)} member ids): {shown}")
    shown = ", ".join(f"{k}: {total[k]}" for k in sorted(total, key=_type_order))
    print(
        f"    all {len(GROUPS)} groups ({members} member ids, {sum(total.values())} records): "
        f"{shown}"
    )


def _type_order(key: str) -> tuple[int, bool]:
    return int(key.rstrip("-")), key.endswith("-")


@dataclass(frozen=True)
class Analyzed:
    findings: verdicts.Findings = field(repr=False)
    awaiting: list[str]
    seconds: float


@pytest.fixture(scope="module")
def analyzed(modern_run: ModernRun, broker: str) -> Analyzed:
    """``groupwatch analyze DUMP --bootstrap-server BROKER``: findings per group, and what it
    said still awaited confirmation at the end of its input."""
    started = time.monotonic()
    analysis = verdicts.analyze(modern_run.dump, broker)
    seconds = time.monotonic() - started
    said = analysis.stderr.splitlines()
    awaiting = [x for x in said if "awaiting confirmation" in x]
    lines = len(modern_run.records.decoded)
    print(
        f"\ngroupwatch analyze: {lines} records in {seconds:.2f}s "
        f"({lines / max(seconds, 1e-9):.0f} records/s); summary: "
        + "; ".join(
            x.split(": ", 1)[1]
            for x in said
            if x.startswith("groupwatch analyze: ") and "awaiting" not in x
        )
    )
    return Analyzed(analysis.findings, awaiting, seconds)


@pytest.fixture(scope="module")
def job_tables(
    modern_run: ModernRun, broker: str, spark, tmp_path_factory: pytest.TempPathFactory
) -> verdicts.JobTables:  # type: ignore[no-untyped-def]
    """``groupwatch run --once`` on the broker's ``__consumer_offsets``, fresh tables."""
    cfg = make_config(broker, tmp_path_factory.mktemp("modern-job"))
    started = time.monotonic()
    run_once(spark, cfg)
    print(f"\ngroupwatch run --once: {time.monotonic() - started:.0f}s")
    return verdicts.read_job_tables(spark, cfg)


# -- what the records must show ------------------------------------------------------------------
def _of_type(records: Sequence[Mapping[str, Any]], t: int, tombstone: bool = False) -> list[Any]:
    return [d for d in records if d["record_type_id"] == t and d["tombstone"] == tombstone]


def _first_index(records: Sequence[Mapping[str, Any]], pred: Any) -> int:
    for i, d in enumerate(records):
        if pred(d):
            return i
    return -1


def _ids_of(run: ModernRun, spec: GroupSpec, member: str) -> list[str]:
    ids = run.timelines[spec.group].member_ids.get(f"{spec.group}-{member}") or []
    assert ids, f"{spec.group}-{member} reported no member id"
    return ids


def _check_uniform(run: ModernRun, spec: GroupSpec, records: list[dict[str, Any]]) -> None:
    assert {rec.data(d)["server_assignor"] for d in _of_type(records, 5)} == {"uniform"}
    late = _ids_of(run, spec, "c-late")[-1]
    joined = _first_index(records, lambda d: rec.member_id(d) == late)
    assert joined >= 0, "the late member's records are missing"
    revoking = [
        d
        for d in records[joined:]
        if d["record_type_id"] == 8
        and d["value"]
        and rec.data(d)["state"] == 1
        and rec.data(d)["partitions_pending_revocation"]
    ]
    assert revoking, "no member revoked partitions (UNREVOKED_PARTITIONS) after the late join"


def _check_range(run: ModernRun, spec: GroupSpec, records: list[dict[str, Any]]) -> None:
    assert {rec.data(d)["server_assignor"] for d in _of_type(records, 5)} == {"range"}
    names = run.records.topic_names()
    final = rec.replay(records)
    for topic in spec.topics:
        per_member = [
            sum(1 for tid, _ in rec.tps(c["assigned_partitions"]) if names.get(tid) == topic)
            for c in final.current.values()
        ]
        # the range assignor balances each topic on its own
        assert max(per_member) - min(per_member) <= 1, f"{topic} is split {per_member}"


def _check_regex(run: ModernRun, spec: GroupSpec, records: list[dict[str, Any]]) -> None:
    assert spec.late_topic is not None and spec.pattern is not None
    late = spec.late_topic[0]
    subscriptions = [rec.data(d) for d in _of_type(records, 5)]
    if spec is REGEX_BROKER:
        assert {s["subscribed_topic_regex"] for s in subscriptions} == {spec.pattern}
        assert all(not s["subscribed_topic_names"] for s in subscriptions)
        resolved = [rec.data(d)["topics"] for d in _of_type(records, rec.REGULAR_EXPRESSION)]
        assert resolved and late not in resolved[0] and late in resolved[-1], (
            f"the broker's resolutions of {spec.pattern}: {resolved}"
        )
    else:
        # the client resolves its pattern and sends the names it matched
        assert {s["subscribed_topic_regex"] for s in subscriptions} <= {"", None}
        names = [set(s["subscribed_topic_names"]) for s in subscriptions]
        assert late not in names[0] and late in names[-1], f"subscriptions: {names}"
        assert not _of_type(records, rec.REGULAR_EXPRESSION)
    names_by_id = run.records.topic_names()
    held = {
        names_by_id.get(tid)
        for c in rec.replay(records).current.values()
        for tid, _ in rec.tps(c["assigned_partitions"])
    }
    assert late in held, f"nobody holds the later topic {late}: {held}"


def _check_static(run: ModernRun, spec: GroupSpec, records: list[dict[str, Any]]) -> None:
    instances = {rec.data(d)["instance_id"] for d in _of_type(records, 5)}
    assert instances == {f"{spec.group}-pod-{m}" for m in "abc"}, instances
    away = _ids_of(run, spec, "b")[-1]
    back = _ids_of(run, spec, "b-restarted")[-1]
    left = _first_index(
        records,
        lambda d: (
            rec.member_id(d) == away
            and d["record_type_id"] == 8
            and bool(d["value"])
            and rec.data(d)["member_epoch"] == -2
        ),
    )
    assert left >= 0, f"no MemberEpoch -2 record of the closed static member {away}"
    held = rec.tps(rec.data(records[left])["assigned_partitions"])
    assert held, "the static member's -2 record holds no partitions"
    gone = {
        d["record_type_id"] for d in records[left:] if rec.member_id(d) == away and d["tombstone"]
    }
    assert gone >= {5, 7, 8}, f"the old member id's records were not removed: {gone}"
    rejoined = [
        d
        for d in records[left:]
        if rec.member_id(d) == back and d["record_type_id"] == 8 and d["value"]
    ]
    assert rejoined, "no current assignment of the restarted member"
    assert rec.tps(rec.data(rejoined[0])["assigned_partitions"]) == held, (
        "the restarted member did not get the partitions kept for its instance id"
    )


def _check_fenced(run: ModernRun, spec: GroupSpec, records: list[dict[str, Any]]) -> None:
    ids = _ids_of(run, spec, "b")
    mid = ids[0]
    meta = [rec.data(d) for d in _of_type(records, 5) if rec.member_id(d) == mid]
    assert meta and meta[0]["rebalance_timeout_ms"] == FENCE_MAX_POLL_MS
    removed = _first_index(records, lambda d: rec.member_id(d) == mid and d["tombstone"])
    assert removed >= 0, f"the member that stopped polling ({mid}) was never removed"
    removal = records[removed : removed + 4]
    gone = {d["record_type_id"] for d in removal if rec.member_id(d) == mid and d["tombstone"]}
    assert gone == {5, 7, 8}, f"its removal wrote tombstones of types {gone}"
    assert removal[-1]["record_type_id"] == 3 and not removal[-1]["tombstone"], (
        "the removal did not bump the group epoch"
    )
    back = ids[-1]
    assert any(
        rec.member_id(d) == back and d["record_type_id"] == 5 and not d["tombstone"]
        for d in records[removed:]
    ), "the member did not rejoin after polling again"


def _check_upgrade(run: ModernRun, spec: GroupSpec, records: list[dict[str, Any]]) -> None:
    converted = _first_index(records, lambda d: d["record_type_id"] == 2 and d["tombstone"])
    assert converted >= 0, "no GroupMetadata tombstone: the classic group was never converted"
    classic = [d for d in records[:converted] if d["record_type_id"] == 2 and d["value"]]
    assert classic and {d["value"]["protocol"] for d in classic} >= {"cooperative-sticky"}
    assert not any(d["record_type_id"] in rec.CONSUMER_GROUP_TYPES for d in records[:converted]), (
        "consumer-group records before the conversion"
    )
    assert not any(d["record_type_id"] == 2 for d in records[converted + 1 :]), (
        "GroupMetadata after the conversion (a downgrade)"
    )
    first = records[converted + 1 :]
    epoch = next(rec.data(d)["epoch"] for d in first if d["record_type_id"] == 3)
    assert epoch == classic[-1]["value"]["generation"], "the group epoch is not the generation"
    mixed = [d for d in _of_type(records, 5) if rec.data(d).get("classic_member_metadata")]
    assert mixed, "no classic member inside the consumer group during the upgrade"
    final = rec.replay(records)
    assert final.members and not any(
        m.get("classic_member_metadata") for m in final.members.values()
    ), "a classic member is left at the end"


CHECKS = {
    UNIFORM.group: _check_uniform,
    RANGE.group: _check_range,
    REGEX_CLIENT.group: _check_regex,
    REGEX_BROKER.group: _check_regex,
    STATIC.group: _check_static,
    FENCED.group: _check_fenced,
    UPGRADE.group: _check_upgrade,
}


def lived(run: ModernRun, spec: GroupSpec) -> None:
    tl = run.timelines[spec.group]
    assert tl.error is None, f"{spec.group} did not live its healthy life: {tl.error}"


@by_group
def test_records_show_the_scenario(spec: GroupSpec, modern_run: ModernRun) -> None:
    lived(modern_run, spec)
    records = modern_run.records.group(spec.group)
    present = {d["record_type_id"] for d in records if not d["tombstone"]}
    assert present >= {3, 5, 6, 7, 8}, f"{spec.group}: record types {sorted(present)}"
    CHECKS[spec.group](modern_run, spec, records)


@by_group
def test_group_ends_at_rest(spec: GroupSpec, modern_run: ModernRun) -> None:
    """The last records show the group at rest, held by the members still running."""
    lived(modern_run, spec)
    tl = modern_run.timelines[spec.group]
    records = modern_run.records.group(spec.group)
    problems = rec.steady_state_problems(records, modern_run.records.topic_names(), spec.all_topics)
    assert not problems, f"{spec.group} is not at rest:\n  " + "\n  ".join(problems)
    live = {tl.member_ids[n][-1] for n in tl.live}
    assert set(rec.replay(records).current) == live


@by_group
def test_clock_passed_every_deadline(spec: GroupSpec, modern_run: ModernRun, broker: str) -> None:
    """The group's partition reached the time every check of the group can be decided by,
    so a quiescent point at the end of the input judges everything."""
    lived(modern_run, spec)
    records = modern_run.records.group(spec.group)
    due = rec.deadline(records)
    p = records[0]["partition"]
    count = offsets_topic_partitions(broker)
    assert p == coordinator_partition(spec.group, count), "the partition formula is wrong"
    clock = rec.latest_by_partition(modern_run.records.decoded)[p]
    assert clock >= due.time_ms, f"partition {p} ends at {clock}, before {due}"


# -- the verdicts ------------------------------------------------------------------------------
@by_group
def test_analyze_raises_nothing_above_info(
    spec: GroupSpec, modern_run: ModernRun, analyzed: Analyzed
) -> None:
    lived(modern_run, spec)
    verdicts.verdict(
        spec.group, spec.shows, analyzed.findings.get(spec.group, []), "groupwatch analyze"
    )
    awaiting = [x for x in analyzed.awaiting if f" {spec.group} " in x]
    assert not awaiting, "still awaiting confirmation at the end:\n" + "\n".join(awaiting)


@pytest.mark.spark
@by_group
def test_job_raises_nothing_above_info(
    spec: GroupSpec, modern_run: ModernRun, job_tables: verdicts.JobTables
) -> None:
    lived(modern_run, spec)
    verdicts.job_verdict(spec.group, spec.shows, job_tables)
