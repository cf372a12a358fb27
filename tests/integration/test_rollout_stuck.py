"""A rollout on the real broker with Kafka's Java client: the old members stop, the group empties,
and the new release's members join.

* **A bad release** (``rollout-bad``): its assignor throws on every ``assign()``
  (``groupwatch.demo.ReleaseAssignor``), and the members, as an application that catches a
  failed poll, poll again: every round takes a generation and none completes.  While it lasts,
  ``analyze --bootstrap-server`` and the job (two runs: two looks) raise one ``rebalance_stuck``
  at the empty generation, naming the members the brokers list; after the members stop (one
  Empty record far above the first), the records alone raise the same finding (``analyze``),
  naming the generations skipped.
* **A healthy release** (``rollout-good``): its assignor takes 2 s, the members start one after
  another; their first generation completes: nothing above info, in either.
* **One lag verdict**: the old members of the bad release stopped while records kept arriving;
  the job's first poll raises the same ``consumer_stopped`` findings as ``analyze``, id for id.

Ground truth: the members' own output (each failed poll is a ``note``; the owners of the
partitions) and the brokers' answers (DescribeGroups; the records' generations).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from groupwatch_dev.demo.java_members import JavaGroupMembers
from groupwatch_dev.demo.traffic import create_topic, produce
from tests import verdicts
from tests.realgroups import dump_consumer_offsets, make_config, run_once, table

pytestmark = [pytest.mark.broker, pytest.mark.spark]

TOPIC = "rollout-orders"
BAD, GOOD = "rollout-bad", "rollout-good"
PARTITIONS = 3
STUCK_SECONDS = 4
STOP_SECONDS = 8
SETTINGS = (f"detect.stuck_after_seconds={STUCK_SECONDS}", f"lag.stop_seconds={STOP_SECONDS}")
NEW = ("new-1", "new-2", "new-3")


def _describe(broker: str, group: str) -> tuple[str, tuple[str, ...]]:
    from groupwatch.broker_client import describe_groups

    return describe_groups(broker, [group]).get(group, ("Dead", ()))


def _say(what: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {what}", flush=True)


def _wait(what: str, ok: Any, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _generations(lines: Sequence[dict[str, Any]], group: str) -> list[tuple[int, int]]:
    """(generation, member count) of each of ``group``'s group-metadata records, in order."""
    from groupwatch.detect.decoded import decode_raw

    out = []
    for line in lines:
        d = decode_raw(line)
        value = d.get("value")
        if d.get("group") == group and d.get("record_type") == "group_metadata" and value:
            out.append((value["generation"], len(value["members"])))
    return out


