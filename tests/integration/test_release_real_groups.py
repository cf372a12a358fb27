"""Real groups on each of the project's Kafka releases: every record the broker writes decodes.

On a 4.3.1 broker and on a 4.4.0 one (``any_broker``), Kafka's own Java client of the same
release runs a classic group (cooperative-sticky) and a KIP-848 group (the broker's ``uniform``
assignor): three members join one by one, the first leaves. Then every record of
``__consumer_offsets`` decodes without an error and at a version groupwatch knows (none read
as a newer Kafka's), and ``analyze`` raises nothing above info about either group.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

from groupwatch.detect import Analyzer, DetectorConfig
from groupwatch.detect.decoded import record_from_raw
from groupwatch_dev.broker import kafka_jars
from groupwatch_dev.demo.java_members import JavaGroupMembers
from groupwatch_dev.demo.traffic import create_topic, produce
from tests.realgroups import dump_consumer_offsets

pytestmark = pytest.mark.broker

PARTITIONS = 4


@dataclass(frozen=True)
class Run:
    version: str
    groups: dict[str, str]  # group -> protocol
    dump: list[dict[str, Any]]


@pytest.fixture(scope="module")
def run(any_broker: tuple[str, str]) -> Run:
    version, broker = any_broker
    tag = version.replace(".", "")
    topic = f"release-{tag}"
    create_topic(broker, topic, PARTITIONS)
    produce(broker, topic, [(None, b"r%d" % i) for i in range(40)])
    groups = {f"release-{tag}-classic": "classic", f"release-{tag}-848": "consumer"}
    # The release's own clients: the member host built against it, on its classpath.
    with JavaGroupMembers(broker, classpath=f"{kafka_jars(version)}/*") as members:
        for group, protocol in groups.items():
            assignor = "cooperative-sticky" if protocol == "classic" else "uniform"
            names = [f"{group}-{i}" for i in range(3)]
            for i, name in enumerate(names):
                members.join(name, group, [topic], assignor, protocol=protocol)
                members.wait_covered(names[: i + 1], PARTITIONS)
            members.leave(names[0])
            members.wait_covered(names[1:], PARTITIONS)
        assert members.errors() == []
    return Run(version, groups, dump_consumer_offsets(broker))


def test_every_record_the_release_writes_decodes_at_a_known_version(run: Run) -> None:
    records = [record_from_raw(line) for line in run.dump]
    ours = [r for r in records if r.group in run.groups]
    assert [(r.record_type, r.error) for r in records if r.error is not None] == []
    assert [(r.record_type, r.value_version) for r in records if r.newer is not None] == []
    kinds = Counter(r.record_type for r in ours)
    # The classic group's metadata and the KIP-848 group's own records, offsets of both.
    assert kinds["group_metadata"] and kinds["offset_commit"]
    assert {
        "consumer_group_metadata",
        "consumer_group_member_metadata",
        "consumer_group_target_assignment_member",
        "consumer_group_current_member_assignment",
    } <= set(kinds), kinds


def test_analyze_raises_nothing_above_info_and_no_newer_kafka(run: Run) -> None:
    analyzer = Analyzer(DetectorConfig())
    found = [f for line in run.dump for f in analyzer.feed(line)] + analyzer.finish()
    ours = [f for f in found if f.group in run.groups]
    serious = [f"{f.group} {f.kind}: {f.detail}" for f in ours if f.severity != "info"]
    assert serious == [], "\n".join(serious)
    assert [f.detail for f in found if f.kind == "newer_record_version"] == []
    classic = next(g for g, p in run.groups.items() if p == "classic")
    state = analyzer.states.get(classic)
    assert state is not None and state.last_generation is not None
    assert state.last_generation >= 4, "too few rebalances captured"
    modern = next(g for g, p in run.groups.items() if p == "consumer")
    assert analyzer.modern(modern) is not None
