"""No false positives on records captured from real consumer groups on the real broker.

Real kafka-python groups for every protocol (range, roundrobin, sticky, cooperative-sticky)
join, scale out, lose a member and restart one; a static group restarts a member under its
instance id.  ``__consumer_offsets`` is read directly (kafka-python, ``assign()`` on every
partition), dumped as ``groupwatch decode`` input lines and analysed: nothing above info.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from groupwatch_dev.demo.java_members import JavaGroupMembers
from groupwatch_dev.demo.traffic import create_topic, produce
from tests.realgroups import dump_consumer_offsets

pytestmark = pytest.mark.broker

TOPIC = "analyze-orders"
PARTITIONS = 6
PROTOCOLS = ("range", "roundrobin", "sticky", "cooperative-sticky")


def _lifecycle(members: JavaGroupMembers, group: str, assignor: str, static: bool = False) -> None:
    """Join one by one to 3 members, one leaves, one restarts (a new client, same id if static).

    Kafka's own Java client: kafka-python's leader assigns nothing in a group's first generation
    (it has no topic metadata yet) and fixes it one rebalance later, which groupwatch rightly
    reports as unassigned partitions; that is a client quirk, not a healthy group.
    """
    names = [f"{group}-{i}" for i in range(3)]

    def start(name: str, i: int) -> None:
        instance = f"{group}-pod-{i}" if static else None
        members.join(name, group, [TOPIC], assignor, instance_id=instance)

    for i, name in enumerate(names):
        start(name, i)
        members.wait_covered(names[: i + 1], PARTITIONS)
    members.leave(names[0])
    members.wait_covered(names[1:], PARTITIONS)
    members.leave(names[1])
    members.wait_covered(names[2:], PARTITIONS)
    start(names[1] + "-restarted", 1)
    members.wait_covered([names[2], names[1] + "-restarted"], PARTITIONS)
    time.sleep(1.0)
    members.leave(names[2])
    members.leave(names[1] + "-restarted")


@pytest.fixture(scope="module")
def groups(broker: str) -> list[str]:
    create_topic(broker, TOPIC, PARTITIONS)
    produce(broker, TOPIC, [(None, b"order-%d" % i) for i in range(60)])
    names = []
    with JavaGroupMembers(broker) as members:
        for protocol in PROTOCOLS:
            names.append(f"analyze-{protocol}")
            _lifecycle(members, names[-1], protocol)
        names.append("analyze-static-range")
        _lifecycle(members, names[-1], "range", static=True)
    return names


def test_real_groups_raise_nothing_above_info(
    broker: str, groups: list[str], tmp_path: Path
) -> None:
    raw = dump_consumer_offsets(broker)
    assert raw, "nothing read from __consumer_offsets"
    from groupwatch.broker_client import broker_topics
    from groupwatch.detect import Analyzer, DetectorConfig
    from groupwatch.detect.decoded import decode_raw

    counts, names = broker_topics(broker)
    assert counts[TOPIC] == PARTITIONS
    assert TOPIC in names.values(), "the broker's metadata gave no topic ids"
    for config in (DetectorConfig(partitions_per_topic=counts), DetectorConfig()):
        analyzer = Analyzer(config)
        found = [f for line in raw for f in analyzer.feed(line)] + analyzer.finish()
        ours = [f for f in found if f.group in groups]
        serious = [
            f"{f.group} g{f.generation} {f.kind}: {f.detail}" for f in ours if f.severity != "info"
        ]
        assert serious == [], "\n".join(serious)
        for g in groups:
            state = analyzer.states.get(g)
            assert state is not None and state.last_generation is not None, g
            assert state.last_generation >= 5, f"{g}: too few rebalances captured"
    decoded = [decode_raw(line) for line in raw]
    assert {d.get("group") for d in decoded if d.get("record_type") == "group_metadata"} >= set(
        groups
    )


def test_analyze_command_on_a_broker_dump(
    broker: str, groups: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from groupwatch.cli import main

    dump = tmp_path / "offsets.jsonl"
    dump.write_text("".join(json.dumps(x) + "\n" for x in dump_consumer_offsets(broker)))
    assert main(["analyze", str(dump), "--bootstrap-server", broker]) == 0
    out, err = capsys.readouterr()
    found = [json.loads(line) for line in out.splitlines()]
    assert not [f for f in found if f["group"] in groups and f["severity"] != "info"]
    assert all(f"{s}: " in err for s in ("critical", "error", "warning", "info"))
