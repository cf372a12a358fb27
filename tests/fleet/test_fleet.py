"""Healthy groups of many real clients raise no alarm, in ``groupwatch analyze`` and in the job.

The fleet (``tests/fleet/fleet.py``) runs once per module on the test broker: Kafka's Java client
(classic eager and cooperative, and ``group.protocol=consumer``), librdkafka, kafka-python,
franz-go and a stateful Kafka Streams application, each group joining one member at a time,
losing one cleanly and restarting another.  ``__consumer_offsets`` is then dumped once and
analysed once, and the job runs once over the topic itself; each group gets its own verdict:
no warning, critical or error finding and no quarantine row.  Info findings are printed.

``GROUPWATCH_FLEET_DUMP=FILE`` keeps a copy of the dump (``groupwatch analyze`` input lines).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from groupwatch_dev.demo.traffic import create_topic, produce
from tests import verdicts
from tests.fleet.clients import Fleet
from tests.fleet.fleet import GROUPS, TOPICS, GroupSpec, Timeline, run_fleet
from tests.realgroups import dump_consumer_offsets, make_config, run_once

pytestmark = [pytest.mark.fleet, pytest.mark.broker]

by_group = pytest.mark.parametrize("spec", GROUPS, ids=lambda s: s.group)


@dataclass(frozen=True)
class FleetRun:
    # the bulky fields stay out of the repr pytest prints for a failing test's arguments
    timelines: dict[str, Timeline] = field(repr=False)
    dump: Path
    records: list[dict[str, Any]] = field(repr=False)
    seconds: float


@pytest.fixture(scope="module")
def fleet_run(broker: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetRun]:
    work = tmp_path_factory.mktemp("fleet")
    for topic, partitions in TOPICS.items():
        create_topic(broker, topic, partitions)
        # keyed records: the Streams application counts per key
        produce(broker, topic, [(b"k%d" % (i % 40), b"v%d" % i) for i in range(200)])
    started = time.monotonic()
    fleet = Fleet(broker, work)
    try:
        timelines = run_fleet(fleet)
    finally:
        fleet.close()
    seconds = time.monotonic() - started
    records = dump_consumer_offsets(broker)
    dump = verdicts.write_dump(records, work, "GROUPWATCH_FLEET_DUMP")
    print(f"\nfleet: {len(GROUPS)} groups lived in {seconds:.0f}s; dump: {dump}")
    for tl in timelines:
        verdicts.print_life(f"{tl.spec.group} ({tl.spec.client}, {tl.spec.assignor})", tl)
    yield FleetRun({tl.spec.group: tl for tl in timelines}, dump, records, seconds)


@pytest.fixture(scope="module")
def analyzed(fleet_run: FleetRun, broker: str) -> verdicts.Findings:
    """``groupwatch analyze DUMP --bootstrap-server BROKER``'s findings, per group."""
    return verdicts.analyze(fleet_run.dump, broker).findings


@pytest.fixture(scope="module")
def job_tables(
    fleet_run: FleetRun, broker: str, spark, tmp_path_factory: pytest.TempPathFactory
) -> verdicts.JobTables:  # type: ignore[no-untyped-def]
    """``groupwatch run --once`` on the broker's ``__consumer_offsets``, fresh tables."""
    cfg = make_config(broker, tmp_path_factory.mktemp("fleet-job"))
    run_once(spark, cfg)
    return verdicts.read_job_tables(spark, cfg)


def about(spec: GroupSpec) -> str:
    return f"{spec.client}, assignor {spec.assignor}"


def lived(fleet_run: FleetRun, spec: GroupSpec) -> str:
    """The group that lived ``spec``'s healthy life (its name, see ``Timeline.group``)."""
    tl = fleet_run.timelines[spec.group]
    assert tl.error is None, f"{spec.group} did not live its healthy life: {tl.error}"
    return tl.group


def group_records(fleet_run: FleetRun, group: str) -> int:
    """How many of the group's records (not offset commits, types 0 and 1) the dump holds."""
    from groupwatch.detect.decoded import decode_raw

    decoded = (decode_raw(r) for r in fleet_run.records)
    return sum(1 for d in decoded if d.get("group") == group and d["record_type_id"] not in (0, 1))


# -- verdicts, one per group -----------------------------------------------------------------
@by_group
def test_analyze_raises_nothing_above_info(
    spec: GroupSpec, fleet_run: FleetRun, analyzed: verdicts.Findings
) -> None:
    group = lived(fleet_run, spec)
    captured = group_records(fleet_run, group)
    assert captured >= 4, f"{group}: its rebalances were not captured ({captured} records)"
    verdicts.verdict(group, about(spec), analyzed.get(group, []), "groupwatch analyze")


@pytest.mark.spark
@by_group
def test_job_raises_nothing_above_info(
    spec: GroupSpec, fleet_run: FleetRun, job_tables: verdicts.JobTables
) -> None:
    group = lived(fleet_run, spec)
    verdicts.job_verdict(group, about(spec), job_tables)


@pytest.mark.spark
def test_job_quarantines_nothing_without_a_group(job_tables: verdicts.JobTables) -> None:
    """Quarantine rows whose key named no group (or an empty one) belong to no verdict above."""
    unattributed = job_tables.quarantine.get(None, [])
    assert not unattributed, "\n".join(verdicts.describe_quarantine(q) for q in unattributed[:20])
