"""Healthy groups of real clients while the cluster goes through everyday operations: partitions
added under a group, a topic deleted under a group that keeps it subscribed.

* **Partitions added** (Admin ``createPartitions``, 4 -> 8) under a Java cooperative-sticky group
  and a librdkafka range group.  Each generation must be judged by the count that held when it
  was written: before the expansion 4 (what the leaders assigned), after it 8.  A Java leader
  sees new partitions at its next metadata refresh (``metadata.max.age.ms``, 5 minutes by
  default); a member joining with a topic new to the group makes it refresh at once, which the
  test uses instead of waiting.  librdkafka's leader asks for metadata before it assigns, so a
  member joining is enough.
* **A topic deleted** under a Java classic ``range`` group: the Java client keeps the topic in
  its subscription until restarted, and its leader assigns nothing of it.  The topic is missing
  (``subscribed_topic_missing``, info), not its partitions unassigned.

Ground truth is what the clients report they own: every partition exactly once before and after
the expansion, nothing at all after the deletion (and no client error).  ``groupwatch analyze``
with and without ``--bootstrap-server`` (which sees today's counts: 8 partitions, no deleted
topic) and the job must raise nothing above info and agree finding for finding.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient, NewPartitions

from groupwatch_dev.demo.traffic import create_topic, produce
from tests import verdicts
from tests.fleet.clients import Fleet, JavaMember, Member, wait_covered
from tests.realgroups import dump_consumer_offsets, make_config, run_once

pytestmark = [pytest.mark.broker]

JAVA_GROWS = "everyday-java-coop-grows"
RDKAFKA_GROWS = "everyday-rdkafka-range-grows"
JAVA_DELETED = "everyday-java-range-deleted"
GROUPS = (JAVA_GROWS, RDKAFKA_GROWS, JAVA_DELETED)
#: A topic new to the Java group: a member subscribing to it makes the leader refresh metadata.
NEW_TO_THE_GROUP = "everyday-extra"


@dataclass
class Everyday:
    dump: Path
    #: wall-clock ms of the expansion and of the deletion (the brokers' clock: same machine)
    expanded_ms: int
    deleted_ms: int
    notes: list[str] = field(default_factory=list)


def _admin(broker: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=broker)


def _wait_owns_nothing(members: list[Member], what: str, timeout: float = 90.0) -> float:
    start = time.monotonic()
    while any(m.owned() for m in members):
        owned = {m.name: sorted(m.owned()) for m in members}
        assert time.monotonic() - start < timeout, f"{what}: members still own {owned}"
        time.sleep(0.2)
    return time.monotonic() - start


def _wait_generation_after(
    broker: str, group: str, after_ms: int, members: int, timeout: float = 90.0
) -> float:
    """Seconds until ``group`` has a completed generation of ``members`` written after
    ``after_ms``."""
    from groupwatch.detect.decoded import decode_raw

    start = time.monotonic()
    while True:
        for line in dump_consumer_offsets(broker):
            d = decode_raw(line)
            value = d.get("value") if d.get("group") == group else None
            if (
                d.get("record_type") == "group_metadata"
                and value
                and len(value.get("members") or ()) == members
                and int(line["timestamp"]) >= after_ms
            ):
                return time.monotonic() - start
        assert time.monotonic() - start < timeout, f"{group}: no generation after {after_ms}"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def everyday(broker: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Everyday]:
    work = tmp_path_factory.mktemp("everyday")
    topics = {JAVA_GROWS: 4, RDKAFKA_GROWS: 4, JAVA_DELETED: 4, NEW_TO_THE_GROUP: 1}
    for topic, partitions in topics.items():
        create_topic(broker, topic, partitions)
        produce(broker, topic, [(b"k%d" % i, b"v%d" % i) for i in range(40)])
    notes: list[str] = []
    fleet = Fleet(broker, work)
    try:
        java: list[Member] = []
        rdkafka: list[Member] = []
        doomed: list[Member] = []
        # One member at a time: several generations before the expansion and the deletion.
        for i in range(2):
            java.append(
                fleet.java(
                    f"{JAVA_GROWS}-{i}", JAVA_GROWS, [JAVA_GROWS], "cooperative-sticky", None
                )
            )
            rdkafka.append(
                fleet.python(
                    "confluent",
                    f"{RDKAFKA_GROWS}-{i}",
                    RDKAFKA_GROWS,
                    [RDKAFKA_GROWS],
                    "range",
                    None,
                )
            )
            doomed.append(
                fleet.java(f"{JAVA_DELETED}-{i}", JAVA_DELETED, [JAVA_DELETED], "range", None)
            )
            for members, what in ((java, "java"), (rdkafka, "rdkafka"), (doomed, "doomed")):
                took = wait_covered(members, 4, what=what)
                notes.append(f"{what}: {len(members)} member(s) own all 4 ({took:.1f}s)")

        admin = _admin(broker)
        try:
            expanded_ms = int(time.time() * 1000)
            admin.create_partitions({t: NewPartitions(8) for t in (JAVA_GROWS, RDKAFKA_GROWS)})
            produce(broker, JAVA_GROWS, [(b"n%d" % i, b"new") for i in range(40)])
            java.append(
                fleet.java(
                    f"{JAVA_GROWS}-2",
                    JAVA_GROWS,
                    [JAVA_GROWS, NEW_TO_THE_GROUP],
                    "cooperative-sticky",
                    None,
                )
            )
            rdkafka.append(
                fleet.python(
                    "confluent", f"{RDKAFKA_GROWS}-2", RDKAFKA_GROWS, [RDKAFKA_GROWS], "range", None
                )
            )
            took = wait_covered(java, 8 + 1, what="java after the expansion")
            notes.append(f"java: 8 + 1 covered after the expansion in {took:.1f}s")
            took = wait_covered(rdkafka, 8, what="rdkafka after the expansion")
            notes.append(f"rdkafka: 8 covered after the expansion in {took:.1f}s")

            deleted_ms = int(time.time() * 1000)
            admin.delete_topics([JAVA_DELETED])
            took = _wait_owns_nothing(doomed, "after the deletion")
            notes.append(f"doomed: own nothing {took:.1f}s after the deletion")
            # The members drop a deleted topic's partitions as soon as their metadata shows
            # it gone, before their group completes the rebalance that follows; the pod
            # below joins only once that generation is written, so it is one of its own.
            took = _wait_generation_after(broker, JAVA_DELETED, deleted_ms, members=2)
            notes.append(f"doomed: a generation of 2 written {took:.1f}s after the deletion")
            # A pod of the consumer is redeployed meanwhile: still subscribed, it joins a new
            # generation of the group, which still gets nothing.
            joined_ms = int(time.time() * 1000)
            joiner = fleet.java(f"{JAVA_DELETED}-2", JAVA_DELETED, [JAVA_DELETED], "range", None)
            assert isinstance(joiner, JavaMember)
            joiner.host.wait_member_id(joiner.name)
            doomed.append(joiner)
            # Owning nothing is true from the start; the generation the pod joined is what
            # the verdicts read, so the members leave only once it is written (a loaded
            # machine once took longer than the members' last seconds to complete it).
            took = _wait_generation_after(broker, JAVA_DELETED, joined_ms, members=3)
            notes.append(f"doomed: a generation of 3 written {took:.1f}s after the pod joined")
            took = _wait_owns_nothing(doomed, "after the redeployed pod joined")
            notes.append(f"doomed: a third member joined, all own nothing ({took:.1f}s)")
        finally:
            admin.close()
        time.sleep(2.0)  # the members keep running a little, as in production
        for m in [*java, *rdkafka, *doomed]:
            assert not m.problems(), f"{m.name} reported {m.problems()}"
        for m in [*java, *rdkafka, *doomed]:
            m.leave()
    finally:
        fleet.close()
    records = dump_consumer_offsets(broker)
    dump = verdicts.write_dump(records, work, "GROUPWATCH_EVERYDAY_DUMP")
    print("\n" + "\n".join(notes))
    yield Everyday(dump, expanded_ms, deleted_ms, notes)


def _analyze(dump: Path, *args: str) -> verdicts.Findings:
    from groupwatch.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["analyze", str(dump), *args]) == 0, err.getvalue()
    found: verdicts.Findings = {}
    for line in out.getvalue().splitlines():
        f = json.loads(line)
        found.setdefault(f["group"], []).append(f)
    return found


@pytest.fixture(scope="module")
def analyzed(everyday: Everyday, broker: str) -> dict[str, verdicts.Findings]:
    return {
        "analyze --bootstrap-server": verdicts.analyze(everyday.dump, broker).findings,
        "analyze": _analyze(everyday.dump),
    }


def _ids(findings: list[dict[str, Any]]) -> list[tuple[str, str, int | None]]:
    return sorted((f["finding_id"], f["kind"], f["generation"]) for f in findings)


@pytest.mark.parametrize("group", GROUPS)
def test_analyze_raises_nothing_above_info_with_or_without_the_brokers(
    group: str, analyzed: dict[str, verdicts.Findings]
) -> None:
    for what, found in analyzed.items():
        verdicts.verdict(group, "everyday operations", found.get(group, []), what)
    with_brokers, alone = (analyzed[k].get(group, []) for k in analyzed)
    assert _ids(with_brokers) == _ids(alone)


@pytest.mark.parametrize("group", [JAVA_GROWS, RDKAFKA_GROWS])
def test_generations_before_an_expansion_are_judged_by_their_own_count(
    group: str, everyday: Everyday, analyzed: dict[str, verdicts.Findings]
) -> None:
    """Re-running the assignor on 8 partitions for a generation that had 4 would diverge."""
    for what, found in analyzed.items():
        before = [
            f
            for f in found.get(group, [])
            if f["source"]["timestamp"] < everyday.expanded_ms
            and f["kind"] in ("sticky_divergence", "unassigned_partitions")
        ]
        assert not before, f"{what}: " + "\n".join(verdicts.describe(f) for f in before)


def test_a_deleted_topic_still_subscribed_is_missing_not_unassigned(
    everyday: Everyday, analyzed: dict[str, verdicts.Findings]
) -> None:
    for what, found in analyzed.items():
        missing = [
            f for f in found.get(JAVA_DELETED, []) if f["kind"] == "subscribed_topic_missing"
        ]
        assert missing, f"{what} did not say the deleted topic is missing"
        assert {f["topic"] for f in missing} == {JAVA_DELETED}
        assert all(f["source"]["timestamp"] >= everyday.deleted_ms for f in missing)
        first = min(missing, key=lambda f: f["generation"])
        assert len(first["members"]) == 2
        assert any("before" in r for r in first["evidence"]["reasons"])
        # Still missing in the generation the redeployed pod joined, since the same generation
        # (and in any the members' leaving completed after it: how many does is timing).
        joined = [f for f in missing if len(f["members"]) == 3]
        assert joined and all(f["generation"] > first["generation"] for f in joined), missing
        later = [f for f in missing if f is not first]
        assert all(f["evidence"]["since_generation"] == first["generation"] for f in later)


@pytest.mark.spark
def test_the_job_agrees_with_analyze_finding_for_finding(
    spark,
    everyday: Everyday,
    analyzed: dict[str, verdicts.Findings],
    broker: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:  # type: ignore[no-untyped-def]
    cfg = make_config(broker, tmp_path_factory.mktemp("everyday-job"))
    run_once(spark, cfg)
    job = verdicts.read_job_tables(spark, cfg)
    for group in GROUPS:
        verdicts.job_verdict(group, "everyday operations", job)
        ours = _ids(analyzed["analyze"].get(group, []))
        assert _ids(job.findings.get(group, [])) == ours, group
    assert any(f["kind"] == "subscribed_topic_missing" for f in job.findings[JAVA_DELETED])
