"""KAFKA-20742 on the project's brokers: a partition added to a topic a share group consumes.

``groupwatch.share.AddedPartitionRun``: a share consumer (``share.auto.offset.reset`` latest,
the default) consumes a one-partition topic and leaves; the topic gets a second partition and
records are produced to it while the group has no member; a consumer joins again and consumes
what follows. The consumers' own deliveries are the ground truth: on 4.3.1 (before the fix) the
new partition starts at its end offset then and the records before it never reach the group;
4.4.0 (the fix) starts it at 0. ``analyze`` over both coordinators' topics must say exactly
that: ``share_new_partition_records_skipped`` naming the offsets the consumer never got where it
got none of them, nothing where it got them all -- and nothing for the first subscription,
which starts at the end as latest asks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from groupwatch.detect import Analyzer
from groupwatch.protocol.specs import SHARE_STATE_TOPIC
from tests.jvm import run_java
from tests.realgroups import dump_topic

pytestmark = [pytest.mark.broker, pytest.mark.oracle]

BEFORE = 6  # records on the new partition before a member initialises it
AFTER = 4


@pytest.fixture(scope="module")
def run(any_broker: tuple[str, str]) -> dict[str, Any]:
    version, broker = any_broker
    tag = version.replace(".", "")
    group, topic = f"added-{tag}", f"added-{tag}"
    out = run_java(
        "groupwatch.share.AddedPartitionRun",
        broker,
        group,
        topic,
        str(BEFORE),
        str(AFTER),
        timeout=240,
        kafka_version=version,
    )
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert events[-1]["event"] == "done"
    lines = dump_topic(broker, "__consumer_offsets") + dump_topic(broker, SHARE_STATE_TOPIC)
    analyzer = Analyzer()
    found = [f for line in lines for f in analyzer.feed(line)] + analyzer.finish()
    return {
        "version": version,
        "group": group,
        "topic": topic,
        "new_partition": sorted(
            e["offset"] for e in events if e["event"] == "delivery" and e["partition"] == 1
        ),
        "found": [f for f in found if f.group == group],
    }


def test_the_finding_names_exactly_the_records_the_group_never_got(run: dict[str, Any]) -> None:
    got = run["new_partition"]
    assert got, "the consumer got nothing from the new partition"
    skipped = [f for f in run["found"] if f.kind == "share_new_partition_records_skipped"]
    if got[0] == 0:
        assert skipped == [], [f.detail for f in skipped]
        assert got == list(range(BEFORE + AFTER))
        return
    [f] = skipped
    assert (f.topic, f.partition) == (run["topic"], 1)
    assert f.evidence["skipped_offsets"] == [0, got[0] - 1]
    assert got[0] == BEFORE  # the end offset when the group's member came back
    assert f"records 0-{BEFORE - 1} ({BEFORE}) were never delivered" in f.detail


def test_the_release_decides_which(run: dict[str, Any]) -> None:
    # The client's ground truth: 4.3.1's coordinator starts the new partition by latest, 4.4.0's
    # at 0 (KAFKA-20742's fix).
    first = run["new_partition"][0]
    assert first == (0 if run["version"] == "4.4.0" else BEFORE)


def test_nothing_else_above_info(run: dict[str, Any]) -> None:
    # The first subscription started at the end (latest, as asked): not a loss.
    serious = [
        f"{f.kind}: {f.detail}"
        for f in run["found"]
        if f.severity != "info" and f.kind != "share_new_partition_records_skipped"
    ]
    assert serious == []
