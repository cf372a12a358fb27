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

import contextlib
import io
import json
import os
import shutil
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from groupwatch_dev.demo.traffic import create_topic, produce
from tests.fleet.clients import Fleet
from tests.fleet.fleet import GROUPS, TOPICS, GroupSpec, Timeline, run_fleet
from tests.realgroups import dump_consumer_offsets, make_config, run_once, table

pytestmark = [pytest.mark.fleet, pytest.mark.broker]

ALARMS = ("critical", "error", "warning")
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
    dump = work / "consumer-offsets.jsonl"
    dump.write_text("".join(json.dumps(r) + "\n" for r in records))
    if os.environ.get("GROUPWATCH_FLEET_DUMP"):
        shutil.copyfile(dump, os.environ["GROUPWATCH_FLEET_DUMP"])
    print(f"\nfleet: {len(GROUPS)} groups lived in {seconds:.0f}s; dump: {dump}")
    for tl in timelines:
        print(f"  {tl.spec.group} ({tl.spec.client}, {tl.spec.assignor})")
        for event in tl.events:
            print(f"    {event}")
        if tl.error:
            print(f"    FAILED: {tl.error}")
    yield FleetRun({tl.spec.group: tl for tl in timelines}, dump, records, seconds)


@pytest.fixture(scope="module")
def analyzed(fleet_run: FleetRun, broker: str) -> dict[str, list[dict[str, Any]]]:
    """``groupwatch analyze DUMP --bootstrap-server BROKER``'s findings, per group."""
    from groupwatch.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["analyze", str(fleet_run.dump), "--bootstrap-server", broker])
    assert rc == 0, err.getvalue()
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in out.getvalue().splitlines():
        f = json.loads(line)
        found[f["group"]].append(f)
    return found


@dataclass(frozen=True)
class JobTables:
    findings: dict[str, list[dict[str, Any]]] = field(repr=False)
    quarantine: dict[str | None, list[dict[str, Any]]] = field(repr=False)


@pytest.fixture(scope="module")
def job_tables(
    fleet_run: FleetRun, broker: str, spark, tmp_path_factory: pytest.TempPathFactory
) -> JobTables:  # type: ignore[no-untyped-def]
    """``groupwatch run --once`` on the broker's ``__consumer_offsets``, fresh tables."""
    cfg = make_config(broker, tmp_path_factory.mktemp("fleet-job"))
    run_once(spark, cfg)
    findings: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in table(spark, cfg, "findings").collect():
        f = row.asDict()
        f["evidence"] = json.loads(f["evidence"]) if f["evidence"] else {}
        findings[f["group"]].append(f)
    quarantine: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    for row in table(spark, cfg, "quarantine").collect():
        q = row.asDict()
        quarantine[q["group"] or None].append(q)
    return JobTables(findings, quarantine)


# -- reporting -------------------------------------------------------------------------------
def _evidence(evidence: Mapping[str, Any], limit: int = 600) -> str:
    text = json.dumps(evidence, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


def describe(f: Mapping[str, Any]) -> str:
    return (
        f"{f['group']} g{f['generation']} {f['severity']} {f['kind']}: {f['detail']}\n"
        f"      evidence: {_evidence(f.get('evidence') or {})}"
    )


def describe_quarantine(q: Mapping[str, Any]) -> str:
    value = q.get("value")
    return (
        f"{q['group']} quarantined at {q['stage']}/{q['error_kind']} "
        f"{q['field_path']} byte {q['byte_offset']}: {q['message']} "
        f"(record {q['source_partition']}:{q['source_offset']}, "
        f"value {bytes(value).hex() if value is not None else None})"
    )


def verdict(spec: GroupSpec, findings: list[dict[str, Any]], what: str) -> None:
    info = [f for f in findings if f["severity"] == "info"]
    if info:
        print(f"\n{spec.group} ({spec.client}, {spec.assignor}): info findings of {what}:")
        for f in info:
            print("  " + describe(f))
    alarms = sorted(
        (f for f in findings if f["severity"] in ALARMS),
        key=lambda f: (f["generation"] if f["generation"] is not None else -1, f["kind"]),
    )
    assert not alarms, (
        f"{what} raised {len(alarms)} alarm(s) on the healthy group {spec.group} "
        f"({spec.client}, assignor {spec.assignor}):\n"
        + "\n".join("  " + describe(f) for f in alarms)
    )


def lived(fleet_run: FleetRun, spec: GroupSpec) -> None:
    tl = fleet_run.timelines[spec.group]
    assert tl.error is None, f"{spec.group} did not live its healthy life: {tl.error}"


def group_records(fleet_run: FleetRun, group: str) -> int:
    """How many of the group's records (not offset commits, types 0 and 1) the dump holds."""
    from groupwatch.detect.decoded import decode_raw

    decoded = (decode_raw(r) for r in fleet_run.records)
    return sum(1 for d in decoded if d.get("group") == group and d["record_type_id"] not in (0, 1))


# -- verdicts, one per group -----------------------------------------------------------------
@by_group
def test_analyze_raises_nothing_above_info(
    spec: GroupSpec, fleet_run: FleetRun, analyzed: dict[str, list[dict[str, Any]]]
) -> None:
    lived(fleet_run, spec)
    captured = group_records(fleet_run, spec.group)
    assert captured >= 4, f"{spec.group}: its rebalances were not captured ({captured} records)"
    verdict(spec, analyzed.get(spec.group, []), "groupwatch analyze")


@pytest.mark.spark
@by_group
def test_job_raises_nothing_above_info(
    spec: GroupSpec, fleet_run: FleetRun, job_tables: JobTables
) -> None:
    lived(fleet_run, spec)
    quarantined = job_tables.quarantine.get(spec.group, [])
    findings = job_tables.findings.get(spec.group, [])
    problems = []
    try:
        verdict(spec, findings, "groupwatch run --once")
    except AssertionError as exc:
        problems.append(str(exc))
    if quarantined:
        problems.append(
            f"groupwatch run --once quarantined {len(quarantined)} record(s) of {spec.group}:\n"
            + "\n".join("  " + describe_quarantine(q) for q in quarantined[:20])
        )
    assert not problems, "\n".join(problems)


@pytest.mark.spark
def test_job_quarantines_nothing_without_a_group(job_tables: JobTables) -> None:
    """Quarantine rows whose key named no group (or an empty one) belong to no verdict above."""
    unattributed = job_tables.quarantine.get(None, [])
    assert not unattributed, "\n".join(describe_quarantine(q) for q in unattributed[:20])