def _dump(broker: str, path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """``__consumer_offsets`` as it is now, written to ``path`` for ``analyze``."""
    lines = dump_consumer_offsets(broker)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path, lines


def _failed(host: JavaGroupMembers, group_members: Sequence[str]) -> int:
    return sum(1 for n in host.notes() if any(f" {m} poll failed" in n for m in group_members))


def _serious(found: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (f["kind"], f["detail"]) for f in found if f["severity"] in ("error", "critical", "warning")
    ]


class Rollout:
    """What the rollout showed, as it went."""

    def __init__(self, spark: Any, broker: str, host: JavaGroupMembers) -> None:
        self.spark, self.broker, self.host = spark, broker, host
        #: The bad group's empty generation, after the old members stopped.
        self.emptied_at = 0
        self.during: verdicts.Analysis | None = None
        #: The job's findings after its first run (its first lag poll) and its second.
        self.job_first: list[dict[str, Any]] = []
        self.job_during: list[dict[str, Any]] = []
        #: The brokers' answers about the bad group at the two looks.
        self.looks: list[tuple[str, tuple[str, ...]]] = []
        #: How many polls of the bad release's members failed (their own output).
        self.failed_rounds = 0


@pytest.fixture(scope="module")
def rollout(spark: Any, broker: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rollout]:
    work = tmp_path_factory.mktemp("rollout")
    create_topic(broker, TOPIC, PARTITIONS)
    produce(broker, TOPIC, [(b"k%d" % i, b"order-%d" % i) for i in range(30)])
    with JavaGroupMembers(broker) as host:
        r = Rollout(spark, broker, host)
        for group in (BAD, GOOD):
            names = [f"{group}-old-{i}" for i in (1, 2, 3)]
            for name in names:
                host.join(name, group, [TOPIC], "range")
            host.wait_covered(names, PARTITIONS)
        time.sleep(2.0)  # they fetch and commit what there is
        for group in (BAD, GOOD):
            for i in (1, 2, 3):
                host.leave(f"{group}-old-{i}")
        for group in (BAD, GOOD):
            _wait(f"{group} empty", lambda g=group: _describe(broker, g)[0] == "Empty")
        # Records keep arriving after the old members stopped.
        produce(broker, TOPIC, [(b"k%d" % i, b"late-%d" % i) for i in range(30)])
        r.emptied_at = _generations(dump_consumer_offsets(broker), BAD)[-1][0]
        bad = [f"{BAD}-{n}" for n in NEW]
        good = [f"{GOOD}-{n}" for n in NEW]
        for b, g in zip(bad, good, strict=True):
            host.join(b, BAD, [TOPIC], "range", release="fail")
            host.join(g, GOOD, [TOPIC], "range", release="delay:2000")
            time.sleep(0.7)
        host.wait_covered(good, PARTITIONS)
        _wait("the bad release failing round after round", lambda: _failed(host, bad) >= 10)
        commit_age = STOP_SECONDS + 1
        time.sleep(max(0.0, commit_age - 4.0))
        r.looks.append(_describe(broker, BAD))

        _say("while it lasts: analyze")
        # While it lasts: analyze, then the job (two runs, two looks).
        r.during = verdicts.analyze(_dump(broker, work / "during.jsonl")[0], broker, *SETTINGS)
        cfg = make_config(
            broker,
            work,
            "detect.stuck_check_seconds=1",
            "validation.every_n_batches=0",
            "lag.poll_seconds=1",
            *SETTINGS,
        )
        _say("the job's first run")
        run_once(spark, cfg)
        r.job_first = [row.asDict() for row in table(spark, cfg, "findings").collect()]
        time.sleep(STUCK_SECONDS + 0.5)
        r.looks.append(_describe(broker, BAD))
        produce(broker, TOPIC, [(b"tick", b"tick")])
        _tick(broker)
        _say("the job's second run")
        run_once(spark, cfg)
        r.job_during = [row.asDict() for row in table(spark, cfg, "findings").collect()]
        r.failed_rounds = _failed(host, bad)
        _say("the bad release stops")
        for b in bad:
            host.leave(b)
        _wait("the bad group empty again", lambda: _describe(broker, BAD)[0] == "Empty")
        yield r


def _tick(broker: str) -> None:
    """A commit of another group, so that a job run has a batch to look at the brokers in."""
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

    c = KafkaConsumer(bootstrap_servers=broker, group_id="rollout-ticker", enable_auto_commit=False)
    try:
        tp = TopicPartition(TOPIC, 0)
        c.assign([tp])
        c.commit({tp: OffsetAndMetadata(1, "", -1)})
    finally:
        c.close()


def _stuck(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in found if f["kind"] == "rebalance_stuck" and f["group"] == BAD]


def test_the_brokers_and_the_clients_show_a_rebalance_that_never_completes(
    rollout: Rollout,
) -> None:
    # Ground truth: the brokers said rebalancing with the three new members at both looks, the
    # members' leader failed round after round, and no generation was written meanwhile.
    for state, members in rollout.looks:
        assert state in ("PreparingRebalance", "CompletingRebalance"), rollout.looks
        assert len(members) == 3
    assert rollout.failed_rounds >= 10  # type: ignore[attr-defined]


def test_analyze_and_the_job_raise_it_while_it_lasts(rollout: Rollout) -> None:
    assert rollout.during is not None
    [f] = _stuck(rollout.during.findings[BAD])
    assert (f["generation"], f["severity"]) == (rollout.emptied_at, "error")
    assert f["evidence"]["confirmed_by"] == "brokers" and f["evidence"]["after_empty"]
    listed = " ".join(f["evidence"]["broker_members"])
    assert all(f"({BAD}-{n})" in listed for n in NEW), listed
    assert f["detail"].startswith("3 members joined at ")
    job = _stuck(rollout.job_during)
    assert [g["finding_id"] for g in job] == [f["finding_id"]], "analyze and the job disagree"


def test_the_records_after_raise_the_same_finding_with_the_generations_skipped(
    rollout: Rollout, tmp_path: Path
) -> None:
    dump, lines = _dump(rollout.broker, tmp_path / "after.jsonl")
    gens = _generations(lines, BAD)
    # The brokers wrote the empty generation, nothing for the failed rounds, then one more.
    assert gens[-2:] == [(rollout.emptied_at, 0), (gens[-1][0], 0)]
    last = gens[-1][0]
    skipped = last - rollout.emptied_at - 1
    assert skipped >= rollout.failed_rounds
    after = verdicts.analyze(dump, rollout.broker)
    [f] = _stuck(after.findings[BAD])
    assert f["evidence"]["confirmed_by"] == "skipped_generations"
    assert f["evidence"]["skipped_generations"]["count"] == skipped
    assert f"no generation completed in {skipped} attempts" in f["detail"]
    assert f"the group emptied again at generation {last}" in f["detail"]
    # The same finding as the looks' while it lasted (the job's too, checked above): a job
    # that reads these records raises it no second time (one finding id, docs/detection.md).
    during = _stuck(rollout.during.findings[BAD]) if rollout.during else []
    assert [g["finding_id"] for g in during] == [f["finding_id"]]


def test_a_healthy_rollout_is_quiet(rollout: Rollout) -> None:
    assert rollout.during is not None
    assert _serious(rollout.during.findings[GOOD]) == []
    assert [r for r in rollout.job_during if r["group"] == GOOD and r["severity"] != "info"] == []


def test_the_jobs_first_poll_and_analyze_agree_on_the_stopped_group(rollout: Rollout) -> None:
    assert rollout.during is not None
    lag = ("consumer_stopped", "consumer_stalled", "offset_rewound", "consumer_lagging")

    def key(f: dict[str, Any]) -> tuple[Any, ...]:
        # The detail names how long ago the commit was at each one's look: not compared.
        return (f["kind"], f["topic"], f["partition"], f["member"], f["finding_id"])

    ours = sorted(key(f) for f in rollout.during.findings[BAD] if f["kind"] in lag)
    job = sorted(key(r) for r in rollout.job_first if r["group"] == BAD and r["kind"] in lag)
    # The old members stopped with records waiting on every partition.
    assert len(ours) == PARTITIONS, rollout.during.findings[BAD]
    assert job == ours
