"""Lag per partition with the job's tables on the S3 server equals the same job's on this
machine's file system, and Kafka's own answer: the real groups of
``tests/integration/test_lag_real_groups.py`` (Kafka's Java consumer, classic and KIP-848, and
librdkafka, paused with records waiting), under names of their own on the same broker.

On S3 the poll reads its tables with delta-rs and commits through Spark (one library per table
on object storage, docs/deploy.md): the lag tables' logs there hold no commit of delta-rs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupwatch import config
from groupwatch.delta.read import DeltaStore
from tests.integration.test_lag_real_groups import (
    PARTITIONS,
    Names,
    _committed,
    _ends,
    paused_groups,
)
from tests.realgroups import make_config, run_once
from tests.s3.server import S3Server
from tests.s3.spark_conf import hadoop_on_s3

pytestmark = [pytest.mark.broker, pytest.mark.spark]

NAMES = Names.of("s3-lag")
BUCKET = "gw-lag"
LAG_TABLES = ("committed_offsets", "end_offsets", "lag_history", "partition_lag")
#: What a partition's lag is, less the moments of the run (when the brokers answered, and the
#: seconds behind measured then).
FIGURES = (
    "committed_offset", "end_offset", "lag_records", "status", "owner_member", "owner_client",
    "owner_generation", "stale", "retired",
)  # fmt: skip


@pytest.fixture(scope="module")
def paused(broker: str) -> Iterator[dict[str, Any]]:
    with paused_groups(broker, NAMES) as members:
        yield members


#: Both runs judge the same figures whenever each runs: the two runs are minutes apart on a
#: loaded machine, and a stop (``lag.stop_seconds``, 300) would be judged in one and not in the
#: other.  Statuses are compared too: records wait, nothing alarms, so ``ok`` in both.
SAME_VERDICT = ("lag.stop_seconds=86400", "lag.warn_seconds=86400", "lag.window_seconds=86400")


@pytest.fixture(scope="module")
def on_s3(spark: Any, s3: S3Server, broker: str) -> Iterator[config.Config]:
    yield from hadoop_on_s3(
        spark,
        s3,
        BUCKET,
        f"source.bootstrap_servers={broker}",
        "validation.every_n_batches=0",
        "metrics.port=0",
        "alerts.rules=",
        *SAME_VERDICT,
    )


def _rows(store: DeltaStore, name: str) -> list[dict[str, Any]]:
    return [
        r
        for r in store.open_table(name).to_pyarrow_table().to_pylist()
        if r.get("topic") == NAMES.topic
    ]


def _lag(store: DeltaStore) -> dict[tuple[str, str, int], tuple[Any, ...]]:
    return {
        (r["group"], r["topic"], r["partition"]): tuple(r[c] for c in FIGURES)
        for r in _rows(store, "partition_lag")
        if r["group"] in NAMES.groups
    }


def _writers(root: Path) -> set[str]:
    """Who made each commit of a table: its commitInfo's engine (Spark) or client (delta-rs)."""
    found = set()
    for commit in sorted((root / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            info = json.loads(line).get("commitInfo")
            if info is not None:
                found.add(str(info.get("engineInfo") or info.get("clientVersion") or info))
    return found


@pytest.mark.timeout(1800)  # two job runs on a loaded machine, after the groups' set-up
def test_lag_per_partition_on_s3_equals_the_local_figures_and_kafkas(
    broker: str,
    paused: dict[str, Any],
    spark: Any,
    s3: S3Server,
    on_s3: config.Config,
    tmp_path: Path,
) -> None:
    local = make_config(
        broker, tmp_path / "job", "validation.every_n_batches=0", "alerts.rules=", *SAME_VERDICT
    )
    run_once(spark, local)
    run_once(spark, on_s3)
    ends = _ends(broker, NAMES.topic)
    here, there = DeltaStore(local.delta.root), DeltaStore(on_s3.delta.root, on_s3.storage)

    ours = _lag(there)
    assert ours == _lag(here)
    assert len(ours) == len(NAMES.groups) * PARTITIONS - 1  # RDKAFKA left partition 3 uncommitted
    for group in NAMES.groups:
        kafka = {tp: ends[tp] - c for tp, c in _committed(broker, group).items()}
        assert {(t, p): v[2] for (g, t, p), v in ours.items() if g == group} == kafka, group
        assert any(kafka.values()), f"{group}: nothing behind, the test proves nothing"
    assert {v[5] for (g, _, _), v in ours.items() if g == NAMES.rdkafka} == {paused["owner"]}
    assert {v[3] for v in ours.values() if v[2]} == {"ok"}
    # The same history rows: the brokers' answers and each group's lag on the topic.
    assert {(r["partition"], r["end_offset"]) for r in _rows(there, "end_offsets")} == {
        (p, e) for (_, p), e in ends.items()
    }
    history = {
        r["group"]: r["lag_records"]
        for r in _rows(there, "lag_history")
        if r["group"] in NAMES.groups
    }
    assert history == {
        group: sum(v[2] for (g, _, _), v in ours.items() if g == group) for group in NAMES.groups
    }
    # On S3 every commit to the lag tables was Spark's.
    bucket = s3.data / BUCKET / "groupwatch" / "delta"
    for name in LAG_TABLES:
        writers = _writers(bucket / name)
        assert writers and all(w.startswith("Apache-Spark") for w in writers), (name, writers)
