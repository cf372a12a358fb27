"""The scenario library through the job with its tables and checkpoint on the S3 server: every
table equals, row for row, that of the same run on this machine's file system.

On S3 every commit to the job's tables goes through Spark (docs/deploy.md, "Tables on S3": one
library per table on object storage); the local run is configured the same way, so the two
runs differ in where they write and nothing else."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupwatch import config
from groupwatch.delta.read import DeltaStore
from groupwatch.tables import POLLED_TABLES, TABLES
from groupwatch_dev.demo.traffic import create_topic, replay
from groupwatch_dev.scenarios.builder import OFFSETS_PARTITIONS, load, scenario_files
from tests.integration.test_job_scenarios import mirror_records, namespaced
from tests.realgroups import run_once
from tests.s3.server import S3Server
from tests.s3.spark_conf import hadoop_on_s3

pytestmark = [pytest.mark.broker, pytest.mark.spark]

MIRROR = "s3-scenario-mirror"
BUCKET = "gw-job"
#: Columns holding when the job ran, not what it read.
WALL_CLOCK = {"detected_at", "quarantined_at", "validated_at"}


@pytest.fixture(scope="module")
def counts(broker: str) -> dict[str, int]:
    docs = {p.stem: namespaced(load(p), f"{p.stem}.") for p in scenario_files()}
    create_topic(broker, MIRROR, OFFSETS_PARTITIONS)
    replay(broker, MIRROR, mirror_records(docs))
    return {t: n for doc in docs.values() for t, n in (doc.get("partitions") or {}).items()}


def _settings(broker: str, counts: dict[str, int]) -> list[str]:
    return [
        f"source.bootstrap_servers={broker}",
        f"source.topic={MIRROR}",
        "source.max_offsets_per_trigger=400",
        "metrics.port=0",
        "validation.every_n_batches=0",
        "alerts.rules=",
        f"detect.partitions={json.dumps(counts)}",
        "detect.partitions_since=always",
        # The local run as the S3 one is bound to be: every commit by Spark.
        "delta.driver_write_rows=0",
        "job.driver_stage_rows=0",
    ]


@pytest.fixture(scope="module")
def on_s3(spark: Any, s3: S3Server, broker: str, counts: dict[str, int]) -> Iterator[config.Config]:
    yield from hadoop_on_s3(spark, s3, BUCKET, *_settings(broker, counts))


def _rows(store: DeltaStore, name: str) -> list[dict[str, Any]]:
    if store.version(name) is None:
        return []
    rows = store.open_table(name).to_pyarrow_table().to_pylist()
    for row in rows:
        for column in WALL_CLOCK & row.keys():
            row.pop(column)
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=repr))


def test_the_job_on_s3_writes_what_it_writes_locally(
    spark: Any,
    s3: S3Server,
    broker: str,
    counts: dict[str, int],
    on_s3: config.Config,
    tmp_path: Path,
) -> None:
    local = config.load(
        None,
        env={},
        overrides=[
            *_settings(broker, counts),
            f"delta.root={tmp_path / 'delta'}",
            f"checkpoint.root={tmp_path / 'checkpoints'}",
        ],
    )
    run_once(spark, local)
    run_once(spark, on_s3)
    assert (s3.data / BUCKET / "groupwatch/checkpoints").is_dir()
    here, there = DeltaStore(local.delta.root), DeltaStore(on_s3.delta.root, on_s3.storage)
    compared = 0
    for name in sorted(set(TABLES) - set(POLLED_TABLES)):
        expected, actual = _rows(here, name), _rows(there, name)
        assert len(actual) == len(expected), name
        assert actual == expected, name
        compared += bool(expected)
    assert _rows(here, "findings") and _rows(here, "quarantine")
    assert compared >= 6
