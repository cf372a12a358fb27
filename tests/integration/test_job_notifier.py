"""The job's built-in notifier, end to end: KAFKA-7026 replayed into a mirror topic fires its
alerts to a webhook, and the group's deletion later resolves them.

Both ways a batch is written reach the notifier: from the driver's Arrow rows (a small batch)
and through Spark (``delta.driver_write_rows=0``), where the rows are collected for it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from groupwatch import config
from groupwatch.notify import Notifier, NotifierConfig
from groupwatch.notify.routing import Webhook
from groupwatch_dev.demo.traffic import create_topic, replay
from groupwatch_dev.scenarios.builder import OFFSETS_PARTITIONS, load, raw_records, scenario_files
from tests.dashboard.receivers import receiver

pytestmark = [pytest.mark.broker, pytest.mark.spark]

GROUP = "kafka-7026"


def _scenario() -> dict[str, Any]:
    (path,) = [p for p in scenario_files() if p.stem == "kafka_7026"]
    return load(path)


def _run(spark, cfg: config.Config, notifier: Notifier) -> None:  # type: ignore[no-untyped-def]
    from groupwatch.spark.query import GroupwatchQuery

    job = GroupwatchQuery.from_config(spark, cfg, notifier=notifier)
    job.writer(once=True).start().awaitTermination(600)


def _alerts(bodies: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (a["labels"]["consumer_group"], a["labels"]["kind"], a["status"])
        for body in bodies
        for a in body["alerts"]
    }


@pytest.mark.parametrize("driver_rows", ["200000", "0"], ids=["driver-writes", "spark-writes"])
def test_alerts_fire_and_resolve_from_the_job(
    spark, broker: str, tmp_path: Path, driver_rows: str
) -> None:  # type: ignore[no-untyped-def]
    doc = _scenario()
    topic = f"notifier-mirror-{driver_rows}"
    create_topic(broker, topic, OFFSETS_PARTITIONS)
    cfg = config.load(
        None,
        env={},
        overrides=[
            f"source.bootstrap_servers={broker}",
            f"source.topic={topic}",
            f"delta.root={tmp_path / 'delta'}",
            f"checkpoint.root={tmp_path / 'checkpoints'}",
            "metrics.port=0",
            f"delta.driver_write_rows={driver_rows}",
            'detect.partitions={"test": 1}',
            "detect.partitions_since=always",  # the records are older than the job
        ],
    )
    # The one critical (C1-1's claim is inferred stale: a warning, not a claim overlap).
    kinds = {"assignment_overlap"}
    with receiver("ok") as r:
        hook = Webhook(r.url, timeout_seconds=2, retries=1)
        notifier = Notifier(NotifierConfig(webhooks=(hook,), log=False))
        replay(broker, topic, raw_records(doc))
        _run(spark, cfg, notifier)
        firing = {(GROUP, k, "firing") for k in kinds}
        assert _wait_for(r, firing) == firing

        # The group deleted: its snapshot (a tombstone, no finding) resolves what is open.
        deleted = {"partitions": doc["partitions"], "records": [{"tombstone": GROUP, "time": 80}]}
        replay(broker, topic, raw_records(deleted))
        _run(spark, cfg, notifier)
        assert notifier.close(timeout=10)
        assert _alerts(r.bodies) == firing | {(GROUP, k, "resolved") for k in kinds}


def _wait_for(r: Any, expected: set[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
    """The alerts received once they include ``expected`` (or after 20 s): delivery is
    asynchronous, and one batch's alerts may come in several bodies."""
    end = time.monotonic() + 20
    while not expected <= _alerts(r.bodies) and time.monotonic() < end:
        time.sleep(0.1)
    return _alerts(r.bodies)
