"""A healthy share group of real consumers stays quiet, and its share lag is Admin's.

``groupwatch.share.HealthyShareRun`` on each of the project's brokers (``any_broker``, the
release's own ``KafkaShareConsumer``): three consumers join one by one while records arrive,
accepting everything they get; then the first leaves and the two others consume what follows.
After each round every record was delivered (the consumers' own count) and Admin
(``listShareGroupOffsets``) says where the group stands. ``analyze`` over both coordinators'
topics, and the job, raise nothing above info about the group; replayed up to each round, each
share partition's start offset and lag are Admin's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groupwatch.detect import Analyzer
from groupwatch.detect.share.state import ShareStateBook
from groupwatch.protocol.specs import SHARE_STATE_TOPIC
from tests.jvm import run_java
from tests.realgroups import decode_dumped, dump_topic

pytestmark = [pytest.mark.broker, pytest.mark.oracle]

GROUP = "share-healthy"
TOPIC = "share-healthy"
PARTITIONS = 3
PER_ROUND = 8  # records per partition in each of the four rounds


@pytest.fixture(scope="module")
def run(any_broker: tuple[str, str]) -> dict[str, Any]:
    version, broker = any_broker
    out = run_java(
        "groupwatch.share.HealthyShareRun",
        broker,
        GROUP,
        TOPIC,
        str(PARTITIONS),
        str(PER_ROUND),
        timeout=300,
        kafka_version=version,
    )
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {
        "broker": broker,
        "events": events,
        "steps": {e["step"]: e for e in events if e["event"] == "step"},
        "offsets_dump": dump_topic(broker, "__consumer_offsets"),
        "dump": dump_topic(broker, SHARE_STATE_TOPIC),
    }


def test_the_consumers_joined_and_left_and_got_every_record(run: dict[str, Any]) -> None:
    life = [(e["event"], e["member"]) for e in run["events"] if e["event"] in ("joined", "left")]
    assert life == [("joined", "a"), ("joined", "b"), ("joined", "c"), ("left", "a")]
    [done] = [e for e in run["events"] if e["event"] == "delivered"]
    assert done["records"] == done["produced"] == 4 * PARTITIONS * PER_ROUND
    assert sorted(run["steps"]) == ["round-1", "round-2", "round-3", "round-4"]


@pytest.mark.parametrize("step", ["round-1", "round-2", "round-3", "round-4"])
def test_start_offset_and_lag_equal_admins_after_each_round(run: dict[str, Any], step: str) -> None:
    ends = run["steps"][step]["state_end_offsets"]
    book = ShareStateBook()
    for line in run["dump"]:
        if line["offset"] < ends[str(line["partition"])]:
            book.add(decode_dumped(line))
    states = {s.key.partition: s for s in book.of_group(GROUP)}
    at = run["steps"][step]
    admin = {r["partition"]: r for r in at["admin"] if "start_offset" in r}
    assert set(admin) == set(states) == set(range(PARTITIONS)), (at["admin"], sorted(states))
    for part, row in admin.items():
        s = states[part]
        end = at["end_offsets"][str(part)]
        assert (s.start_offset, s.lag(end)) == (row["start_offset"], row["lag"]), (step, row)


def test_analyze_raises_nothing_above_info_about_the_group(run: dict[str, Any]) -> None:
    analyzer = Analyzer()
    lines = run["offsets_dump"] + run["dump"]
    found = [f for line in lines for f in analyzer.feed(line)] + analyzer.finish()
    assert [f.kind for f in found if f.group == GROUP and f.severity != "info"] == []
    # Its states were read: the silence is about the group, not an empty input.
    states = analyzer.share_states.of_group(GROUP)
    assert {s.key.partition for s in states} == set(range(PARTITIONS))


@pytest.mark.spark
def test_the_job_raises_nothing_above_info_and_keeps_each_partition(
    run: dict[str, Any], spark: Any, tmp_path: Path
) -> None:
    from tests.realgroups import make_config, run_once

    cfg = make_config(run["broker"], tmp_path, "validation.every_n_batches=0")
    run_once(spark, cfg)

    def rows(name: str) -> list[dict[str, Any]]:
        frame = spark.read.format("delta").load(cfg.table_path(name))
        return [r.asDict(recursive=True) for r in frame.collect()]

    assert [
        (f["kind"], f["detail"])
        for f in rows("findings")
        if f["group"] == GROUP and f["severity"] != "info"
    ] == []
    state = [r for r in rows("share_partition_state") if r["group"] == GROUP]
    assert sorted(r["partition"] for r in state) == list(range(PARTITIONS))
    last = run["steps"]["round-4"]
    admin = {r["partition"]: r for r in last["admin"]}
    for r in state:
        assert r["topic"] == TOPIC
        assert r["start_offset"] == admin[r["partition"]]["start_offset"]
        # The brokers' end offsets now: nothing was produced after the last round.
        assert r["lag_records"] == admin[r["partition"]]["lag"]
